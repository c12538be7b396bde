// The OCI runtime-spec `linux.seccomp` object (config-linux.md#seccomp) in
// its resolved form: no Docker archMap, no includes/excludes, one entry per
// (action, argument conditions) with the syscall names that share it.
// Conditions inside one entry are ANDed; separate entries are ORed, which is
// exactly the shape of EffectiveSyscalls rules. The same object, as a file,
// is the kubelet's Localhost seccomp profile.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/backends/artifact.h"
#include "compiler/backends/seccomp/effective_rules.h"
#include "compiler/common/status.h"

namespace cocoon::backends::oci {

// "SCMP_ACT_ALLOW", ... Notify has no listener in a plain OCI/Kubernetes run,
// so it becomes SCMP_ACT_ERRNO(EPERM) (fail closed) with a warning.
std::string ScmpAction(const ir::Action& action, std::vector<std::string>& warnings);

nlohmann::ordered_json SeccompToOci(const EffectiveSyscalls& rules, std::vector<std::string>& warnings);

// ComputeEffectiveSyscalls (kRules form, netlink as the policy's network
// says) when the seccomp back end is linked; otherwise a clear error (never
// an empty, allow-everything filter).
Result<EffectiveSyscalls> EffectiveRulesFor(const ir::Policy& policy);

// What the OCI and Kubernetes targets cannot express, per syscall: the
// errors of the rule form (ComputeEffectiveSyscalls(..., kRules)). That form
// spells the prologue's guards as rules and can fail where the Linux filter
// does not (moby's `allow socket if arg0 > 0x28` against the socket-family
// guard). `cocoon compile --target oci|k8s|all` hands these to the front end
// next to SyscallRuleProblems, so the refusal names the policy's file, line
// and rule. Empty when the seccomp back end is not linked (EffectiveRulesFor
// then refuses at compile time).
std::vector<ir::SyscallRuleProblem> RuleFormProblems(const ir::Policy& policy);

// The `linux.seccomp` object for one policy, serialised once: the same text
// is k8s/seccomp.json and, re-indented, oci/config.json's `linux.seccomp`
// (the two back ends emit the same profile). Warnings of each step are kept
// apart so callers can keep their warning order.
struct OciSeccompProfile {
  std::string text;                               // SeccompToOci(...).dump(2), no final newline
  std::vector<std::string> rule_warnings;         // EffectiveSyscalls::warnings
  std::vector<std::string> translation_warnings;  // SeccompToOci's
};

// From kRules-form effective rules (ComputeEffectiveSyscalls(..., kRules) or
// ComputeEffectiveSyscallForms(...).rules). Fails closed when the rules
// carry errors.
Result<OciSeccompProfile> SeccompProfileFromRules(EffectiveSyscalls rules);
// EffectiveRulesFor, then SeccompProfileFromRules: what CompileOci and
// CompileKubernetes do on their own. `cocoon compile --target all` computes
// the profile once in the driver and hands it to both *WithProfile calls.
Result<OciSeccompProfile> SeccompProfileFor(const ir::Policy& policy);

// `outer.dump(2)` with `inner_text` (a dump(2) of a JSON value) as the
// value at `at`: the same bytes as putting the parsed value there and
// dumping the whole, without copying or re-serialising it. How: the dump is
// taken with a placeholder string at `at`, which is then replaced by
// `inner_text` indented to its depth (line breaks in a dump are structural
// only; a newline inside a string is escaped). If a policy string happens to
// contain the placeholder, the value is parsed back in and dumped instead.
std::string DumpWithEmbedded(nlohmann::ordered_json outer, const nlohmann::ordered_json::json_pointer& at,
                             std::string_view inner_text);

}  // namespace cocoon::backends::oci

namespace cocoon::backends {

// CompileOci / CompileKubernetes (artifact.h) with the profile given.
Result<std::vector<Artifact>> CompileOciWithProfile(const ir::Policy& policy, const oci::OciSeccompProfile& profile);
Result<std::vector<Artifact>> CompileKubernetesWithProfile(const ir::Policy& policy,
                                                           const oci::OciSeccompProfile& profile);

}  // namespace cocoon::backends
