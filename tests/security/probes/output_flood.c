/* Probe: flood stdout with mib= (default 1024) MiB of byte= (default 'A',
 * in lines of 64; byte=0 writes NULs, which JSON escapes to six characters
 * each). The supervisor must keep
 * draining (no deadlock), cap what it keeps, mark the Outcome truncated, and
 * keep its own memory bounded: the harness checks stdout_truncated, the size
 * of the captured stdout, and cocoon's max RSS from wait4(2). The verdict goes
 * to stderr, since stdout is the flood. PENDING: only the host can judge.
 */
#include "probe_common.h"

int main(int argc, char** argv) {
  probe_init("output_flood", argc, argv);
  probe_verdict_to_stderr();
  signal(SIGPIPE, SIG_IGN);
  long mib = (long)probe_arg_ll("mib", 1024);
  long byte = (long)probe_arg_ll("byte", 'A');
  static char chunk[1 << 20];
  memset(chunk, (int)byte, sizeof chunk);
  if (byte != 0) {
    for (size_t i = 63; i < sizeof chunk; i += 64) chunk[i] = '\n';
  }
  long long total = 0;
  for (long i = 0; i < mib; ++i) {
    size_t off = 0;
    while (off < sizeof chunk) {
      ssize_t n = write(1, chunk + off, sizeof chunk - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) PROBE_PENDING("stdout write failed after %lld bytes: %s", total, strerrorname_np(errno));
      off += (size_t)n;
      total += n;
    }
  }
  PROBE_PENDING("wrote %lld bytes to stdout", total);
}
