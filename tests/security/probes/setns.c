/* Probe: join another namespace through /proc/1/ns/<ns> (and the sandbox's
 * own /proc/self/ns/<ns>). Inside a correct sandbox /proc/1 is the sandbox's
 * init, and setns(2) is denied anyway (it needs CAP_SYS_ADMIN, and seccomp
 * denies it). Any successful setns is reported as an escape.
 */
#include "probe_common.h"

#include <sched.h>

static const char* g_path;

static long attempt(void* arg) {
  (void)arg;
  int fd = open(g_path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -100 - errno;  /* could not even open it */
  return setns(fd, 0);
}

int main(int argc, char** argv) {
  probe_init("setns", argc, argv);
  static const char* kNs[] = {"mnt", "pid", "net", "user", "uts", "ipc", "cgroup", "time"};
  char report[2048] = "";
  int opened = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t i = 0; i < sizeof kNs / sizeof kNs[0]; ++i) {
      char path[64];
      snprintf(path, sizeof path, "/proc/%s/ns/%s", pass ? "self" : "1", kNs[i]);
      g_path = path;
      struct probe_attempt_result r = probe_attempt(attempt, NULL);
      if (probe_succeeded(&r)) PROBE_ESCAPED("setns(%s) succeeded", path);
      size_t used = strlen(report);
      if (r.ran && r.ret <= -100) {
        snprintf(report + used, sizeof report - used, "%s%s: open %s", used ? "; " : "", path,
                 strerrorname_np((int)(-100 - r.ret)));
        continue;
      }
      ++opened;
      char why[128];
      snprintf(report + used, sizeof report - used, "%s%s: %s", used ? "; " : "", path,
               probe_describe_failure(&r, why, sizeof why));
    }
  }
  (void)opened;  /* not opening /proc/N/ns at all also blocks the escape */
  PROBE_BLOCKED("%s", report);
}
