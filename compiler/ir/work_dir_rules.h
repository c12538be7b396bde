// Where the work dir may go, one rule for `cocoon check` (compiler/frontend/
// checker.cc) and the enforcer (enforcer/child_spec_builder.cc), so that
// check refuses the policies enforce refuses, in the same words.
#pragma once

#include <string>
#include <string_view>

namespace cocoon::ir {

// Whether `path` lies strictly below the directory `dir` (both canonical
// absolute paths).
inline bool IsStrictlyUnder(std::string_view path, std::string_view dir) {
  if (dir == "/") return path.size() > 1 && path.front() == '/';
  return path.size() > dir.size() && path.substr(0, dir.size()) == dir && path[dir.size()] == '/';
}

// The target of the innermost of `mounts` that holds `path` (strictly above
// it), or nullptr. `target_of(m)` gives a mount's target.
template <typename Mounts, typename TargetOf>
const std::string* InnermostMountHolding(std::string_view path, const Mounts& mounts, TargetOf target_of) {
  const std::string* innermost = nullptr;
  for (const auto& m : mounts) {
    const std::string& target = target_of(m);
    if (IsStrictlyUnder(path, target) && (innermost == nullptr || target.size() > innermost->size())) {
      innermost = &target;
    }
  }
  return innermost;
}

// Why a work dir at `work` is refused when the innermost mount holding it
// is a bind of the host directory `bound_host_dir` (a read-only or writable
// bind; a tmpfs, /proc or the root is the sandbox's own tree, and fine): the
// enforcer would mount the staged work dir over a directory of the host's
// (which others on the host may change, and which it never creates
// anything in).
inline std::string WorkDirInsideBindReason(std::string_view work, std::string_view bound_host_dir) {
  return "the work dir " + std::string(work) + " is inside a bound host directory (" + std::string(bound_host_dir) +
         "); put the work dir on the sandbox's own tree, outside every bind";
}

}  // namespace cocoon::ir
