// Landlock: parent-side ABI probing and masks, child-side ruleset.
// Reference: Documentation/userspace-api/landlock.rst ("Backward and forward
// compatibility": handle only the rights the running ABI knows, or
// landlock_create_ruleset fails with EINVAL).
#include "enforcer/landlock.h"

#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "enforcer/child_steps.h"

namespace cocoon::enforcer {
namespace {

// The Debian 12 uapi header stops at ABI 2; newer rights by value.
constexpr uint64_t kFsTruncate = 1ull << 14;   // ABI 3
constexpr uint64_t kFsIoctlDev = 1ull << 15;   // ABI 5
constexpr uint64_t kScopeAbstractUnix = 1ull << 0;  // ABI 6
constexpr uint64_t kScopeSignal = 1ull << 1;        // ABI 6

constexpr uint64_t kFsRead = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
constexpr uint64_t kFileRights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
                                 LANDLOCK_ACCESS_FS_READ_FILE | kFsTruncate | kFsIoctlDev;

// Newer ABIs extend the struct; the kernel takes the size we pass.
struct RulesetAttr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

}  // namespace

int LandlockAbi() {
  static const int abi = [] {
    long v = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
    return v < 0 ? 0 : static_cast<int>(v);
  }();
  return abi;
}

uint64_t LandlockHandledFs(int abi) {
  if (abi <= 0) return 0;
  uint64_t mask = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;  // ABI 1: bits 0..12
  if (abi >= 2) mask |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) mask |= kFsTruncate;
  if (abi >= 5) mask |= kFsIoctlDev;
  return mask;
}

uint64_t LandlockScoped(int abi) { return abi >= 6 ? (kScopeAbstractUnix | kScopeSignal) : 0; }

uint64_t LandlockRuleAccess(backends::LandlockAccess access, int abi, bool is_directory) {
  uint64_t handled = LandlockHandledFs(abi);
  uint64_t rights = 0;
  switch (access) {
    case backends::LandlockAccess::kReadExecute: rights = kFsRead; break;
    case backends::LandlockAccess::kReadWrite: rights = handled; break;
    case backends::LandlockAccess::kDevice:
      rights = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | kFsTruncate | kFsIoctlDev;
      break;
  }
  if (!is_directory) rights &= kFileRights;
  return rights & handled;
}

namespace child {

bool ApplyLandlock(const ChildSpec& spec, ChildError* error) noexcept {
  if (spec.landlock_abi <= 0) return true;
  RulesetAttr attr{spec.landlock_handled_fs, 0, spec.landlock_scoped};
  size_t size = spec.landlock_abi >= 6 ? sizeof(RulesetAttr) : sizeof(uint64_t);
  long ruleset = sys::Call(SYS_landlock_create_ruleset, &attr, size, 0);
  if (!Succeeded(ruleset, error, ChildStep::kLandlockCreate)) return false;
  for (size_t i = 0; i < spec.landlock_rule_count; ++i) {
    const ChildLandlockRule& rule = spec.landlock_rules[i];
    // No symlink followed (ELOOP): a mount point inside a bound host
    // directory can be renamed on the host and a symlink put at its name
    // after the mounts were made; following it would grant the rule's rights
    // (read-write) wherever it points.
    struct open_how how {};
    how.flags = O_PATH | O_CLOEXEC;
    how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
    long fd = sys::Call(SYS_openat2, AT_FDCWD, rule.path, &how, sizeof(how));
    if (fd == -ENOENT && rule.optional) continue;
    long rc = fd;
    if (fd >= 0) {
      struct landlock_path_beneath_attr beneath {};
      beneath.allowed_access = rule.access;
      beneath.parent_fd = static_cast<int>(fd);
      rc = sys::Call(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &beneath, 0);
      sys::Call(SYS_close, fd);
    }
    if (rc < 0) {
      sys::Call(SYS_close, ruleset);
      return Succeeded(rc, error, ChildStep::kLandlockRule, static_cast<int>(i));
    }
  }
  long rc = sys::Call(SYS_landlock_restrict_self, ruleset, spec.landlock_restrict_flags);
  sys::Call(SYS_close, ruleset);
  return Succeeded(rc, error, ChildStep::kLandlockRestrict);
}

}  // namespace child
}  // namespace cocoon::enforcer
