#include "tests/backends/seccomp/test_policies.h"

#include <iterator>
#include <cerrno>
#include <random>

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

std::vector<uint64_t> PersonalityTestValues() {
  constexpr uint64_t kSafe[] = {0x0, 0x8, 0x20000, 0x20008, 0xffffffff};
  constexpr uint64_t kLow32 = 0xffffffff;
  std::vector<uint64_t> low;
  for (int a = 0; a < 32; ++a) {
    for (int b = a; b < 32; ++b) {
      const uint64_t bits = uint64_t{1} << a | uint64_t{1} << b;
      low.push_back(bits);
      low.push_back(~bits & kLow32);
    }
    for (uint64_t safe : kSafe) low.push_back(safe ^ uint64_t{1} << a);
  }
  std::mt19937_64 random(20240611);
  for (int i = 0; i < 2000; ++i) low.push_back(random() & kLow32);
  low.insert(low.end(), std::begin(kSafe), std::end(kSafe));
  std::vector<uint64_t> values;
  for (uint64_t v : low) {
    for (uint64_t high : {uint64_t{0}, uint64_t{1} << 32, ~kLow32}) values.push_back(high | v);
  }
  return values;
}

bool IsSafePersonality(uint64_t value) {
  const uint64_t low = value & 0xffffffff;
  return low == 0x0 || low == 0x8 || low == 0x20000 || low == 0x20008 || low == 0xffffffff;
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
