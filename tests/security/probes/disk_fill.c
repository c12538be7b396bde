/* Probe: fill the work dir beyond its quota. Writes /work/fill in 1 MiB
 * chunks up to max_mib= (the harness passes the policy's quota plus a
 * margin); ENOSPC / EFBIG / EDQUOT (or SIGXFSZ, which we ignore so that the
 * write returns EFBIG) must stop it first.
 */
#include "probe_common.h"

int main(int argc, char** argv) {
  probe_init("disk_fill", argc, argv);
  signal(SIGXFSZ, SIG_IGN);
  long max_mib = (long)probe_arg_ll("max_mib", 2048);
  const char* path = probe_arg("path");
  if (!path) path = "/work/fill";
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) PROBE_BLOCKED("cannot create %s: %s", path, strerrorname_np(errno));
  static char chunk[1 << 20];
  memset(chunk, 'F', sizeof chunk);
  long long total = 0;
  for (long i = 0; i < max_mib; ++i) {
    size_t off = 0;
    while (off < sizeof chunk) {
      ssize_t n = write(fd, chunk + off, sizeof chunk - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        int err = n < 0 ? errno : ENOSPC;
        close(fd);
        unlink(path);  /* leave nothing big to commit */
        PROBE_BLOCKED("write failed after %lld bytes: %s", total, strerrorname_np(err));
      }
      off += (size_t)n;
      total += n;
    }
  }
  close(fd);
  unlink(path);
  PROBE_ESCAPED("wrote %lld bytes (%ld MiB) without hitting the quota", total, max_mib);
}
