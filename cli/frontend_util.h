// Front-end options every `cocoon` command that checks a policy uses.
#pragma once

#include "compiler/frontend/frontend.h"

namespace cocoon::cli {

// Wires the back ends' checks of a checked profile into the front end
// (frontend::FrontendOptions::syscall_rule_check): a syscall rule set that
// seccomp cannot express is then a `cocoon check` error at the policy's
// statement, not a `cocoon compile` refusal without a location.
//
// kLinuxFilter checks what `cocoon enforce` loads (every command that checks
// a policy). kLinuxFilterAndRuleForm adds the OCI/Kubernetes rule form, for
// `cocoon compile` when those targets are asked for: that form can fail
// where the filter does not (backends::RuleFormProblems). kBuiltLinuxFilter
// also builds and verifies the filter (backends::FilterBuildProblems), for
// `cocoon check` and `explain`: a rule set libseccomp miscompiles is then an
// error at its rule there too, not only when the policy is compiled.
enum class BackEndChecks { kLinuxFilter, kLinuxFilterAndRuleForm, kBuiltLinuxFilter };
void AddBackEndChecks(frontend::FrontendOptions& options, BackEndChecks checks = BackEndChecks::kLinuxFilter);

}  // namespace cocoon::cli
