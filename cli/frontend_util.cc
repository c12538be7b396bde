#include "cli/frontend_util.h"

#include <algorithm>
#include <memory>

#include "compiler/backends/oci/oci_seccomp.h"
#include "compiler/backends/seccomp/seccomp_backend.h"

namespace cocoon::cli {

void AddBackEndChecks(frontend::FrontendOptions& options, BackEndChecks checks) {
  if (checks == BackEndChecks::kBuiltLinuxFilter) {
    // One build per distinct syscall section, not one per profile.
    options.syscall_rule_check = [memo = std::make_shared<backends::FilterBuildProblemsMemo>()](
                                     const ir::Policy& policy) { return (*memo)(policy); };
    return;
  }
  if (checks == BackEndChecks::kLinuxFilter) {
    options.syscall_rule_check = backends::SyscallRuleProblems;
    return;
  }
  options.syscall_rule_check = [](const ir::Policy& policy) {
    std::vector<ir::SyscallRuleProblem> problems = backends::SyscallRuleProblems(policy);
    // One error per syscall: the filter's, when both forms fail on it.
    for (ir::SyscallRuleProblem& problem : backends::oci::RuleFormProblems(policy)) {
      bool reported = std::any_of(problems.begin(), problems.end(),
                                  [&](const ir::SyscallRuleProblem& p) { return p.syscall == problem.syscall; });
      if (!reported) problems.push_back(std::move(problem));
    }
    return problems;
  };
}

}  // namespace cocoon::cli
