// Mutation test of the translation validator (seccomp_verify.h): every
// argument test of a verified filter is broken in turn (its constant or mask
// moved by one, its branches swapped), and the validator must refuse every
// mutant that answers some call differently from the original. The
// difference is looked for by brute force over many calls, independently of
// the validator's own choice of test values, so that the value classes it
// uses (word_classes.h) cannot hide a miscompile unnoticed.
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>
#include <vector>

#include "compiler/backends/seccomp/seccomp_backend.h"
#include "compiler/backends/seccomp/seccomp_verify.h"
#include "tests/backends/seccomp/test_policies.h"

namespace cocoon::backends {
namespace {

using testing::AddRule;
using testing::Allow;
using testing::Errno;

// What BuildSeccompFilter expects of each action (seccomp_backend.cc):
// supervised actions routed to the notifier.
uint32_t RoutedRet(const ir::Action& action, bool routed) {
  const bool supervised = action.kind == ir::ActionKind::kLog || action.kind == ir::ActionKind::kNotify ||
                          action.kind == ir::ActionKind::kKillProcess;
  if (routed && supervised) return SECCOMP_RET_USER_NOTIF;
  switch (action.kind) {
    case ir::ActionKind::kAllow: return SECCOMP_RET_ALLOW;
    case ir::ActionKind::kErrno: return SECCOMP_RET_ERRNO | static_cast<uint32_t>(action.errno_value);
    case ir::ActionKind::kKillProcess: return SECCOMP_RET_KILL_PROCESS;
    case ir::ActionKind::kLog: return SECCOMP_RET_LOG;
    case ir::ActionKind::kNotify: return SECCOMP_RET_USER_NOTIF;
    case ir::ActionKind::kTrap: return SECCOMP_RET_TRAP;
  }
  return SECCOMP_RET_KILL_PROCESS;
}

constexpr uint32_t kPrefixDenyRet = SECCOMP_RET_ERRNO | EPERM;

// Calls to compare two programs on: every pair of values around the rules'
// constants on the syscall's first two argument slots in use, and random
// calls mixing those values with random words.
std::vector<SeccompData> Calls(const EffectiveSyscalls& rules, const std::string& name, long nr) {
  std::set<uint64_t> values = {0, 1, 2, 0xffffffff, 0x100000000ULL, ~uint64_t{0}, 0x80000000ULL};
  std::set<int> args;
  for (const ir::SyscallRule& rule : rules.rules) {
    if (rule.name != name) continue;
    for (const ir::ArgCondition& c : rule.conditions) {
      args.insert(c.arg);
      for (uint64_t v : {c.value, c.value & c.mask, c.value | ~c.mask}) {
        for (uint64_t x : std::initializer_list<uint64_t>{v, v - 1, v + 1, v & 0xffffffffULL, v | 0x100000000ULL,
                                                       v ^ 0xffffffff00000000ULL}) {
          values.insert(x);
        }
      }
    }
  }
  for (uint32_t cmd : rules.ioctl_denied_cmds) values.insert(cmd), values.insert(uint64_t{cmd} | 0x500000000ULL);
  for (uint32_t cmd : rules.fcntl_denied_cmds_in_prefix) values.insert(cmd), values.insert(uint64_t{cmd} | 0x500000000ULL);
  const std::vector<uint64_t> pool(values.begin(), values.end());
  std::vector<int> used(args.begin(), args.end());
  if (used.size() > 2) used.resize(2);
  while (used.size() < 2) used.push_back(used.empty() ? 0 : used.back() == 1 ? 2 : 1);
  std::vector<SeccompData> calls;
  auto add = [&](uint64_t a, uint64_t b) {
    SeccompData d;
    d.nr = static_cast<int32_t>(nr);
    d.arch = AUDIT_ARCH_X86_64;
    d.args[used[0]] = a;
    d.args[used[1]] = b;
    calls.push_back(d);
  };
  for (uint64_t a : pool) {
    for (uint64_t b : pool) add(a, b);
  }
  std::mt19937_64 rng(42);
  for (int i = 0; i < 20000; ++i) {
    auto pick = [&]() -> uint64_t {
      switch (rng() % 4) {
        case 0: return pool[rng() % pool.size()];
        case 1: return pool[rng() % pool.size()] ^ (uint64_t{1} << (rng() % 64));
        case 2: return rng() & 0xffffffffULL;
        default: return rng();
      }
    };
    add(pick(), pick());
  }
  return calls;
}

// Is instruction `pc` a test of an argument word (after its load, or the
// load and an AND)?
bool TestsAnArgumentWord(const BpfProgram& p, size_t pc) {
  if (BPF_CLASS(p[pc].code) != BPF_JMP || BPF_OP(p[pc].code) == BPF_JA || pc == 0) return false;
  size_t load = pc - 1;
  if (p[load].code == (BPF_ALU | BPF_AND | BPF_K) && load > 0) --load;
  return p[load].code == (BPF_LD | BPF_W | BPF_ABS) && p[load].k >= 16;
}

std::vector<BpfProgram> Mutants(const BpfProgram& p) {
  std::vector<BpfProgram> out;
  for (size_t pc = 0; pc < p.size(); ++pc) {
    if (!TestsAnArgumentWord(p, pc)) continue;
    for (int kind = 0; kind < 4; ++kind) {
      BpfProgram m = p;
      sock_filter& jump = m[pc];
      switch (kind) {
        case 0: ++jump.k; break;
        case 1: --jump.k; break;
        case 2: std::swap(jump.jt, jump.jf); break;
        case 3:
          if (m[pc - 1].code != (BPF_ALU | BPF_AND | BPF_K)) continue;
          m[pc - 1].k ^= m[pc - 1].k & (0u - m[pc - 1].k);  // drop the mask's lowest bit
          break;
      }
      if (ValidateBpf(m).ok()) out.push_back(std::move(m));
    }
  }
  return out;
}

struct MutationScore {
  size_t mutants = 0;
  size_t answer_differently = 0;  // found by brute force
  size_t refused = 0;             // by the validator
  std::vector<std::string> missed;
};

MutationScore Score(const ir::Syscalls& syscalls, const std::string& name, long nr) {
  MutationScore score;
  const EffectiveSyscalls rules = ComputeEffectiveSyscalls(syscalls, PrologueGuardForm::kBpfPrefix);
  EXPECT_TRUE(rules.errors.empty());
  auto built = BuildSeccompFilter(rules, {});
  EXPECT_TRUE(built.ok()) << built.status().ToString();
  if (!built.ok()) return score;
  const BpfProgram original = *ParseBpf(built->bpf);
  EXPECT_TRUE(VerifyBpfAgainstRules(original, rules, RoutedRet, true, kPrefixDenyRet).ok());
  const std::vector<SeccompData> calls = Calls(rules, name, nr);
  for (const BpfProgram& mutant : Mutants(original)) {
    ++score.mutants;
    const SeccompData* witness = nullptr;
    for (const SeccompData& call : calls) {
      if (EvaluateBpf(mutant, call)->ret != EvaluateBpf(original, call)->ret) {
        witness = &call;
        break;
      }
    }
    const bool refused = !VerifyBpfAgainstRules(mutant, rules, RoutedRet, true, kPrefixDenyRet).ok();
    score.answer_differently += witness != nullptr;
    score.refused += refused;
    if (witness != nullptr && !refused) {
      char text[160];
      std::snprintf(text, sizeof(text), "mutant %zu: %s(%#llx, %#llx, %#llx)", score.mutants, name.c_str(),
                    static_cast<unsigned long long>(witness->args[0]),
                    static_cast<unsigned long long>(witness->args[1]),
                    static_cast<unsigned long long>(witness->args[2]));
      score.missed.push_back(text);
    }
  }
  return score;
}

void ExpectNoMiss(const MutationScore& score, const char* what) {
  EXPECT_TRUE(score.missed.empty()) << what << ": the validator let through mutants that answer differently:\n"
                                    << ::testing::PrintToString(score.missed);
  EXPECT_GT(score.answer_differently, 0u) << what << ": no mutant changed an answer; the test tests nothing";
  std::printf("%s: %zu mutants, %zu answer differently, %zu refused by the validator\n", what, score.mutants,
              score.answer_differently, score.refused);
}

// `==` on two 32-bit parameters (single-bit complements, word classes).
TEST(VerifierMutation, ThirtyTwoBitEqualsOnTwoArguments) {
  ir::Syscalls s;
  s.default_action = Errno(ENOSYS);
  AddRule(s, "setsockopt", Allow());
  AddRule(s, "setsockopt", Errno(EPERM), {{1, ir::CompareOp::kEq, 1, 0}, {2, ir::CompareOp::kEq, 2, 0}});
  ExpectNoMiss(Score(s, "setsockopt", SYS_setsockopt), "setsockopt");
}

// 64-bit ranges on 64-bit parameters, across actions. (Most mixes of
// ranges and masks across actions on mbind are refused: libseccomp 2.5.4
// miscompiles them, or loops adding them, child_deadline.h.)
TEST(VerifierMutation, SixtyFourBitRangesAcrossActions) {
  ir::Syscalls s;
  s.default_action = Errno(ENOSYS);
  AddRule(s, "mbind", Allow(), {{1, ir::CompareOp::kGt, 0x700000010ULL, 0}});
  AddRule(s, "mbind", Errno(EACCES), {{2, ir::CompareOp::kLt, 0x300000000ULL, 0}});
  ExpectNoMiss(Score(s, "mbind", SYS_mbind), "mbind");
}

// A strict-like filter: the ioctl guard prefix, and a rule on ioctl's fd.
TEST(VerifierMutation, GuardPrefixAndARuleOnIoctl) {
  ir::Syscalls s = testing::StrictSyscalls();
  AddRule(s, "ioctl", Allow());
  AddRule(s, "ioctl", Errno(EPERM), {{0, ir::CompareOp::kEq, 5, 0}});
  ExpectNoMiss(Score(s, "ioctl", SYS_ioctl), "ioctl");
}

}  // namespace
}  // namespace cocoon::backends
