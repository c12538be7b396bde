// Syscall IR built in code for the seccomp tests (no parser needed).
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/policy_ir.h"

namespace cocoon::backends::testing {

// Appends one rule per member of `group` with `action`.
void AddGroup(ir::Syscalls& syscalls, const std::string& group, ir::Action action);
void AddRule(ir::Syscalls& syscalls, const std::string& name, ir::Action action,
             std::vector<ir::ArgCondition> conditions = {});

// Like policies/strict.cocoon: default errno ENOSYS, allow @system-service,
// deny (EPERM) @mount @module @debug @keyring @raw-io @clock @reboot @swap
// @obsolete, kill @cpu-emulation, plus ptrace -> kill.
ir::Syscalls StrictSyscalls();

ir::Action Allow();
ir::Action Errno(int value);
ir::Action Kill();
ir::Action Log();

}  // namespace cocoon::backends::testing
