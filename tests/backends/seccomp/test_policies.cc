#include "tests/backends/seccomp/test_policies.h"

#include <cerrno>

#include "compiler/syscalls/syscall_groups.h"

namespace cocoon::backends::testing {

ir::Action Allow() { return {ir::ActionKind::kAllow, 0}; }
ir::Action Errno(int value) { return {ir::ActionKind::kErrno, value}; }
ir::Action Kill() { return {ir::ActionKind::kKillProcess, 0}; }
ir::Action Log() { return {ir::ActionKind::kLog, 0}; }

void AddRule(ir::Syscalls& syscalls, const std::string& name, ir::Action action,
             std::vector<ir::ArgCondition> conditions) {
  syscalls.rules.push_back(ir::SyscallRule{name, action, std::move(conditions), ""});
}

void AddGroup(ir::Syscalls& syscalls, const std::string& group, ir::Action action) {
  for (const std::string& name : syscalls::ExpandGroup(group)) {
    syscalls.rules.push_back(ir::SyscallRule{name, action, {}, group});
  }
}

ir::Syscalls StrictSyscalls() {
  ir::Syscalls s;
  s.default_action = Errno(ENOSYS);
  AddGroup(s, "@system-service", Allow());
  for (const char* g : {"@mount", "@module", "@debug", "@keyring", "@raw-io", "@clock", "@reboot", "@swap",
                        "@obsolete"}) {
    AddGroup(s, g, Errno(EPERM));
  }
  AddGroup(s, "@cpu-emulation", Kill());
  // The checker resolves a name listed twice (child wins); do the same here:
  // ptrace is in @debug (EPERM), make it kill.
  for (auto& r : s.rules) {
    if (r.name == "ptrace") r = ir::SyscallRule{"ptrace", Kill(), {}, ""};
  }
  return s;
}

}  // namespace cocoon::backends::testing
