#include "compiler/backends/seccomp/seccomp_backend.h"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>

#include "compiler/backends/seccomp/bpf_dispatch.h"
#include "compiler/backends/seccomp/bpf_peephole.h"
#include "compiler/backends/seccomp/child_deadline.h"
#include "compiler/backends/seccomp/guard_inline.h"
#include "compiler/backends/seccomp/guard_prefix.h"
#include "compiler/backends/seccomp/seccomp_verify.h"
#include "compiler/common/digest.h"
#include "compiler/syscalls/syscall_groups.h"

namespace cocoon::backends {
namespace {

using ir::ActionKind;

struct ContextDeleter {
  void operator()(void* ctx) const { seccomp_release(ctx); }
};
using Context = std::unique_ptr<void, ContextDeleter>;

bool IsSupervised(ActionKind kind) {
  return kind == ActionKind::kLog || kind == ActionKind::kNotify || kind == ActionKind::kKillProcess;
}

uint32_t ToScmpAction(const ir::Action& action, SupervisedRouting routing) {
  if (routing == SupervisedRouting::kRouteToNotify && IsSupervised(action.kind)) return SCMP_ACT_NOTIFY;
  switch (action.kind) {
    case ActionKind::kAllow: return SCMP_ACT_ALLOW;
    case ActionKind::kErrno: return SCMP_ACT_ERRNO(static_cast<uint16_t>(action.errno_value));
    case ActionKind::kKillProcess: return SCMP_ACT_KILL_PROCESS;
    case ActionKind::kLog: return SCMP_ACT_LOG;
    case ActionKind::kNotify: return SCMP_ACT_NOTIFY;
    case ActionKind::kTrap: return SCMP_ACT_TRAP;
  }
  return SCMP_ACT_KILL_PROCESS;
}

// What the guard prefix returns (the prologue's EPERM).
constexpr uint32_t kPrefixDenyRet = SECCOMP_RET_ERRNO | EPERM;

// libseccomp's SCMP_ACT_* values are the kernel's SECCOMP_RET_* values.
uint32_t ExpectedRet(const ir::Action& action, bool routed) {
  return ToScmpAction(action, routed ? SupervisedRouting::kRouteToNotify : SupervisedRouting::kNative);
}

scmp_compare ToScmpOp(ir::CompareOp op) {
  switch (op) {
    case ir::CompareOp::kEq: return SCMP_CMP_EQ;
    case ir::CompareOp::kNe: return SCMP_CMP_NE;
    case ir::CompareOp::kLt: return SCMP_CMP_LT;
    case ir::CompareOp::kLe: return SCMP_CMP_LE;
    case ir::CompareOp::kGt: return SCMP_CMP_GT;
    case ir::CompareOp::kGe: return SCMP_CMP_GE;
    case ir::CompareOp::kMaskedEq: return SCMP_CMP_MASKED_EQ;
  }
  return SCMP_CMP_EQ;
}

scmp_arg_cmp ToScmpCondition(const ir::ArgCondition& c) {
  scmp_arg_cmp cmp{};
  cmp.arg = c.arg;
  cmp.op = ToScmpOp(c.op);
  // SCMP_CMP_MASKED_EQ takes (mask, value); the others (value, unused).
  cmp.datum_a = c.op == ir::CompareOp::kMaskedEq ? c.mask : c.value;
  cmp.datum_b = c.op == ir::CompareOp::kMaskedEq ? c.value : 0;
  return cmp;
}

// libseccomp 2.5.4 has no seccomp_export_bpf_mem: export to a memfd and read
// it back (the same trick crun uses with a temporary file).
Result<std::string> ExportToString(const scmp_filter_ctx ctx, int (*exporter)(const scmp_filter_ctx, int),
                                   const char* what) {
  const int fd = memfd_create(what, MFD_CLOEXEC);
  if (fd < 0) return ErrnoError(std::string("memfd_create for ") + what);
  std::string out;
  int rc = exporter(ctx, fd);
  if (rc < 0) {
    close(fd);
    return InternalError(std::string("libseccomp export of ") + what + " failed: " + std::strerror(-rc));
  }
  const off_t size = lseek(fd, 0, SEEK_END);
  out.resize(size > 0 ? static_cast<size_t>(size) : 0);
  size_t done = 0;
  while (done < out.size()) {
    const ssize_t n = pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
    if (n <= 0) {
      close(fd);
      return ErrnoError(std::string("reading back ") + what);
    }
    done += static_cast<size_t>(n);
  }
  close(fd);
  return out;
}

// Whether the native architecture stays in a filter whose list omits it.
// Cocoon's own filter has exactly the policy's architectures; runc and crun
// only ever seccomp_arch_add the listed ones, so the native one stays.
enum class NativeArch { kOnlyIfListed, kAlwaysKept };

Status SetArchitectures(scmp_filter_ctx ctx, const std::vector<ir::Arch>& arches,
                        NativeArch native_arch = NativeArch::kOnlyIfListed) {
  if (arches.empty()) return InvalidArgumentError("seccomp filter with no architecture");
  for (ir::Arch arch : arches) {
    const uint32_t token = syscalls::ScmpArchToken(arch);
    if (seccomp_arch_exist(ctx, token) == 0) continue;
    const int rc = seccomp_arch_add(ctx, token);
    if (rc < 0) return InternalError("seccomp_arch_add(" + std::string(syscalls::ArchName(arch)) + "): " +
                                     std::strerror(-rc));
  }
  const uint32_t native = seccomp_arch_native();
  const bool keep_native = std::any_of(arches.begin(), arches.end(),
                                       [&](ir::Arch a) { return syscalls::ScmpArchToken(a) == native; });
  if (!keep_native && native_arch == NativeArch::kOnlyIfListed) seccomp_arch_remove(ctx, native);
  return Status::Ok();
}

PrefixGuards Guards(const EffectiveSyscalls& rules) {
  return PrefixGuards{rules.ioctl_denied_cmds, rules.seccomp_listener_in_prefix, rules.clone_new_mask_in_prefix,
                      rules.socket_denied_families_in_prefix, rules.i386_multiplexers_in_prefix,
                      rules.fcntl_denied_cmds_in_prefix};
}

// The guarded syscalls (guard_prefix.h) by name.
std::vector<std::string_view> GuardedNames(const PrefixGuards& guards) {
  std::vector<std::string_view> out;
  GuardKind kind;
  for (std::string_view name : {"ioctl", "seccomp", "clone", "unshare", "socket", "fcntl", "fcntl64"}) {
    if (GuardFor(name, guards, &kind)) out.push_back(name);
  }
  return out;
}

// The inline placement (guard_inline.h) must give exactly the prefix's
// answers, so every call of a guarded syscall has to reach a marker: the
// syscall has no rule (AddRules then adds an unconditional marker rule for
// the default), or an unconditional one (after ComputeEffectiveSyscalls,
// the only one with effect: libseccomp lets it swallow the others). A
// guarded syscall with conditional rules only keeps the prefix. The i386
// multiplexer refusal has no inline form (libseccomp folds the socket and
// IPC rules into the multiplexers, so no marker of ours sits on every path
// to them): with it, the prefix.
bool InlineEligible(const EffectiveSyscalls& rules) {
  const PrefixGuards guards = Guards(rules);
  if (guards.empty() || guards.i386_multiplexers) return false;
  for (std::string_view name : GuardedNames(guards)) {
    bool any = false, unconditional = false;
    for (const ir::SyscallRule& r : rules.rules) {
      if (r.name != name) continue;
      any = true;
      unconditional |= r.conditions.empty();
    }
    if (any && !unconditional) return false;
  }
  return true;
}

// One libseccomp rule, resolved: what AddRules hands to seccomp_rule_add_array.
struct PendingRule {
  int nr = 0;
  uint32_t action = 0;
  const char* name = nullptr;  // NUL-terminated: a rule's name or a literal
  const std::vector<ir::ArgCondition>* conditions = nullptr;
};

Status AppendRule(std::vector<PendingRule>& out, uint32_t action, const char* name,
                  const std::vector<ir::ArgCondition>& conditions) {
  const int nr = seccomp_syscall_resolve_name(name);
  if (nr == __NR_SCMP_ERROR) return InvalidArgumentError(std::string("syscall unknown to libseccomp: ") + name);
  out.push_back({nr, action, name, &conditions});
  return Status::Ok();
}

// Insertion order. libseccomp 2.5.4 keeps each arch's syscalls in a list
// sorted by number and finds a rule's place by walking it from the lowest
// number (src/db.c db_rule_add, once for the filter and once for its shadow
// transaction), so adding in ascending order walks the whole list every
// time. Adding the highest number first makes each walk stop at the head.
// The result does not depend on this order: the lists stay sorted by
// number, and each syscall still receives its own rules in their original
// order (stable sort), so its argument tree is built the same way. Not for
// x86 (32-bit): there libseccomp folds the socket and IPC calls into
// socketcall/ipc rules (src/arch-x86.c), where rules of different names
// share one tree, so their relative order is kept as it was.
void OrderForInsertion(std::vector<PendingRule>& pending, const std::vector<ir::Arch>& arches) {
  if (std::find(arches.begin(), arches.end(), ir::Arch::kX86) != arches.end()) return;
  // The list is ordered by `unsigned int num`: libseccomp's pseudo-syscall
  // numbers (negative, for names this arch lacks) sort last, so compare unsigned.
  std::stable_sort(pending.begin(), pending.end(), [](const PendingRule& a, const PendingRule& b) {
    return static_cast<uint32_t>(a.nr) > static_cast<uint32_t>(b.nr);
  });
}

Status AddPending(scmp_filter_ctx ctx, const PendingRule& rule) {
  std::vector<scmp_arg_cmp> scmp;
  scmp.reserve(rule.conditions->size());
  for (const ir::ArgCondition& c : *rule.conditions) scmp.push_back(ToScmpCondition(c));
  const int rc = seccomp_rule_add_array(ctx, rule.action, rule.nr, static_cast<unsigned>(scmp.size()), scmp.data());
  if (rc < 0) return InternalError(std::string("libseccomp refused the rule for ") + rule.name + ": " + std::strerror(-rc));
  return Status::Ok();
}

// kFastest: OrderForInsertion's order (Cocoon's own filter). kAsGiven: the
// order of `rules.rules`, as an OCI runtime adds a profile's entries.
enum class InsertionOrder { kFastest, kAsGiven };

// The rules in the order they are added to libseccomp. `markers` (null:
// none) receives the guard markers of guard_inline.h: each rule of a guarded
// syscall gets a marker action instead of its own, and a guarded syscall
// without rules gets an unconditional marker rule for the default action.
// Markers are numbered in rule order, before the rules are reordered for
// insertion.
Result<std::vector<PendingRule>> PendingRules(const EffectiveSyscalls& rules, SupervisedRouting routing,
                                              GuardMarkers* markers,
                                              InsertionOrder order = InsertionOrder::kFastest) {
  static const std::vector<ir::ArgCondition> kNoConditions;
  const uint32_t default_action = ToScmpAction(rules.default_action, routing);
  const PrefixGuards guards = Guards(rules);
  std::vector<PendingRule> pending;
  pending.reserve(rules.rules.size() + 5);
  if (markers != nullptr) {
    for (std::string_view name : GuardedNames(guards)) {
      const bool has_rule = std::any_of(rules.rules.begin(), rules.rules.end(),
                                        [&](const ir::SyscallRule& r) { return r.name == name; });
      GuardKind kind;
      GuardFor(name, guards, &kind);
      if (has_rule) continue;
      // `name` views one of GuardedNames' string literals: NUL-terminated.
      COCOON_RETURN_IF_ERROR(AppendRule(pending, markers->Marker(kind, default_action), name.data(), kNoConditions));
    }
  }
  if (rules.i386_multiplexers_in_prefix) {
    // libseccomp folds every socket and SysV IPC rule into a socketcall/ipc
    // rule `arg0 == SYS_...` with the call's own conditions dropped
    // (src/arch-x86.c), so two rules of one call with different actions
    // (`allow socket` beside `deny socket if arg0 == AF_NETLINK`) become one
    // condition with two actions, and libseccomp refuses the second with
    // EEXIST. An unconditional multiplexer rule added first absorbs the folded
    // ones (an unconditional rule swallows a syscall's conditional rules, see
    // rule_algebra.h). Its action is never reached: the guard prefix answers
    // both multiplexers first (MultiplexerDenyRet).
    const uint32_t absorbing = default_action == kPrefixDenyRet ? MultiplexerDenyRet() : kPrefixDenyRet;
    for (std::string_view name : I386MultiplexerNames()) {
      // `name` views a string literal: NUL-terminated.
      COCOON_RETURN_IF_ERROR(AppendRule(pending, absorbing, name.data(), kNoConditions));
    }
  }
  for (const ir::SyscallRule& rule : rules.rules) {
    uint32_t action = ToScmpAction(rule.action, routing);
    GuardKind kind;
    if (markers != nullptr && GuardFor(rule.name, guards, &kind)) {
      action = markers->Marker(kind, action);
    }
    // After routing, a supervised rule may share the (routed) default's
    // kernel action; libseccomp rejects that with -EACCES and the rule is
    // redundant in the BPF anyway (the sidecar still lists it).
    if (action == default_action) continue;
    COCOON_RETURN_IF_ERROR(AppendRule(pending, action, rule.name.c_str(), rule.conditions));
  }
  if (order == InsertionOrder::kFastest) OrderForInsertion(pending, rules.architectures);
  return pending;
}

// A rule libseccomp refuses names its syscall in `*refused_syscall` (when
// non-null), so the refusal is reported at the policy's rule.
Status AddRules(scmp_filter_ctx ctx, const EffectiveSyscalls& rules, SupervisedRouting routing,
                GuardMarkers* markers, std::string* refused_syscall) {
  COCOON_ASSIGN_OR_RETURN(std::vector<PendingRule> pending, PendingRules(rules, routing, markers));
  for (const PendingRule& rule : pending) {
    if (Status added = AddPending(ctx, rule); !added.ok()) {
      if (refused_syscall != nullptr) *refused_syscall = rule.name;
      return added;
    }
  }
  return Status::Ok();
}

// How long the rules that may make libseccomp loop (child_deadline.h) get to
// be added in the throwaway child: adding 1024 rules to one syscall, the
// most a policy can give it (effective_rules.cc), takes milliseconds.
constexpr std::chrono::milliseconds kLibseccompDeadline{3000};

// libseccomp's loop needs a syscall with two or more rules, one of them with
// conditions on two or more arguments (measured on random rule sets added
// straight to libseccomp 2.5.4: 10 of 1400 multi-argument sets looped, none
// of 3000 sets of one-argument rules). Those syscalls' rules are added
// first in a child process; the name of a syscall whose rules do not finish
// is returned in `*looping`. Nothing else forks. On x86 (32-bit) libseccomp
// rewrites the socket and IPC calls into socketcall/ipc rules with a
// condition of its own on arg0 (src/arch-x86.c), so one-argument rules of
// several names meet in one multi-argument tree: there every rule goes
// through the child, in the real order.
//
// `pending` is what the real build adds, in its order, to a filter made by
// seccomp_init(`default_action`) with the architectures `arches`.
Status CheckPendingFinishes(const std::vector<PendingRule>& pending, uint32_t default_action,
                            const EffectiveSyscalls& rules, NativeArch native_arch, std::string* looping) {
  const bool x86 = std::find(rules.architectures.begin(), rules.architectures.end(), ir::Arch::kX86) !=
                   rules.architectures.end();
  std::map<int, std::pair<size_t, bool>> shape;  // nr -> (rules, one has conditions on 2+ arguments)
  for (const PendingRule& rule : pending) {
    auto& [count, multi_argument] = shape[rule.nr];
    ++count;
    multi_argument = multi_argument || rule.conditions->size() >= 2;
  }
  std::vector<const PendingRule*> risky;
  for (const PendingRule& rule : pending) {
    const auto& [count, multi_argument] = shape[rule.nr];
    if (x86 || (count >= 2 && multi_argument)) risky.push_back(&rule);
  }
  if (risky.empty()) return Status::Ok();
  auto add = [&](const std::function<void(const char*)>& progress) {
    Context ctx(seccomp_init(default_action));
    if (!ctx || !SetArchitectures(ctx.get(), rules.architectures, native_arch).ok()) _exit(3);
    int last_nr = -1;
    for (const PendingRule* rule : risky) {
      if (rule->nr != last_nr) progress(rule->name), last_nr = rule->nr;
      (void)AddPending(ctx.get(), *rule);  // refusals surface in the real build
    }
  };
  std::string stuck_at;
  Status finished = RunInChildWithDeadline(add, kLibseccompDeadline, &stuck_at);
  if (finished.code() == ErrorCode::kResourceExhausted && looping != nullptr) *looping = stuck_at;
  if (!finished.ok() && finished.code() != ErrorCode::kResourceExhausted) {
    return InternalError("adding the rules" + (stuck_at.empty() ? "" : " for " + stuck_at) +
                         " to libseccomp in a child process failed: " + finished.message());
  }
  return finished;
}

Status CheckLibseccompFinishes(const EffectiveSyscalls& rules, SupervisedRouting routing, std::string* looping) {
  GuardMarkers markers;  // numbered as the real build numbers them
  COCOON_ASSIGN_OR_RETURN(std::vector<PendingRule> pending,
                          PendingRules(rules, routing, InlineEligible(rules) ? &markers : nullptr));
  return CheckPendingFinishes(pending, ToScmpAction(rules.default_action, routing), rules, NativeArch::kOnlyIfListed,
                              looping);
}

std::string LibseccompLoopMessage(const std::string& syscall, const Status& why) {
  return "libseccomp 2.5.4 cannot build the rules for " + syscall + " (adding them " + why.message() +
         "; it loops on some rule sets with conditions on two or more arguments); write the rules for " + syscall +
         " with fewer conditions on a second argument (each `in {...}` or `or` is one rule per value)";
}

struct Built {
  std::string bpf;
  std::string pfc;
  BpfPathStats stats;             // the chosen program
  BpfPathStats libseccomp_stats;  // libseccomp's program alone
  size_t prefix_instructions = 0;
  bool inline_guards = false;     // guard_inline.h placement chosen
  BpfPathStats prefix_stats;      // the prefix placement (always built)
  BpfPathStats inline_stats;      // the inline placement (0s when not eligible)
};

// The guard prefix (guard_prefix.h) in front of libseccomp's program.
Result<BpfProgram> PrependGuardPrefix(const EffectiveSyscalls& rules, const BpfProgram& libseccomp,
                                      size_t* prefix_instructions) {
  COCOON_ASSIGN_OR_RETURN(BpfProgram program,
                          BuildGuardPrefix(rules.architectures, Guards(rules), kPrefixDenyRet));
  *prefix_instructions = program.size();
  program.insert(program.end(), libseccomp.begin(), libseccomp.end());
  return program;
}

// Both placements from one libseccomp export (markers in `exported`); keeps
// the one with the shorter worst case to an allow (the inline one on a tie:
// it is also shorter in total). The kernel's load-time checks on the result.
Result<BpfProgram> PlaceGuards(const EffectiveSyscalls& rules, const GuardMarkers& markers, const BpfProgram& exported,
                               Built& built) {
  COCOON_ASSIGN_OR_RETURN(BpfProgram libseccomp, markers.Strip(exported));
  COCOON_ASSIGN_OR_RETURN(BpfProgram prefixed, PrependGuardPrefix(rules, libseccomp, &built.prefix_instructions));
  built.prefix_stats = AnalyzeBpf(prefixed);
  BpfProgram chosen = std::move(prefixed);
  if (InlineEligible(rules)) {
    COCOON_ASSIGN_OR_RETURN(BpfProgram inlined, markers.Inline(exported, Guards(rules), kPrefixDenyRet));
    built.inline_stats = AnalyzeBpf(inlined);
    if (built.inline_stats.worst_case_allow <= built.prefix_stats.worst_case_allow) {
      chosen = std::move(inlined);
      built.inline_guards = true;
      built.prefix_instructions = 0;
    }
  }
  COCOON_RETURN_IF_ERROR(ValidateBpf(chosen).WithContext("guarded libseccomp program is invalid"));
  built.stats = built.inline_guards ? built.inline_stats : built.prefix_stats;
  return chosen;
}

Result<Built> BuildAtLevel(const EffectiveSyscalls& rules, SupervisedRouting routing, int level,
                           std::string* refused_syscall) {
  Context ctx(seccomp_init(ToScmpAction(rules.default_action, routing)));
  if (!ctx) return InternalError("seccomp_init failed");
  // Foreign architectures (and, for x86_64, numbers with the x32 bit, see
  // libseccomp src/gen_bpf.c _gen_bpf_arch) get this action: set it
  // explicitly instead of trusting the library default.
  if (seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) < 0 ||
      seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_OPTIMIZE, static_cast<uint32_t>(level)) < 0) {
    return InternalError("setting libseccomp filter attributes failed");
  }
  // The child is single-threaded when it loads the filter: no TSYNC needed.
  COCOON_RETURN_IF_ERROR(SetArchitectures(ctx.get(), rules.architectures));
  GuardMarkers markers;
  COCOON_RETURN_IF_ERROR(
      AddRules(ctx.get(), rules, routing, InlineEligible(rules) ? &markers : nullptr, refused_syscall));
  Built built;
  COCOON_ASSIGN_OR_RETURN(built.bpf, ExportToString(ctx.get(), seccomp_export_bpf, "cocoon-seccomp-bpf"));
  COCOON_ASSIGN_OR_RETURN(built.pfc, ExportToString(ctx.get(), seccomp_export_pfc, "cocoon-seccomp-pfc"));
  COCOON_ASSIGN_OR_RETURN(BpfProgram exported, ParseBpf(built.bpf));
  COCOON_RETURN_IF_ERROR(ValidateBpf(exported).WithContext("libseccomp emitted an invalid program"));
  {  // libseccomp's own program, as exported (the reference issue 3 compares against)
    COCOON_ASSIGN_OR_RETURN(BpfProgram raw, markers.Strip(exported));
    built.libseccomp_stats = AnalyzeBpf(raw);
  }
  exported = RemoveRedundantInstructions(exported);
  COCOON_ASSIGN_OR_RETURN(BpfProgram program, PlaceGuards(rules, markers, exported, built));
  const size_t before_dispatch = program.size();
  if (std::optional<BpfProgram> compressed = CompressSyscallDispatch(program)) {
    program = std::move(*compressed);
    built.stats = AnalyzeBpf(program);
  }
  built.bpf.assign(reinterpret_cast<const char*>(program.data()), program.size() * sizeof(sock_filter));
  built.pfc += markers.Describe(Guards(rules), kPrefixDenyRet);
  built.pfc += DescribeGuardPrefix(rules.architectures, Guards(rules), kPrefixDenyRet,
                                   built.prefix_instructions);
  if (program.size() != before_dispatch) {
    built.pfc += "#\n# The syscall-number tree above is emitted as a search over number ranges\n"
                 "# (compiler/backends/seccomp/bpf_dispatch.h): same actions, " +
                 std::to_string(program.size()) + " instructions instead of " + std::to_string(before_dispatch) +
                 ".\n";
  }
  // Never fail open: whatever the rules, the program's last word is a deny.
  const sock_filter& last = program.back();
  const uint32_t last_action = last.k & SECCOMP_RET_ACTION_FULL;
  if (BPF_RVAL(last.code) != BPF_K || last_action == SECCOMP_RET_ALLOW || last_action == SECCOMP_RET_LOG) {
    return InternalError("seccomp program does not end in a deny");
  }
  COCOON_RETURN_IF_ERROR(VerifyBpfAgainstRules(program, rules, ExpectedRet,
                                               routing == SupervisedRouting::kRouteToNotify, kPrefixDenyRet,
                                               refused_syscall));
  return built;
}

// Below this many distinct syscalls a priority-ordered if-chain can beat
// libseccomp's binary tree on the worst case (a chain costs ~2 instructions
// per syscall, the tree ~2 per level plus its range checks); kAuto then
// builds both and keeps the shorter. Strict-sized filters (~300 syscalls)
// build the tree only.
constexpr size_t kLinearCanWinBelow = 32;

size_t DistinctSyscalls(const EffectiveSyscalls& rules) {
  std::set<std::string_view> names;
  for (const ir::SyscallRule& r : rules.rules) names.insert(r.name);
  return names.size();
}

bool Permissive(const ir::Action& action) {
  return action.kind == ActionKind::kAllow || action.kind == ActionKind::kLog;
}

// A filter whose default allows is emitted only when the policy wrote `default allow`.
bool RefusesPermissiveDefault(const ir::Action& default_action, const SeccompFilterOptions& options) {
  return Permissive(default_action) && options.default_allowance != DefaultAllowance::kPolicyExplicit;
}

// What ComputeEffectiveSyscalls refused, and what the verifier could not
// check completely, one problem per syscall (SyscallRuleProblems).
std::vector<ir::SyscallRuleProblem> RuleProblems(const EffectiveSyscalls& rules) {
  std::vector<ir::SyscallRuleProblem> problems;
  for (const EffectiveSyscalls::Error& error : rules.errors) problems.push_back({error.syscall, error.message, {}});
  // What compiles but cannot be verified is refused by the compiler
  // (seccomp_verify.h): reported here too, so that a policy that checks compiles.
  for (ir::SyscallRuleProblem& problem : UnverifiableSyscalls(rules)) {
    bool reported = std::any_of(problems.begin(), problems.end(),
                                [&](const ir::SyscallRuleProblem& p) { return p.syscall == problem.syscall; });
    if (!reported) problems.push_back(std::move(problem));
  }
  return problems;
}

// The options CompileSeccomp builds the policy's filter with.
SeccompFilterOptions FilterOptionsFor(const ir::Policy& policy) {
  SeccompFilterOptions options;
  options.default_allowance = policy.syscalls.default_explicitly_allows ? DefaultAllowance::kPolicyExplicit
                                                                        : DefaultAllowance::kRefuse;
  return options;
}

}  // namespace

Result<CompiledSeccompFilter> BuildSeccompFilter(const EffectiveSyscalls& rules,
                                                 const SeccompFilterOptions& options, std::string* refused_syscall) {
  if (!rules.errors.empty()) return InvalidArgumentError(rules.errors.front().message);
  if (RefusesPermissiveDefault(rules.default_action, options)) {
    return FailedPreconditionError(
        "refusing to emit a seccomp filter whose default action allows: the policy must say `default allow` "
        "itself");
  }
  std::string looping;
  if (Status finishes = CheckLibseccompFinishes(rules, options.routing, &looping); !finishes.ok()) {
    if (looping.empty()) return finishes;
    if (refused_syscall != nullptr) *refused_syscall = looping;
    return FailedPreconditionError(LibseccompLoopMessage(looping, finishes));
  }
  CompiledSeccompFilter out;
  std::optional<Built> linear, tree;
  Status linear_status, tree_status;
  std::string linear_refused, tree_refused;  // the syscall each layout's verification refused
  if (options.optimization != TreeOptimization::kLinear) {
    Result<Built> built = BuildAtLevel(rules, options.routing, 2, &tree_refused);
    if (built.ok()) tree = std::move(built).value();
    else tree_status = built.status();
  }
  // kAuto builds the linear layout only where it can win (few syscalls: the
  // tree's bisection then costs more than it saves) or as the fallback when
  // the tree failed translation validation; each build is a full libseccomp
  // export plus verification, the bulk of compile time.
  const bool want_linear = options.optimization == TreeOptimization::kLinear ||
                           (options.optimization == TreeOptimization::kAuto &&
                            (!tree || DistinctSyscalls(rules) < kLinearCanWinBelow));
  if (want_linear) {
    Result<Built> built = BuildAtLevel(rules, options.routing, 1, &linear_refused);
    if (built.ok()) linear = std::move(built).value();
    else linear_status = built.status();
  }
  // A layout that failed verification is dropped; with none left, refuse.
  if (!linear && !tree) {
    // The failure that names a syscall says more (a miscompile over, say, a
    // layout past 4096 instructions); the linear layout's first.
    const bool use_linear = !linear_status.ok() && (!linear_refused.empty() || tree_refused.empty());
    if (refused_syscall != nullptr) *refused_syscall = use_linear ? linear_refused : tree_refused;
    return use_linear ? linear_status : tree_status;
  }
  if (linear) out.linear_stats = linear->stats;
  if (tree) out.binary_tree_stats = tree->stats;
  // Prefer the tree only when it shortens the worst case for an allowed call.
  const bool use_tree = tree && (!linear || tree->stats.worst_case_allow < linear->stats.worst_case_allow);
  Built& chosen = use_tree ? *tree : *linear;
  out.optimize_level = use_tree ? 2 : 1;
  out.bpf = std::move(chosen.bpf);
  out.pfc = std::move(chosen.pfc);
  out.stats = chosen.stats;
  out.libseccomp_stats = chosen.libseccomp_stats;
  out.prefix_instructions = chosen.prefix_instructions;
  out.guards_inline = chosen.inline_guards;
  out.prefix_placement_stats = chosen.prefix_stats;
  out.inline_placement_stats = chosen.inline_stats;
  out.needs_listener = options.routing == SupervisedRouting::kRouteToNotify &&
                       (IsSupervised(rules.default_action.kind) ||
                        std::any_of(rules.rules.begin(), rules.rules.end(),
                                    [](const ir::SyscallRule& r) { return IsSupervised(r.action.kind); }));
  if (options.routing == SupervisedRouting::kNative) {
    out.needs_listener = rules.default_action.kind == ActionKind::kNotify ||
                         std::any_of(rules.rules.begin(), rules.rules.end(), [](const ir::SyscallRule& r) {
                           return r.action.kind == ActionKind::kNotify;
                         });
  }
  return out;
}

Status VerifyRuntimeBuild(const EffectiveSyscalls& rules, std::string* failed_syscall) {
  if (!rules.errors.empty()) return InvalidArgumentError(rules.errors.front().message);
  const uint32_t default_action = ToScmpAction(rules.default_action, SupervisedRouting::kNative);
  // What the runtime adds, in the profile's order; a rule with the default's
  // action is skipped, as both runtimes skip such an entry.
  COCOON_ASSIGN_OR_RETURN(std::vector<PendingRule> pending,
                          PendingRules(rules, SupervisedRouting::kNative, nullptr, InsertionOrder::kAsGiven));
  std::string looping;
  if (Status finishes = CheckPendingFinishes(pending, default_action, rules, NativeArch::kAlwaysKept, &looping);
      !finishes.ok()) {
    if (looping.empty()) return finishes;
    if (failed_syscall != nullptr) *failed_syscall = looping;
    return FailedPreconditionError(LibseccompLoopMessage(looping, finishes));
  }
  // No attribute is set: the runtimes leave libseccomp's defaults (optimize
  // level 1, the bad-arch action), and the rules' code depends on neither
  // the bad-arch action nor anything else they could set.
  Context ctx(seccomp_init(default_action));
  if (!ctx) return InternalError("seccomp_init failed");
  COCOON_RETURN_IF_ERROR(SetArchitectures(ctx.get(), rules.architectures, NativeArch::kAlwaysKept));
  for (const PendingRule& rule : pending) {
    if (Status added = AddPending(ctx.get(), rule); !added.ok()) {
      if (failed_syscall != nullptr) *failed_syscall = rule.name;
      return FailedPreconditionError(added.message() + " (the runtime would refuse the whole profile)");
    }
  }
  COCOON_ASSIGN_OR_RETURN(std::string bpf, ExportToString(ctx.get(), seccomp_export_bpf, "cocoon-runtime-bpf"));
  COCOON_ASSIGN_OR_RETURN(BpfProgram program, ParseBpf(bpf));
  // The linear layout is longer than Cocoon's own filter (no range dispatch,
  // guards as rules): past the kernel's limit the runtime fails to load it.
  if (program.size() > BPF_MAXINSNS) {
    return FailedPreconditionError("libseccomp builds it as " + std::to_string(program.size()) +
                                   " BPF instructions, past the kernel's limit of " +
                                   std::to_string(BPF_MAXINSNS) + " (BPF_MAXINSNS), so the runtime would fail to "
                                   "start the container");
  }
  COCOON_RETURN_IF_ERROR(ValidateBpf(program).WithContext("libseccomp emitted an invalid program"));
  return VerifyBpfAgainstRules(program, rules, ExpectedRet, /*routed=*/false, kPrefixDenyRet, failed_syscall);
}

void PrepareLibseccompForThreads() {
  // seccomp_api_get() runs _seccomp_api_update() once per process: it
  // probes seccomp(2) and, level by level, the TSYNC, LOG, KILL_PROCESS,
  // SPEC_ALLOW, NEW_LISTENER, USER_NOTIF and TSYNC_ESRCH support, stopping
  // at the first level the kernel lacks. At level 6 every probe a compile
  // can reach is done.
  if (seccomp_api_get() >= 6) return;
  // Below it, the probes a compile can still reach are the actions checked
  // by seccomp_init/seccomp_rule_add (db_col_action_valid) and, for a
  // notify rule, the TSYNC_ESRCH flag (src/db.c): make them here.
  for (uint32_t action : {SCMP_ACT_KILL_PROCESS, SCMP_ACT_LOG, SCMP_ACT_NOTIFY}) {
    if (scmp_filter_ctx probe = seccomp_init(action)) seccomp_release(probe);
  }
  Context probe(seccomp_init(SCMP_ACT_ERRNO(ENOSYS)));
  if (probe) (void)seccomp_rule_add(probe.get(), SCMP_ACT_NOTIFY, SCMP_SYS(getpid), 0);
}

ConnectRouting SeccompConnectRouting(const ir::Policy& policy) {
  // Allow-lists: connect goes to the enforcer's broker (effective_rules.h).
  return policy.network.mode == ir::NetworkMode::kAllowList ? ConnectRouting::kSupervisor : ConnectRouting::kFilter;
}

// SeccompCompileInput is a cache key for compiled filters: a field added to
// these structs and left out of it would let two different rule sets share
// one filter. This check makes such a change fail to compile until the
// field is considered there.
static_assert(sizeof(ir::Syscalls) == 88 && sizeof(ir::SyscallRule) == 96 && sizeof(ir::ArgCondition) == 24 &&
                  sizeof(ir::Action) == 8,
              "ir::Syscalls changed: add the new field to SeccompCompileInput, then update these sizes");

std::string SeccompCompileInput(const ir::Policy& policy) {
  // Appended piece by piece, without a temporary string per number: `cocoon
  // check` makes this text for every profile (FilterBuildProblemsMemo).
  const ir::Syscalls& syscalls = policy.syscalls;
  std::string text;
  text.reserve(64 + syscalls.rules.size() * 64);
  auto number = [&text](auto n) {  // as std::to_string writes it
    char digits[24];
    text.append(digits, std::to_chars(digits, digits + sizeof digits, n).ptr);
  };
  auto action = [&](const ir::Action& a) {
    number(static_cast<int>(a.kind));
    text += '/';
    number(a.errno_value);
  };
  auto sized = [&](const std::string& s) {  // length-prefixed: unambiguous whatever it holds
    number(s.size());
    text += ':';
    text += s;
  };
  text += "cocoon-seccomp-input-v2\nrouting ";
  number(static_cast<int>(SeccompConnectRouting(policy)));
  text += "\nnetlink ";  // the prologue refuses AF_NETLINK unless the network is on
  number(static_cast<int>(EnforcerNetlinkSocketsFor(policy.network)));
  text += "\ndefault ";
  action(syscalls.default_action);
  text += syscalls.default_explicitly_allows ? " explicit\n" : "\n";
  for (ir::Arch arch : syscalls.architectures) {
    text += "arch ";
    number(static_cast<int>(arch));
    text += '\n';
  }
  for (const std::string& name : syscalls.reopened) text += "reopened " + name + "\n";
  for (const ir::SyscallRule& rule : syscalls.rules) {
    text += "rule ";
    sized(rule.name);
    text += ' ';
    action(rule.action);
    text += " group ";
    sized(rule.group);
    for (const ir::ArgCondition& c : rule.conditions) {
      text += " arg";
      number(static_cast<int>(c.arg));
      text += ' ';
      number(static_cast<int>(c.op));
      text += ' ';
      number(c.value);
      text += ' ';
      number(c.mask);
    }
    text += '\n';
  }
  return text;
}

std::vector<ir::SyscallRuleProblem> FilterBuildProblems(const ir::Policy& policy) {
  EffectiveSyscalls rules =
      ComputeEffectiveSyscalls(policy.syscalls, PrologueGuardForm::kBpfPrefix, SeccompConnectRouting(policy),
                               EnforcerNetlinkSocketsFor(policy.network));
  std::vector<ir::SyscallRuleProblem> problems = RuleProblems(rules);
  const SeccompFilterOptions options = FilterOptionsFor(policy);
  // A permissive default the policy did not write is refused by the
  // compiler for the filter as a whole; the policy checker says so itself.
  if (!problems.empty() || RefusesPermissiveDefault(rules.default_action, options)) return problems;
  std::string refused;  // empty: about no one syscall, reported at the profile
  Result<CompiledSeccompFilter> built = BuildSeccompFilter(rules, options, &refused);
  if (!built.ok()) {
    problems.push_back({refused, built.status().message(),
                        "libseccomp 2.5.4 cannot compile every rule set correctly; Cocoon refuses rather than emit "
                        "a wrong filter (docs/security.md, \"libseccomp 2.5.4's own bugs\")"});
  }
  return problems;
}

std::vector<ir::SyscallRuleProblem> FilterBuildProblemsMemo::operator()(const ir::Policy& policy) {
  auto [it, inserted] = by_input_.try_emplace(Sha256Hex(SeccompCompileInput(policy)));
  if (inserted) it->second = FilterBuildProblems(policy);
  return it->second;
}

std::vector<ir::SyscallRuleProblem> SyscallRuleProblems(const ir::Policy& policy) {
  // The filter's form only: the one `cocoon enforce` loads. The rule form
  // (OCI, Kubernetes) expresses the prologue's guards as rules and can fail
  // where the filter does not (moby's `allow socket if arg0 > 0x28` against
  // the socket-family guard); those targets still refuse at compile time.
  return RuleProblems(ComputeEffectiveSyscalls(policy.syscalls, PrologueGuardForm::kBpfPrefix,
                                               SeccompConnectRouting(policy), EnforcerNetlinkSocketsFor(policy.network)));
}

Result<std::vector<Artifact>> CompileSeccomp(const ir::Policy& policy) {
  return CompileSeccompFromRules(
      policy, ComputeEffectiveSyscalls(policy.syscalls, PrologueGuardForm::kBpfPrefix, SeccompConnectRouting(policy),
                                       EnforcerNetlinkSocketsFor(policy.network)));
}

Result<std::vector<Artifact>> CompileSeccompFromRules(const ir::Policy& policy, const EffectiveSyscalls& rules) {
  const SeccompFilterOptions options = FilterOptionsFor(policy);
  COCOON_ASSIGN_OR_RETURN(CompiledSeccompFilter filter, BuildSeccompFilter(rules, options));
  std::vector<Artifact> out;
  out.push_back(MakeArtifact("linux", "linux.seccomp.bpf", "application/vnd.cocoon.seccomp-bpf", filter.bpf));
  out.back().warnings = rules.warnings;
  out.push_back(MakeArtifact("linux", "linux.seccomp.txt", "text/plain", filter.pfc));
  out.push_back(MakeArtifact("linux", "linux.seccomp.json", "application/json",
                             SeccompSidecarJson(rules, filter, options.routing)));
  return out;
}

}  // namespace cocoon::backends
