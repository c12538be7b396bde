/* Probe: take a file lease with fcntl(F_SETLEASE). Rootless, the sandbox owns
 * the caller's files and a read lease needs only a read-only fd; while the
 * sandbox holds one, every host process (root included) that opens the file
 * for writing blocks for up to lease-break-time (45 s by default), and SIGIO
 * tells the sandbox who tried: a stall of host writers and a side channel.
 * Every Cocoon filter refuses F_SETLEASE with EPERM (the seccomp prologue,
 * compiler/backends/seccomp/effective_rules.h). Tried on a file the probe
 * creates in dir= (default: its own directory, the work dir /work, which the
 * host shares): through
 * glibc's fcntl, and as a raw syscall with junk in the upper half of the cmd
 * (an int: the kernel drops the upper half, so the filter must too). A lease
 * taken is an escape; a refusal other than EPERM means the filter did not
 * answer, and is an error.
 */
#include "probe_common.h"

#include <libgen.h>

static char g_path[4096];

static long lease_via_libc(void* arg) {
  (void)arg;
  int fd = open(g_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -100 - errno;
  return fcntl(fd, F_SETLEASE, F_RDLCK);
}

static long lease_raw_upper_bits(void* arg) {
  (void)arg;
  int fd = open(g_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -100 - errno;
  return syscall(SYS_fcntl, fd, 0xdead00000000UL | F_SETLEASE, F_RDLCK);
}

int main(int argc, char** argv) {
  probe_init("lease", argc, argv);
  char self[4096];
  snprintf(self, sizeof self, "%s", argv[0]);
  const char* dir = probe_arg("dir");
  snprintf(g_path, sizeof g_path, "%s/lease_target.txt", dir ? dir : dirname(self));
  int fd = open(g_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) PROBE_ERROR("cannot create %s: %s", g_path, strerrorname_np(errno));
  if (write(fd, "lease\n", 6) != 6) PROBE_ERROR("cannot write %s: %s", g_path, strerrorname_np(errno));
  close(fd);  /* a read lease needs the file open for writing nowhere */
  /* fcntl itself stays usable: only the lease command is refused. */
  fd = open(g_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || fcntl(fd, F_GETFL) < 0 || fcntl(fd, F_SETFL, O_NONBLOCK) != 0)
    PROBE_ERROR("fcntl F_GETFL/F_SETFL on %s failed: %s", g_path, strerrorname_np(errno));
  close(fd);

  static const struct {
    const char* label;
    probe_attempt_fn fn;
  } attempts[] = {{"fcntl(F_SETLEASE, F_RDLCK)", lease_via_libc},
                  {"raw fcntl(0xdead00000000|F_SETLEASE, F_RDLCK)", lease_raw_upper_bits}};
  char report[1024] = "";
  char why[160];
  for (size_t i = 0; i < sizeof attempts / sizeof attempts[0]; ++i) {
    struct probe_attempt_result r = probe_attempt(attempts[i].fn, NULL);
    if (probe_succeeded(&r)) PROBE_ESCAPED("%s on %s succeeded: host writers would stall", attempts[i].label, g_path);
    if (r.ran && r.ret <= -100) PROBE_ERROR("cannot reopen %s: %s", g_path, strerrorname_np((int)(-100 - r.ret)));
    if (!r.ran || r.err != EPERM)
      PROBE_ERROR("%s: expected EPERM from the seccomp prologue, got %s", attempts[i].label,
                  probe_describe_failure(&r, why, sizeof why));
    size_t used = strlen(report);
    snprintf(report + used, sizeof report - used, "%s%s: EPERM", used ? "; " : "", attempts[i].label);
  }
  PROBE_BLOCKED("%s", report);
}
