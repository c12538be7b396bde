#include "compiler/backends/seccomp/seccomp_verify.h"

#include <linux/audit.h>
#include <linux/seccomp.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>

#include "compiler/backends/seccomp/guard_prefix.h"
#include "compiler/backends/seccomp/rule_algebra.h"
#include "compiler/backends/seccomp/word_classes.h"
#include "compiler/syscalls/syscall_groups.h"

namespace cocoon::backends {
namespace {

// Evaluations allowed per syscall and architecture (VerifySyscall): about a
// second of evaluator time at worst. Shipped policies need far fewer.
constexpr size_t kMaxVerifiedCalls = size_t{1} << 21;

// What the checked program must do: the rules, behind the guard prefix.
struct Expectation {
  const EffectiveSyscalls& rules;
  uint32_t (*expected_ret)(const ir::Action&, bool);
  bool routed;
  uint32_t ioctl_deny_ret;
  uint32_t audit_arch;  // the architecture checked (seccomp_data.arch)
  std::string_view arch_name;
  bool arch_is_32bit;   // i386: the kernel zero-extends 32-bit registers into args
  // The guarded syscalls' numbers on that architecture (-1: none there).
  int ioctl_nr;
  int seccomp_nr;
  int clone_nr;
  int unshare_nr;
  int socket_nr;
  int fcntl_nr;
  int fcntl64_nr;  // i386 only
  std::vector<int> multiplexer_nrs;  // i386 socketcall, ipc with the multiplexer guard
  // Extra boundary values of the prefix guards' arguments (VerifySyscall).
  std::vector<uint32_t> seccomp_values;
  std::vector<uint32_t> clone_values;
};

bool Contains(const std::vector<uint32_t>& values, uint64_t arg) {
  return std::find(values.begin(), values.end(), static_cast<uint32_t>(arg)) != values.end();
}

// What the guard prefix answers (guard_prefix.h), on the kernel's 32-bit
// views; nullopt when the rules' verdict `want` stands.
std::optional<uint32_t> GuardAnswer(const Expectation& e, int nr, const uint64_t args[6]) {
  const bool denied =
      ((nr == e.clone_nr || nr == e.unshare_nr) && (args[0] & e.rules.clone_new_mask_in_prefix) != 0) ||
      (nr == e.seccomp_nr && e.rules.seccomp_listener_in_prefix &&
       static_cast<uint32_t>(args[0]) == SECCOMP_SET_MODE_FILTER && (args[1] & SECCOMP_FILTER_FLAG_NEW_LISTENER) != 0) ||
      (nr == e.ioctl_nr && Contains(e.rules.ioctl_denied_cmds, args[1])) ||
      ((nr == e.fcntl_nr || nr == e.fcntl64_nr) && Contains(e.rules.fcntl_denied_cmds_in_prefix, args[1]));
  if (std::find(e.multiplexer_nrs.begin(), e.multiplexer_nrs.end(), nr) != e.multiplexer_nrs.end()) {
    return MultiplexerDenyRet();
  }
  if (denied) return e.ioctl_deny_ret;
  if (nr == e.socket_nr && Contains(e.rules.socket_denied_families_in_prefix, args[0])) return SocketFamilyDenyRet();
  return std::nullopt;
}

// Values around each comparison's edge, for one argument (plus, for ioctl's
// cmd, the denied values with and without upper bits).
std::vector<uint64_t> BoundaryValues(const std::vector<const ir::SyscallRule*>& rules, uint8_t arg,
                                     const std::vector<uint32_t>& extra) {
  std::set<uint64_t> out = {0, 1, ~uint64_t{0}, 0xffffffffULL, 0x100000000ULL};
  for (uint32_t v : extra) {
    const uint64_t w = v;
    for (uint64_t x : std::initializer_list<uint64_t>{w, w | 0x100000000ULL, w ^ 1, w + 1}) out.insert(x);
  }
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

// `values` as a 32-bit architecture's arguments: the low halves, zero-extended.
std::vector<uint64_t> LowHalves(const std::vector<uint64_t>& values) {
  std::set<uint64_t> out;
  for (uint64_t v : values) out.insert(v & 0xffffffffULL);
  return {out.begin(), out.end()};
}

// Every 32-bit word the rules of one syscall compare against, on any
// argument: both halves of each value and mask (and of the guards' extra
// values), each with its neighbours, plus the extremes. libseccomp compares
// a 64-bit argument as two 32-bit words, so the program's answer depends on
// each word only through where it sits among these constants; a
// miscompiled program may test one word against a constant meant for the
// other half, or for another argument (libseccomp 2.5.4: a failing low-half
// test falling into the next rule's high-half test, seccomp_verify.h), so
// every word is paired with every other here.
std::vector<uint32_t> ComparedWords(const std::vector<const ir::SyscallRule*>& rules,
                                    const std::vector<uint64_t> (&boundary)[6]) {
  std::set<uint32_t> out = {0, 1, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff};
  auto add = [&](uint64_t v) {
    for (uint32_t w : {static_cast<uint32_t>(v >> 32), static_cast<uint32_t>(v)}) {
      out.insert(w);
      out.insert(w - 1);
      out.insert(w + 1);
    }
  };
  for (const ir::SyscallRule* rule : rules) {
    for (const ir::ArgCondition& c : rule->conditions) {
      add(c.value);
      if (c.op == ir::CompareOp::kMaskedEq) add(c.mask), add(c.value | ~c.mask);
    }
  }
  // The guards' values (ioctl cmds, socket families, ...) are in the boundary sets.
  for (const auto& values : boundary) {
    for (uint64_t v : values) out.insert(static_cast<uint32_t>(v)), out.insert(static_cast<uint32_t>(v >> 32));
  }
  return {out.begin(), out.end()};
}

// Calls `check` with every combination of one value per argument.
Status ForEachCombination(const std::span<const uint64_t> (&sets)[6],
                          const std::function<Status(const uint64_t (&args)[6])>& check) {
  size_t index[6] = {0, 0, 0, 0, 0, 0};
  uint64_t args[6];
  while (true) {
    for (int arg = 0; arg < 6; ++arg) args[arg] = sets[arg][index[arg]];
    COCOON_RETURN_IF_ERROR(check(args));
    int arg = 0;
    for (; arg < 6; ++arg) {
      if (++index[arg] < sets[arg].size()) break;
      index[arg] = 0;
    }
    if (arg == 6) return Status::Ok();
  }
}

std::string HexArgsText(const uint64_t args[6]) {
  std::string s;
  char buf[24];
  for (int i = 0; i < 6; ++i) {
    std::snprintf(buf, sizeof(buf), "%s0x%llx", i ? ", " : "", static_cast<unsigned long long>(args[i]));
    s += buf;
  }
  return s;
}

// The rules of syscall `nr` (`mine`, all of one name) against the program on
// e's architecture, over inputs that are complete for comparisons of 32-bit
// words against the rules' constants: first the product of every argument's
// boundary values, then each used argument in turn over all its word pairs
// (ComparedWords x ComparedWords) while the others take each of their
// boundary values; every set holds one value per class of the tests either
// side applies (word_classes.h), which changes no verdict. No sampling: a
// syscall needing more than kMaxVerifiedCalls evaluations is refused (fail
// closed).
//
// `too_large`: size only. Nothing is evaluated; a syscall past the limit is
// recorded there (with its name) instead of failing.
Status VerifySyscall(const BpfProgram& program, const Expectation& e, int nr,
                     const std::vector<const ir::SyscallRule*>& mine, std::vector<ir::SyscallRuleProblem>* too_large) {
  static const std::vector<uint32_t> no_extra;
  static const std::vector<uint64_t> kZero = {0};  // an argument no condition looks at
  const std::string name = mine.empty() ? "syscall " + std::to_string(nr) : mine.front()->name;
  // What the program tests of each argument word, when compiling (the
  // size-only pass has no program): nullopt when it does more than load, AND
  // and compare words (word_classes.h), and then no value stands for another.
  std::optional<ArgWordTests> program_tests;
  if (too_large == nullptr) program_tests = ProgramWordTests(program, e.audit_arch, nr);
  const bool classes_apply = too_large != nullptr || program_tests.has_value();
  auto program_tests_arg = [&](int arg) {
    return program_tests && (!program_tests->per_word[2 * arg].empty() || !program_tests->per_word[2 * arg + 1].empty());
  };
  std::vector<uint64_t> boundary[6];
  bool used_arg[6] = {false, false, false, false, false, false};
  bool guard_arg[6] = {false, false, false, false, false, false};  // a prefix guard tests it
  const std::vector<uint32_t>* guard_values[6] = {};
  for (uint8_t arg = 0; arg < 6; ++arg) {
    const bool used = std::any_of(mine.begin(), mine.end(), [&](const ir::SyscallRule* r) {
      return std::any_of(r->conditions.begin(), r->conditions.end(),
                         [&](const ir::ArgCondition& c) { return c.arg == arg; });
    });
    const bool ioctl_cmd = nr == e.ioctl_nr && arg == 1 && !e.rules.ioctl_denied_cmds.empty();
    const bool seccomp_arg = nr == e.seccomp_nr && arg <= 1 && e.rules.seccomp_listener_in_prefix;
    const bool clone_arg = (nr == e.clone_nr || nr == e.unshare_nr) && arg == 0 && e.rules.clone_new_mask_in_prefix;
    const bool socket_arg = nr == e.socket_nr && arg == 0 && !e.rules.socket_denied_families_in_prefix.empty();
    const bool fcntl_cmd =
        (nr == e.fcntl_nr || nr == e.fcntl64_nr) && arg == 1 && !e.rules.fcntl_denied_cmds_in_prefix.empty();
    const std::vector<uint32_t>& extra = ioctl_cmd     ? e.rules.ioctl_denied_cmds
                                         : fcntl_cmd   ? e.rules.fcntl_denied_cmds_in_prefix
                                         : seccomp_arg ? e.seccomp_values
                                         : clone_arg   ? e.clone_values
                                         : socket_arg  ? e.rules.socket_denied_families_in_prefix
                                                       : no_extra;
    guard_arg[arg] = ioctl_cmd || seccomp_arg || clone_arg || socket_arg || fcntl_cmd;
    guard_values[arg] = &extra;
    // An argument only a (miscompiled) program tests varies too.
    used_arg[arg] = used || guard_arg[arg] || program_tests_arg(arg);
    if (used_arg[arg]) {
      boundary[arg] = BoundaryValues(mine, arg, extra);
      if (e.arch_is_32bit) boundary[arg] = LowHalves(boundary[arg]);
    } else {
      boundary[arg] = kZero;
    }
  }
  std::vector<uint32_t> words = ComparedWords(mine, boundary);
  if (program_tests) {
    // A constant the program compares a word with and the rules do not (a
    // miscompile) gets candidates on both sides of it too.
    std::set<uint32_t> more(words.begin(), words.end());
    for (const auto& word_tests : program_tests->per_word) {
      for (const WordTest& t : word_tests) {
        for (uint32_t w : {t.k, t.k - 1, t.k + 1, t.mask, t.k | ~t.mask}) more.insert(w);
      }
    }
    words.assign(more.begin(), more.end());
  }
  // One value per class of what the rules, the guards and (when compiling)
  // the program test of each word (word_classes.h). The size-only pass has
  // no program: it counts the rules' and guards' classes, which a program
  // that tests only the rules' constants does not split further; a program
  // that does is counted (and refused past the limit) by the compiler, and
  // by `cocoon check`, which builds the filter (FilterBuildProblems).
  ArgWordTests tests;
  for (const ir::SyscallRule* rule : mine) {
    for (const ir::ArgCondition& c : rule->conditions) AddConditionTests(c, tests);
  }
  for (uint8_t arg = 0; arg < 6; ++arg) {
    if (!guard_arg[arg]) continue;
    for (uint32_t v : *guard_values[arg]) {
      // GuardAnswer compares the low word with a value, or ANDs it with a flag or mask.
      tests.Add(2 * arg, {0xffffffff, WordTest::Op::kEq, v});
      tests.Add(2 * arg, {v, WordTest::Op::kEq, 0});
    }
  }
  for (int word = 0; program_tests && word < 12; ++word) {
    for (const WordTest& t : program_tests->per_word[word]) tests.Add(word, t);
  }
  std::vector<uint32_t> low_words[6], high_words[6];
  for (uint8_t arg = 0; arg < 6; ++arg) {
    if (!used_arg[arg]) continue;
    low_words[arg] = classes_apply ? OnePerClass(words, tests.per_word[2 * arg]) : words;
    if (e.arch_is_32bit) {
      high_words[arg] = {0};  // the kernel zero-extends a 32-bit task's registers
    } else {
      high_words[arg] = classes_apply ? OnePerClass(words, tests.per_word[2 * arg + 1]) : words;
    }
    if (classes_apply) {
      boundary[arg] = OnePerClassPair(boundary[arg], tests.per_word[2 * arg], tests.per_word[2 * arg + 1]);
    }
  }
  // Every boundary value's halves are among the words, so each used
  // argument's pair set (high x low) holds a value of every boundary class.
  double total = 1;  // evaluations needed; a double cannot overflow here
  for (const auto& b : boundary) total *= static_cast<double>(b.size());
  for (int arg = 0; arg < 6; ++arg) {
    if (!used_arg[arg]) continue;
    double others = 1;
    for (int j = 0; j < 6; ++j) others *= j == arg ? 1.0 : static_cast<double>(boundary[j].size());
    total += static_cast<double>(low_words[arg].size()) * static_cast<double>(high_words[arg].size()) * others;
  }
  if (total > static_cast<double>(kMaxVerifiedCalls)) {
    std::string why = "the rules for " + name + " compare too many distinct values across its arguments for Cocoon "
                      "to verify the compiled filter (" + std::to_string(static_cast<uint64_t>(total)) +
                      " test calls, the limit is " + std::to_string(kMaxVerifiedCalls) +
                      "); use fewer distinct constants or fewer conditional rules on it (a condition on a second "
                      "argument multiplies them)";
    if (too_large == nullptr) return FailedPreconditionError(why);
    if (!mine.empty()) {
      too_large->push_back({name, std::move(why),
                            "Cocoon checks every compiled filter against its rules before emitting it and never "
                            "samples, so a rule set past the check's limit is refused (docs/security.md, "
                            "\"libseccomp 2.5.4's own bugs\")"});
    }
    return Status::Ok();
  }
  if (too_large != nullptr) return Status::Ok();
  std::vector<uint64_t> pairs[6];
  for (int arg = 0; arg < 6; ++arg) {
    for (uint32_t high : high_words[arg]) {
      for (uint32_t low : low_words[arg]) pairs[arg].push_back(uint64_t{high} << 32 | low);
    }
  }
  auto check = [&](const uint64_t (&args)[6]) -> Status {
    SeccompData data;
    data.nr = nr;
    data.arch = e.audit_arch;
    std::copy(std::begin(args), std::end(args), data.args);
    ir::Action want = e.rules.default_action;
    for (const ir::SyscallRule* r : mine) {
      if (ConjunctionMatches(r->conditions, data.args)) want = r->action;  // disjoint across actions
    }
    const uint32_t want_ret = GuardAnswer(e, nr, data.args).value_or(e.expected_ret(want, e.routed));
    COCOON_ASSIGN_OR_RETURN(BpfEvaluation got, EvaluateBpf(program, data));
    if (got.ret == want_ret) return Status::Ok();
    return FailedPreconditionError(
        "libseccomp 2.5.4 miscompiled the rules for " + name + " on " + std::string(e.arch_name) +
        ": " + name + "(" + HexArgsText(data.args) + ") gets " + DescribeSeccompRet(got.ret) + " but the rules say " +
        DescribeSeccompRet(want_ret) + "; refusing to emit this filter. Rewrite the rules for " + name +
        ": split 64-bit ranges so that each bound's upper 32 bits are those of the values it must match, or avoid "
        "mixing range comparisons (<, <=, >, >=) on one argument across rules of different actions");
  };
  std::span<const uint64_t> sets[6];
  for (int arg = 0; arg < 6; ++arg) sets[arg] = boundary[arg];
  COCOON_RETURN_IF_ERROR(ForEachCombination(sets, check));
  for (int arg = 0; arg < 6; ++arg) {
    if (!used_arg[arg]) continue;
    sets[arg] = pairs[arg];
    COCOON_RETURN_IF_ERROR(ForEachCombination(sets, check));
    sets[arg] = boundary[arg];
  }
  return Status::Ok();
}

// One value-keyed guard of the prefix on every architecture of the filter
// (the prefix is ours, not libseccomp's, but it is checked the same way):
// `name`(arg `arg` = each value with junk in the upper half) must get `deny_ret`.
Status VerifyValueGuardAllArches(const BpfProgram& program, const EffectiveSyscalls& rules, const char* name,
                                 int arg, const std::vector<uint32_t>& values, uint32_t deny_ret) {
  for (ir::Arch arch : rules.architectures) {
    const int nr = syscalls::KernelSyscallNumber(name, arch);
    if (nr < 0) continue;
    for (uint32_t value : values) {
      SeccompData data;
      data.nr = nr;
      data.arch = AuditArch(arch);
      data.args[arg] = uint64_t{value} | 0xdead00000000ULL;
      COCOON_ASSIGN_OR_RETURN(BpfEvaluation got, EvaluateBpf(program, data));
      if (got.ret != deny_ret) {
        return InternalError(std::string(name) + " prefix lets " + std::to_string(value) + " through on " +
                             std::string(syscalls::ArchName(arch)) + ": " + DescribeSeccompRet(got.ret));
      }
    }
  }
  return Status::Ok();
}

// The rules (and the prefix's answers) on one architecture of the filter.
// x86_64 is what the enforcer runs; i386 (`arch x86`, through int 0x80) is
// where libseccomp folds socket and IPC rules into the multiplexers, so it is
// checked too, with the zero-extended 32-bit arguments its tasks pass.
Status VerifyArch(const BpfProgram& program, const EffectiveSyscalls& rules,
                  uint32_t (*expected_ret)(const ir::Action&, bool), bool routed, uint32_t ioctl_deny_ret,
                  ir::Arch arch, std::vector<ir::SyscallRuleProblem>* too_large = nullptr,
                  std::string* failed_syscall = nullptr) {
  auto nr_of = [&](const char* name) { return syscalls::KernelSyscallNumber(name, arch); };
  Expectation e{rules, expected_ret, routed, ioctl_deny_ret, AuditArch(arch), syscalls::ArchName(arch),
                arch == ir::Arch::kX86,
                nr_of("ioctl"), nr_of("seccomp"), nr_of("clone"), nr_of("unshare"), nr_of("socket"),
                nr_of("fcntl"), nr_of("fcntl64"), {},
                {SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
                 SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_TSYNC},
                {rules.clone_new_mask_in_prefix, 17 /* SIGCHLD */}};
  for (int bit = 0; bit < 32; ++bit) {
    if ((rules.clone_new_mask_in_prefix >> bit) & 1) e.clone_values.push_back(uint32_t{1} << bit);
  }
  if (rules.i386_multiplexers_in_prefix && arch == ir::Arch::kX86) {
    for (std::string_view name : I386MultiplexerNames()) {
      if (const int nr = syscalls::ResolveSyscall(name, arch); nr >= 0) e.multiplexer_nrs.push_back(nr);
    }
  }
  // (number, rule) pairs, checked by number in ascending order; a null rule
  // stands for a guarded syscall checked even without rules. Negative
  // numbers are libseccomp's pseudo numbers for calls this arch lacks.
  std::vector<std::pair<int, const ir::SyscallRule*>> by_nr;
  by_nr.reserve(rules.rules.size() + 9);
  for (size_t i = 0; i < rules.rules.size();) {
    // A run of rules with one name (ComputeEffectiveSyscalls sorts by name) resolves once.
    const std::string& name = rules.rules[i].name;
    const int nr = syscalls::KernelSyscallNumber(name, arch);
    for (; i < rules.rules.size() && rules.rules[i].name == name; ++i) {
      if (nr >= 0) by_nr.emplace_back(nr, &rules.rules[i]);
    }
  }
  auto check_guarded = [&](bool on, int nr) {
    if (on && nr >= 0) by_nr.emplace_back(nr, nullptr);
  };
  check_guarded(!rules.ioctl_denied_cmds.empty(), e.ioctl_nr);
  check_guarded(rules.seccomp_listener_in_prefix, e.seccomp_nr);
  check_guarded(rules.clone_new_mask_in_prefix != 0, e.clone_nr);
  check_guarded(rules.clone_new_mask_in_prefix != 0, e.unshare_nr);
  check_guarded(!rules.socket_denied_families_in_prefix.empty(), e.socket_nr);
  check_guarded(!rules.fcntl_denied_cmds_in_prefix.empty(), e.fcntl_nr);
  check_guarded(!rules.fcntl_denied_cmds_in_prefix.empty(), e.fcntl64_nr);
  for (int nr : e.multiplexer_nrs) check_guarded(true, nr);
  std::stable_sort(by_nr.begin(), by_nr.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<const ir::SyscallRule*> mine;
  for (size_t i = 0; i < by_nr.size();) {
    const int nr = by_nr[i].first;
    mine.clear();
    for (; i < by_nr.size() && by_nr[i].first == nr; ++i) {
      if (by_nr[i].second != nullptr) mine.push_back(by_nr[i].second);
    }
    if (Status verified = VerifySyscall(program, e, nr, mine, too_large); !verified.ok()) {
      if (failed_syscall != nullptr && !mine.empty()) *failed_syscall = mine.front()->name;
      return verified;
    }
  }
  return Status::Ok();
}

}  // namespace

Status VerifyBpfAgainstRules(const BpfProgram& program, const EffectiveSyscalls& rules,
                             uint32_t (*expected_ret)(const ir::Action&, bool), bool routed,
                             uint32_t ioctl_deny_ret, std::string* failed_syscall) {
  COCOON_RETURN_IF_ERROR(
      VerifyValueGuardAllArches(program, rules, "ioctl", 1, rules.ioctl_denied_cmds, ioctl_deny_ret));
  COCOON_RETURN_IF_ERROR(VerifyValueGuardAllArches(program, rules, "socket", 0, rules.socket_denied_families_in_prefix,
                                                   SocketFamilyDenyRet()));
  // F_SETLEASE on fcntl and (i386) fcntl64: the same answer as ioctl's guard.
  for (const char* name : {"fcntl", "fcntl64"}) {
    COCOON_RETURN_IF_ERROR(
        VerifyValueGuardAllArches(program, rules, name, 1, rules.fcntl_denied_cmds_in_prefix, ioctl_deny_ret));
  }
  // x32 shares AUDIT_ARCH_X86_64 and its numbers carry the x32 bit; aarch64
  // is checked the same way. Each arch once.
  std::set<ir::Arch> arches(rules.architectures.begin(), rules.architectures.end());
  for (ir::Arch arch : arches) {
    COCOON_RETURN_IF_ERROR(
        VerifyArch(program, rules, expected_ret, routed, ioctl_deny_ret, arch, nullptr, failed_syscall));
  }
  return Status::Ok();
}

std::vector<ir::SyscallRuleProblem> UnverifiableSyscalls(const EffectiveSyscalls& rules) {
  std::vector<ir::SyscallRuleProblem> problems;
  std::set<ir::Arch> arches(rules.architectures.begin(), rules.architectures.end());
  for (ir::Arch arch : arches) {
    std::vector<ir::SyscallRuleProblem> found;
    (void)VerifyArch(BpfProgram{}, rules, nullptr, false, 0, arch, &found);  // size only: cannot fail
    for (auto& problem : found) {
      const bool seen = std::any_of(problems.begin(), problems.end(),
                                    [&](const ir::SyscallRuleProblem& p) { return p.syscall == problem.syscall; });
      if (!seen) problems.push_back(std::move(problem));
    }
  }
  return problems;
}

}  // namespace cocoon::backends
