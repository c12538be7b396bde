#include "enforcer/limits/rlimits.h"

#include <errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace cocoon::enforcer {

int ApplyRlimits(const RlimitSet& set, int* failed_resource) noexcept {
  for (size_t i = 0; i < set.count && i < RlimitSet::kMax; ++i) {
    const RlimitEntry& entry = set.entries[i];
    // prlimit64 on ourselves via the raw syscall: no libc wrapper state, and
    // errno is read immediately (async-signal-safe, signal-safety(7)).
    if (syscall(SYS_prlimit64, 0, entry.resource, &entry.value, nullptr) != 0) {
      if (failed_resource) *failed_resource = entry.resource;
      return errno;
    }
  }
  return 0;
}

}  // namespace cocoon::enforcer
