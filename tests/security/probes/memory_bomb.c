/* Probe: allocate and touch more memory than the policy allows (mib=, default
 * 512 MiB, well beyond strict's limit). Runs in a child: the memory limit must
 * make the allocation fail or get the child OOM-killed (the harness also
 * accepts the whole sandbox being OOM-killed, from the Outcome).
 */
#include "probe_common.h"

#include <sys/mman.h>

static long attempt(void* arg) {
  long mib = *(long*)arg;
  for (long i = 0; i < mib; ++i) {
    char* p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return -1000 - i;  /* how far we got */
    for (long off = 0; off < (1 << 20); off += 4096) p[off] = 1;
  }
  return mib;
}

int main(int argc, char** argv) {
  probe_init("memory_bomb", argc, argv);
  long mib = (long)probe_arg_ll("mib", 512);
  struct probe_attempt_result r = probe_attempt(attempt, &mib);
  if (probe_succeeded(&r)) PROBE_ESCAPED("allocated and touched %ld MiB", r.ret);
  if (r.ran && r.ret <= -1000)
    PROBE_BLOCKED("mmap failed after %ld MiB: %s", -1000 - r.ret, strerrorname_np(r.err));
  char why[256];
  PROBE_BLOCKED("%s", probe_describe_failure(&r, why, sizeof why));
}
