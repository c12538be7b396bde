/* Probe: signal a host process. The harness spawns a `sleep` on the host (as
 * the same uid cocoon runs as, so only the sandbox stands in the way) and
 * passes its pid as target=. In a new pid namespace that number is either
 * unused or names a sandbox process; the harness checks afterwards that the
 * host sleep is alive. Guarded: never attempted in the host's pid namespace.
 */
#include "probe_common.h"

int main(int argc, char** argv) {
  probe_init("kill_host", argc, argv);
  probe_require_sandbox(kNsPid);
  pid_t target = (pid_t)probe_arg_ll("target", 0);
  if (target <= 1) PROBE_ERROR("target= (a host pid) not given");
  char path[64], comm[64] = "";
  snprintf(path, sizeof path, "/proc/%d/comm", (int)target);
  int visible = probe_read_file(path, comm, sizeof comm) >= 0;
  int r0 = kill(target, 0);
  int e0 = errno;
  int r = kill(target, SIGKILL);
  int e = errno;
  if (r == 0 && visible && strncmp(comm, "sleep", 5) == 0)
    PROBE_ESCAPED("SIGKILL delivered to pid %d (comm %s)", (int)target, comm);
  if (r == 0)
    PROBE_PENDING("kill(%d) returned 0 (pid is %s inside); host must confirm its sleep lives",
                  (int)target, visible ? "a sandbox process" : "not in /proc");
  PROBE_PENDING("kill(%d,0): %s; kill(%d,SIGKILL): %s", (int)target, r0 ? strerrorname_np(e0) : "ok",
                (int)target, strerrorname_np(e));
}
