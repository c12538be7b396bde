/* Probe: never finish. Spins on the CPU (op=spin, default) or sleeps
 * (op=sleep); the wall-clock timeout must kill the whole sandbox. It never
 * prints a verdict: the harness judges from timed_out / exit status 124.
 */
#include "probe_common.h"

int main(int argc, char** argv) {
  probe_init("infinite_loop", argc, argv);
  printf("PROBE %s RUNNING\n", g_probe_name);
  fflush(stdout);
  if (strcmp(probe_op(), "sleep") == 0)
    for (;;) pause();
  volatile unsigned long spin = 0;
  for (;;) ++spin;
}
