/* Probe: exhaust the process table. A bounded bomb (so that a broken sandbox
 * does not take the shared machine down): fork up to max= (default 4096)
 * children that sleep; the process limit must stop it first with EAGAIN, or
 * the sandbox must be killed. Children are reaped before the verdict.
 */
#include "probe_common.h"

int main(int argc, char** argv) {
  probe_init("fork_bomb", argc, argv);
  long max = (long)probe_arg_ll("max", 4096);
  pid_t* kids = calloc((size_t)max, sizeof *kids);
  if (!kids) PROBE_ERROR("calloc");
  long n = 0;
  int err = 0;
  for (; n < max; ++n) {
    pid_t pid = fork();
    if (pid < 0) {
      err = errno;
      break;
    }
    if (pid == 0) {
      sleep(120);
      _exit(0);
    }
    kids[n] = pid;
  }
  for (long i = 0; i < n; ++i) kill(kids[i], SIGKILL);
  for (long i = 0; i < n; ++i) waitpid(kids[i], NULL, 0);
  if (n >= max) PROBE_ESCAPED("forked all %ld processes without hitting a limit", n);
  PROBE_BLOCKED("fork failed after %ld children: %s", n, strerrorname_np(err));
}
