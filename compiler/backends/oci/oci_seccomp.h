// The OCI runtime-spec `linux.seccomp` object (config-linux.md#seccomp) in
// its resolved form: no Docker archMap, no includes/excludes, one entry per
// (action, argument conditions) with the syscall names that share it.
// Conditions inside one entry are ANDed; separate entries are ORed, which is
// exactly the shape of EffectiveSyscalls rules. The same object, as a file,
// is the kubelet's Localhost seccomp profile.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compiler/backends/seccomp/effective_rules.h"
#include "compiler/common/status.h"

namespace cocoon::backends::oci {

// "SCMP_ACT_ALLOW", ... Notify has no listener in a plain OCI/Kubernetes run,
// so it becomes SCMP_ACT_ERRNO(EPERM) (fail closed) with a warning.
std::string ScmpAction(const ir::Action& action, std::vector<std::string>& warnings);

nlohmann::ordered_json SeccompToOci(const EffectiveSyscalls& rules, std::vector<std::string>& warnings);

// ComputeEffectiveSyscalls when the seccomp back end is linked; otherwise a
// clear error (never an empty, allow-everything filter).
Result<EffectiveSyscalls> EffectiveRulesFor(const ir::Syscalls& syscalls);

// The `linux.seccomp` object for `syscalls` (EffectiveRulesFor, then
// SeccompToOci) plus the warnings of each step, kept apart so callers can
// keep their warning order.
struct OciSeccompProfile {
  nlohmann::ordered_json json;
  std::vector<std::string> rule_warnings;         // EffectiveSyscalls::warnings
  std::vector<std::string> translation_warnings;  // SeccompToOci's
};

// The OCI and Kubernetes back ends emit the same profile: `cocoon compile
// --target all` would compute it twice (the rule-form prologue makes it
// about a fifth of the compile). While a SeccompProfileScope is alive on this
// thread, the last result is remembered, keyed by the whole of `syscalls`
// (compared by value, so never stale); without a scope every call computes.
Result<std::shared_ptr<const OciSeccompProfile>> SeccompProfileFor(const ir::Syscalls& syscalls);

// One compile's sharing of the profile (the driver opens one per
// CompileTargets call). Scoped on purpose: nothing is cached across compiles,
// so a repeated compile (and its benchmark) pays the full cost every time.
class SeccompProfileScope {
 public:
  SeccompProfileScope();
  ~SeccompProfileScope();
  SeccompProfileScope(const SeccompProfileScope&) = delete;
  SeccompProfileScope& operator=(const SeccompProfileScope&) = delete;

  struct Memo;

 private:
  std::unique_ptr<Memo> memo_;
  Memo* previous_;
};

}  // namespace cocoon::backends::oci
