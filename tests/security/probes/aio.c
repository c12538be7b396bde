/* Probe: reserve kernel AIO events with io_setup(2). The reservation is
 * counted against fs.aio-max-nr, ONE host-wide counter (not per user, not
 * per namespace): a review reserved 65536 events in 2 contexts from a
 * sandbox, and every host process's io_setup, root's included, failed with
 * EAGAIN for the whole run. strict refuses the whole @aio group with
 * ENOSYS, what a kernel built without AIO answers (glibc's POSIX aio uses
 * threads and is unaffected; libaio users fall back or fail cleanly).
 * Only 1 event is asked for (and released at once if granted), so the probe
 * run unconfined does not hurt the host. A context created is an escape; a
 * refusal other than ENOSYS means the policy did not answer, and is an
 * error.
 */
#include "probe_common.h"

#include <linux/aio_abi.h>

static long aio_setup(void* arg) {
  (void)arg;
  aio_context_t ctx = 0;
  long r = syscall(SYS_io_setup, 1, &ctx);
  if (r == 0) syscall(SYS_io_destroy, ctx);
  return r;
}

int main(int argc, char** argv) {
  probe_init("aio", argc, argv);
  struct probe_attempt_result r = probe_attempt(aio_setup, NULL);
  char why[160];
  if (probe_succeeded(&r))
    PROBE_ESCAPED("io_setup(1) succeeded: the sandbox can reserve the host-wide fs.aio-max-nr");
  if (!r.ran || r.err != ENOSYS)
    PROBE_ERROR("io_setup: expected ENOSYS from strict's @aio denial, got %s",
                probe_describe_failure(&r, why, sizeof why));
  PROBE_BLOCKED("io_setup: ENOSYS");
}
