/* Probe: use a file descriptor leaked from the host (runc CVE-2024-21626: a
 * leaked directory fd lets the sandbox walk the host's tree with openat). The
 * harness opens fds without O_CLOEXEC before starting cocoon; every fd from 3
 * to 1023 must be closed here. Checked first thing, before we open anything.
 */
#include "probe_common.h"

int main(int argc, char** argv) {
  int open_fds[32];
  int n = 0;
  for (int fd = 3; fd < 1024 && n < 32; ++fd)
    if (fcntl(fd, F_GETFD) != -1) open_fds[n++] = fd;
  probe_init("fd_leak", argc, argv);
  if (n == 0) PROBE_BLOCKED("fds 3..1023 are all closed");
  char report[2048] = "";
  for (int i = 0; i < n; ++i) {
    char link[64], target[512];
    snprintf(link, sizeof link, "/proc/self/fd/%d", open_fds[i]);
    ssize_t len = readlink(link, target, sizeof target - 1);
    target[len > 0 ? len : 0] = '\0';
    size_t used = strlen(report);
    snprintf(report + used, sizeof report - used, "%s%d->%s", used ? ", " : "", open_fds[i], target);
  }
  PROBE_ESCAPED("open fds above stdio: %s", report);
}
