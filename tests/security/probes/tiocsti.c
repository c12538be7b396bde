/* Probe: push characters into a terminal's input queue with TIOCSTI
 * (bubblewrap CVE-2017-5226: a sandbox sharing the caller's terminal types
 * commands into the caller's shell). The harness gives cocoon a pty as its
 * stdin and controlling terminal and checks the pty for the marker. Tried on:
 * fds 0-2, /dev/tty, and a fresh pty from /dev/ptmx made our controlling
 * terminal. Any ioctl that succeeds is an escape (strict filters TIOCSTI).
 */
#include "probe_common.h"

#include <sys/ioctl.h>
#include <termios.h>

static int g_fd;

static long attempt(void* arg) {
  (void)arg;
  const char* marker = "#cocoon-tiocsti\n";
  for (const char* p = marker; *p; ++p)
    if (ioctl(g_fd, TIOCSTI, p) != 0) return -1;
  return 0;
}

static long attempt_own_pty(void* arg) {
  (void)arg;
  int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (master < 0) return -100 - errno;
  if (grantpt(master) != 0 || unlockpt(master) != 0) return -100 - errno;
  const char* name = ptsname(master);
  if (!name) return -100 - errno;
  setsid();
  int slave = open(name, O_RDWR | O_CLOEXEC);
  if (slave < 0) return -100 - errno;
  ioctl(slave, TIOCSCTTY, 0);
  char c = 'x';
  return ioctl(slave, TIOCSTI, &c);
}

int main(int argc, char** argv) {
  probe_init("tiocsti", argc, argv);
  char report[2048] = "";
  char why[160];
  for (int fd = 0; fd <= 3; ++fd) {
    const char* label;
    char name[32];
    if (fd < 3) {
      g_fd = fd;
      snprintf(name, sizeof name, "fd %d", fd);
      label = name;
    } else {
      g_fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
      label = "/dev/tty";
      if (g_fd < 0) {
        size_t used = strlen(report);
        snprintf(report + used, sizeof report - used, "; /dev/tty: open %s", strerrorname_np(errno));
        continue;
      }
    }
    struct probe_attempt_result r = probe_attempt(attempt, NULL);
    if (probe_succeeded(&r)) PROBE_ESCAPED("TIOCSTI on %s succeeded", label);
    size_t used = strlen(report);
    snprintf(report + used, sizeof report - used, "%s%s: %s", used ? "; " : "", label,
             probe_describe_failure(&r, why, sizeof why));
  }
  struct probe_attempt_result r = probe_attempt(attempt_own_pty, NULL);
  if (probe_succeeded(&r)) PROBE_ESCAPED("TIOCSTI on a fresh /dev/ptmx pty succeeded (not filtered)");
  size_t used = strlen(report);
  if (r.ran && r.ret <= -100)
    snprintf(report + used, sizeof report - used, "; ptmx: setup %s", strerrorname_np((int)(-100 - r.ret)));
  else
    snprintf(report + used, sizeof report - used, "; ptmx: %s", probe_describe_failure(&r, why, sizeof why));
  PROBE_BLOCKED("%s", report);
}
