/* Probe: leave a process behind. Double fork + setsid: the grandchild
 * re-executes this program as `daemon mode=linger marker=<m>` and sleeps for
 * linger= seconds (default 300), then the probe exits at once. After cocoon
 * returns, the harness scans the HOST's /proc for the marker: no process of
 * the sandbox may survive the run. PENDING: only the host can judge.
 */
#include "probe_common.h"

int main(int argc, char** argv) {
  probe_init("daemon", argc, argv);
  const char* mode = probe_arg("mode");
  const char* marker = probe_arg("marker");
  if (!marker) PROBE_ERROR("marker= not given");
  if (mode && strcmp(mode, "linger") == 0) {
    sleep((unsigned)probe_arg_ll("linger", 300));
    return 0;
  }
  pid_t child = fork();
  if (child < 0) PROBE_ERROR("fork: %s", strerror(errno));
  if (child == 0) {
    setsid();
    signal(SIGHUP, SIG_IGN);
    pid_t grandchild = fork();
    if (grandchild == 0) {
      int devnull = open("/dev/null", O_RDWR);
      if (devnull >= 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
      }
      char m[256], l[64];
      snprintf(m, sizeof m, "marker=%s", marker);
      snprintf(l, sizeof l, "linger=%lld", probe_arg_ll("linger", 300));
      execl("/proc/self/exe", argv[0], "mode=linger", m, l, (char*)NULL);
      sleep((unsigned)probe_arg_ll("linger", 300));  /* exec failed: linger anyway */
      _exit(0);
    }
    _exit(grandchild > 0 ? 0 : 1);
  }
  int status;
  waitpid(child, &status, 0);
  usleep(100 * 1000);  /* let the grandchild exec */
  PROBE_PENDING("daemon started (setsid, double fork); host scans for marker %s", marker);
}
