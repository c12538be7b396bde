#include "cli/frontend_util.h"

#include "compiler/backends/seccomp/seccomp_backend.h"

namespace cocoon::cli {

void AddBackEndChecks(frontend::FrontendOptions& options) {
  options.syscall_rule_check = backends::SyscallRuleProblems;
}

}  // namespace cocoon::cli
