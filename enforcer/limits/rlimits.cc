#include "enforcer/limits/rlimits.h"

#include <errno.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "enforcer/raw_syscall.h"

namespace cocoon::enforcer {

int ApplyRlimits(const RlimitSet& set, int* failed_resource) noexcept {
  for (size_t i = 0; i < set.count && i < RlimitSet::kMax; ++i) {
    const RlimitEntry& entry = set.entries[i];
    // prlimit64 on ourselves, raw: the sandbox child calls this and must
    // not touch errno or libc state (enforcer/raw_syscall.h).
    long rc = sys::Call(SYS_prlimit64, 0, entry.resource, &entry.value, nullptr);
    if (rc != 0) {
      if (failed_resource) *failed_resource = entry.resource;
      return sys::ErrorOf(rc);
    }
  }
  return 0;
}

}  // namespace cocoon::enforcer
