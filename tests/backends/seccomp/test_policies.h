// Syscall IR built in code for the seccomp tests (no parser needed).
#pragma once

#include <cstdint>
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

// personality(2) arguments for tables (a few thousand): the safe values
// with and without upper bits, every value with at most two bits set or
// clear in the low 32 (each unsafe value next to a safe one), the personas
// with one more bit, and seeded random ones.
std::vector<uint64_t> PersonalityTestValues();
// The prologue's safe set: the low 32 bits (what the kernel reads) are 0,
// PER_LINUX32, UNAME26, both, or the 0xffffffff query.
bool IsSafePersonality(uint64_t value);

ir::Action Allow();
ir::Action Errno(int value);
ir::Action Kill();
ir::Action Log();

}  // namespace cocoon::backends::testing
