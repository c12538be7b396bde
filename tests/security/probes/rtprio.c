/* Probe: take real-time priority (a SCHED_FIFO spinner starves the host's
 * CPUs) or raise its nice value. RLIMIT_RTPRIO must be 0 (soft and hard),
 * and sched_setscheduler(SCHED_FIFO / SCHED_RR) and setpriority(-10) fail.
 */
#include "probe_common.h"

#include <sched.h>
#include <sys/resource.h>

static long attempt(void* arg) {
  int policy = *(int*)arg;
  if (policy < 0) return setpriority(PRIO_PROCESS, 0, -10);
  struct sched_param sp = {.sched_priority = 1};
  return sched_setscheduler(0, policy, &sp);
}

int main(int argc, char** argv) {
  probe_init("rtprio", argc, argv);
  struct rlimit rl;
  if (getrlimit(RLIMIT_RTPRIO, &rl) != 0) PROBE_ERROR("getrlimit: %s", strerror(errno));
  if (rl.rlim_cur != 0 || rl.rlim_max != 0)
    PROBE_ESCAPED("RLIMIT_RTPRIO is %llu/%llu", (unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max);
  int policies[] = {SCHED_FIFO, SCHED_RR, -1};
  const char* names[] = {"SCHED_FIFO", "SCHED_RR", "nice -10"};
  char report[512] = "RLIMIT_RTPRIO 0/0";
  char why[128];
  for (int i = 0; i < 3; ++i) {
    struct probe_attempt_result r = probe_attempt(attempt, &policies[i]);
    if (probe_succeeded(&r)) PROBE_ESCAPED("%s succeeded", names[i]);
    size_t used = strlen(report);
    snprintf(report + used, sizeof report - used, "; %s: %s", names[i], probe_describe_failure(&r, why, sizeof why));
  }
  PROBE_BLOCKED("%s", report);
}
