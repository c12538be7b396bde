#include "compiler/backends/seccomp/seccomp_verify.h"

#include <linux/audit.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "compiler/backends/seccomp/rule_algebra.h"
#include "compiler/syscalls/syscall_groups.h"

namespace cocoon::backends {
namespace {

constexpr size_t kMaxCombinations = 4096;

// Values around each comparison's edge, for one argument.
std::vector<uint64_t> BoundaryValues(const std::vector<const ir::SyscallRule*>& rules, uint8_t arg) {
  std::set<uint64_t> out = {0, 1, ~uint64_t{0}, 0xffffffffULL, 0x100000000ULL};
  for (const ir::SyscallRule* rule : rules) {
    for (const ir::ArgCondition& c : rule->conditions) {
      if (c.arg != arg) continue;
      const uint64_t v = c.value;
      for (uint64_t x : std::initializer_list<uint64_t>{v, v - 1, v + 1, v ^ 0xffffffff00000000ULL}) out.insert(x);
      if (c.op == ir::CompareOp::kMaskedEq) {
        out.insert(c.value | ~c.mask);
        for (int bit = 0; bit < 64; ++bit) {
          const uint64_t b = uint64_t{1} << bit;
          if ((c.mask & b) != 0) out.insert(c.value ^ b);
        }
      }
    }
  }
  return {out.begin(), out.end()};
}

std::string ArgsText(const uint64_t args[6]) {
  std::string s;
  for (int i = 0; i < 6; ++i) s += (i ? "," : "") + std::to_string(args[i]);
  return s;
}

Status VerifySyscall(const BpfProgram& program, const EffectiveSyscalls& rules, int nr,
                     const std::vector<const ir::SyscallRule*>& mine,
                     uint32_t (*expected_ret)(const ir::Action&, bool), bool routed) {
  std::vector<std::vector<uint64_t>> per_arg(6, std::vector<uint64_t>{0});
  for (uint8_t arg = 0; arg < 6; ++arg) {
    const bool used = std::any_of(mine.begin(), mine.end(), [&](const ir::SyscallRule* r) {
      return std::any_of(r->conditions.begin(), r->conditions.end(),
                         [&](const ir::ArgCondition& c) { return c.arg == arg; });
    });
    if (used) per_arg[arg] = BoundaryValues(mine, arg);
  }
  size_t total = 1;
  for (const auto& v : per_arg) total = std::min(total * v.size(), kMaxCombinations * 64);
  const size_t stride = total > kMaxCombinations ? total / kMaxCombinations + 1 : 1;
  for (size_t index = 0; index < total; index += stride) {
    SeccompData data;
    data.nr = nr;
    data.arch = AUDIT_ARCH_X86_64;
    size_t rest = index;
    for (int arg = 0; arg < 6; ++arg) {
      data.args[arg] = per_arg[arg][rest % per_arg[arg].size()];
      rest /= per_arg[arg].size();
    }
    ir::Action want = rules.default_action;
    for (const ir::SyscallRule* r : mine) {
      if (ConjunctionMatches(r->conditions, data.args)) want = r->action;  // disjoint across actions
    }
    COCOON_ASSIGN_OR_RETURN(BpfEvaluation got, EvaluateBpf(program, data));
    if (got.ret != expected_ret(want, routed)) {
      return InternalError("libseccomp miscompiled " + mine.front()->name + "(" + ArgsText(data.args) +
                           "): program returns " + DescribeSeccompRet(got.ret) + ", rules say " +
                           DescribeSeccompRet(expected_ret(want, routed)));
    }
  }
  return Status::Ok();
}

}  // namespace

Status VerifyBpfAgainstRules(const BpfProgram& program, const EffectiveSyscalls& rules,
                             uint32_t (*expected_ret)(const ir::Action&, bool), bool routed) {
  if (std::find(rules.architectures.begin(), rules.architectures.end(), ir::Arch::kX86_64) ==
      rules.architectures.end()) {
    return Status::Ok();
  }
  std::map<int, std::vector<const ir::SyscallRule*>> by_nr;
  for (const ir::SyscallRule& r : rules.rules) {
    const int nr = syscalls::ResolveSyscall(r.name, ir::Arch::kX86_64);
    if (nr >= 0) by_nr[nr].push_back(&r);
  }
  for (const auto& [nr, mine] : by_nr) {
    COCOON_RETURN_IF_ERROR(VerifySyscall(program, rules, nr, mine, expected_ret, routed));
  }
  return Status::Ok();
}

}  // namespace cocoon::backends
