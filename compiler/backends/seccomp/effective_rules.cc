// The hardening prologue and the conflict resolution described in
// effective_rules.h.
#include "compiler/backends/seccomp/effective_rules.h"

#include <algorithm>
#include <cerrno>
#include <map>
#include <span>
#include <tuple>

#include "compiler/backends/seccomp/bpf_opcodes.h"
#include "compiler/backends/seccomp/kernel_widths.h"
#include "compiler/backends/seccomp/rule_algebra.h"
#include "compiler/syscalls/syscall_groups.h"

namespace cocoon::backends {
namespace {

using ir::ActionKind;
using ir::ArgCondition;
using ir::CompareOp;
using ir::SyscallRule;

constexpr char kPrologueGroup[] = "prologue";
// The guards' values are shared with the checker (syscall_groups.h).
using syscalls::prologue::kAfAlg;
using syscalls::prologue::kAfNetlink;
using syscalls::prologue::kAfVsock;
using syscalls::prologue::kCloneNewMask;
using syscalls::prologue::kFSetLease;
using syscalls::prologue::kLow32;
using syscalls::prologue::kTiocsti;
using syscalls::prologue::kTioclinux;
static_assert(syscalls::prologue::kSetModeFilter == bpf::kSetModeFilter);
static_assert(syscalls::prologue::kFilterFlagNewListener == bpf::kFilterFlagNewListener);

// The families the socket guard refuses (AddFixedPrologue says why).
std::vector<uint64_t> RefusedSocketFamilies(NetlinkSockets netlink) {
  std::vector<uint64_t> families = {kAfVsock, kAfAlg};
  if (netlink == NetlinkSockets::kRefused) families.push_back(kAfNetlink);
  return families;
}
// personality(2): PER_LINUX, PER_LINUX32, UNAME26, PER_LINUX32|UNAME26 and
// the 0xffffffff query; the safe set moby and sandboxed-api use. The
// personas are exactly the subsets of kPersonalitySafeBits
// (AddPersonalityRefusal relies on it).
constexpr uint64_t kPersonalitySafe[] = {0x0, 0x8, 0x20000, 0x20008, 0xffffffff};
constexpr uint64_t kPersonalitySafeBits = 0x20008;

// A rule plus where it came from (the prologue outranks the policy on ties).
struct Candidate {
  SyscallRule rule;
  bool from_prologue = false;
};

ir::Action Errno(int value) { return ir::Action{ActionKind::kErrno, value}; }

bool Permits(const ir::Action& action) {
  return action.kind == ActionKind::kAllow || action.kind == ActionKind::kLog;
}

bool Denies(const ir::Action& action) {
  return action.kind == ActionKind::kErrno || action.kind == ActionKind::kKillProcess ||
         action.kind == ActionKind::kTrap;
}

SyscallRule PrologueRule(std::string name, ir::Action action, std::vector<ArgCondition> conditions = {}) {
  return SyscallRule{std::move(name), action, std::move(conditions), kPrologueGroup};
}

// One rule per CLONE_NEW* bit: "any bit of the mask set" is a disjunction,
// and libseccomp conditions of one rule are ANDed.
void AddCloneGuards(std::vector<Candidate>& out) {
  for (const char* name : {"clone", "unshare"}) {
    for (int bit = 0; bit < 32; ++bit) {
      const uint64_t b = uint64_t{1} << bit;
      if ((kCloneNewMask & b) == 0) continue;
      out.push_back({PrologueRule(name, Errno(EPERM), {{0, CompareOp::kMaskedEq, b, b}}), true});
    }
  }
}

// Where each prologue guard lives (ComputeEffectiveSyscalls decides).
struct GuardForms {
  PrologueGuardForm ioctl, seccomp, clone, socket, fcntl;
};

void AddFixedPrologue(std::vector<Candidate>& out, const GuardForms& forms,
                      const std::vector<uint64_t>& refused_families) {
  // clone3 passes its flags in a struct behind a pointer, which seccomp
  // cannot read; ENOSYS makes glibc fall back to clone (moby#42680).
  out.push_back({PrologueRule("clone3", *syscalls::PrologueFixedAnswer("clone3")), true});
  if (forms.clone == PrologueGuardForm::kRules) AddCloneGuards(out);  // else clone_new_mask_in_prefix
  // ioctl's cmd is an unsigned int: the kernel drops the upper 32 bits, so
  // compare only the low 32 (else 0x1_00005412 would slip past an Eq).
  // TIOCSTI pushes input into the controlling terminal (CVE-2017-5226).
  for (uint64_t cmd : {kTiocsti, kTioclinux}) {
    if (forms.ioctl == PrologueGuardForm::kBpfPrefix) continue;  // EffectiveSyscalls::ioctl_denied_cmds
    out.push_back({PrologueRule("ioctl", Errno(EPERM), {{1, CompareOp::kMaskedEq, cmd, kLow32}}), true});
  }
  // F_SETLEASE (EffectiveSyscalls::fcntl_denied_cmds_in_prefix says why):
  // rootless, a lease the sandbox takes on a file it shares with the host
  // stalls every host open for writing for up to lease-break-time. i386's
  // fcntl64 (AddI386FcntlLeaseRefusal) takes the same cmd.
  if (forms.fcntl == PrologueGuardForm::kRules) {
    out.push_back({PrologueRule("fcntl", Errno(EPERM), {{1, CompareOp::kMaskedEq, kFSetLease, kLow32}}), true});
  }
  // Socket families that a network namespace does not isolate: AF_VSOCK (40)
  // talks to the hypervisor and other VMs whatever the netns, and AF_ALG (38)
  // exposes the kernel crypto API, a recurring source of kernel bugs. The
  // domain is an int, so only the low 32 bits count. EAFNOSUPPORT is what a
  // kernel without the family answers, so programs fall back cleanly.
  // AF_NETLINK joins them with the network off (NetlinkSockets): its
  // receive queues are charged to no memory cgroup.
  for (uint64_t family : refused_families) {
    if (forms.socket == PrologueGuardForm::kBpfPrefix) break;  // EffectiveSyscalls::socket_denied_families_in_prefix
    out.push_back({PrologueRule("socket", Errno(EAFNOSUPPORT), {{0, CompareOp::kMaskedEq, family, kLow32}}), true});
  }
  // A sandboxed process must not install a filter with a user-notification
  // listener: it could then answer its own (or its children's) syscalls.
  if (forms.seccomp == PrologueGuardForm::kBpfPrefix) return;  // EffectiveSyscalls::seccomp_listener_in_prefix
  out.push_back({PrologueRule("seccomp", Errno(EPERM),
                              {{0, CompareOp::kMaskedEq, bpf::kSetModeFilter, kLow32},
                               {1, CompareOp::kMaskedEq, bpf::kFilterFlagNewListener, bpf::kFilterFlagNewListener}}),
                 true});
}

bool HasArch(const std::vector<ir::Arch>& arches, ir::Arch arch) {
  return std::find(arches.begin(), arches.end(), arch) != arches.end();
}

// With `arch x86`: the multiplexers refused outright (I386MultiplexerNames).
// In kBpfPrefix form the guard prefix answers ENOSYS on i386 before
// libseccomp's program runs; in kRules form (OCI JSON, which runc hands to
// libseccomp) an unconditional rule swallows the socket/IPC rules
// libseccomp folds into the multiplexer, and it must differ from the
// default to be kept at all.
void AddI386MultiplexerRefusal(const ir::Syscalls& policy, PrologueGuardForm form, std::vector<Candidate>& out,
                               EffectiveSyscalls& effective) {
  if (!HasArch(policy.architectures, ir::Arch::kX86)) return;
  effective.warnings.push_back(
      "arch x86: the i386 socketcall and ipc multiplexers are refused (errno ENOSYS) whatever the policy says: "
      "their real arguments sit behind a pointer seccomp cannot read, so rules on socket and SysV IPC calls "
      "could be bypassed through them; i386 programs must use the direct socket/IPC syscalls (Linux 4.3+)");
  if (form == PrologueGuardForm::kBpfPrefix) {
    effective.i386_multiplexers_in_prefix = true;
    return;
  }
  const ir::Action action = policy.default_action == Errno(ENOSYS) ? Errno(EPERM) : Errno(ENOSYS);
  for (std::string_view name : I386MultiplexerNames()) out.push_back({PrologueRule(std::string(name), action), true});
}

// With `arch x86`, kRules form: fcntl64 (i386 only; glibc's fcntl calls it
// there) refuses F_SETLEASE like fcntl. Only with `arch x86`, so that no
// other filter or OCI profile names a syscall its architectures lack.
void AddI386FcntlLeaseRefusal(const ir::Syscalls& policy, PrologueGuardForm form, std::vector<Candidate>& out) {
  if (form != PrologueGuardForm::kRules || !HasArch(policy.architectures, ir::Arch::kX86)) return;
  out.push_back({PrologueRule("fcntl64", Errno(EPERM), {{1, CompareOp::kMaskedEq, kFSetLease, kLow32}}), true});
}

void AddReopenableDenials(const ir::Syscalls& policy, std::vector<Candidate>& out,
                          std::vector<std::string>& warnings) {
  // One pass over the policy: per prologue-denied name, whether a named
  // non-denying rule reopens it, else the first group rule that tried to.
  const std::vector<std::string_view>& denied = syscalls::PrologueDeniedSyscalls();  // sorted
  std::vector<bool> named(denied.size(), false);
  // Named on its own, unconditionally, with another errno (`deny setns
  // errno EACCES`): as strict as the prologue's EPERM, and what the policy
  // says, so it answers instead. The prologue's denial won at the same rank
  // and the call got EPERM while `explain` showed EACCES (a review).
  std::vector<bool> own_errno(denied.size(), false);
  std::vector<const SyscallRule*> via_group(denied.size(), nullptr);
  for (const SyscallRule& r : policy.rules) {
    const auto it = std::lower_bound(denied.begin(), denied.end(), std::string_view(r.name));
    if (it == denied.end() || *it != r.name) continue;
    const auto index = static_cast<size_t>(it - denied.begin());
    if (Denies(r.action)) {
      if (r.group.empty() && r.conditions.empty() && r.action.kind == ActionKind::kErrno) own_errno[index] = true;
      continue;
    }
    if (r.group.empty()) named[index] = true;
    else if (via_group[index] == nullptr) via_group[index] = &r;
  }
  for (size_t i = 0; i < denied.size(); ++i) {
    const std::string_view name = denied[i];
    if (own_errno[i] && !named[i]) continue;  // the policy's own errno rule answers
    if (named[i] || std::find(policy.reopened.begin(), policy.reopened.end(), name) != policy.reopened.end()) {
      warnings.push_back(syscalls::ReopenWarning(name));
      continue;
    }
    if (via_group[i] != nullptr) {
      warnings.push_back("policy allows " + via_group[i]->name + " through " + via_group[i]->group +
                         " but the prologue keeps it denied; name it on its own to reopen it");
    }
    out.push_back({PrologueRule(std::string(name), Errno(EPERM)), true});
  }
}

// `r` restricted to personality(value). personality(2) takes an unsigned
// int (kernel/exec_domain.c `SYSCALL_DEFINE1(personality, unsigned int,
// personality)`), so the low 32 bits are what the kernel acts on: one
// 32-bit compare instead of two. When the policy's own arg-0 condition
// cannot be combined with a masked compare, the full 64-bit equality
// (stricter: upper bits must be zero) keeps the rule expressible.
SyscallRule NarrowPersonality(const SyscallRule& r, uint64_t value) {
  SyscallRule narrowed = r;
  narrowed.conditions.push_back({0, CompareOp::kMaskedEq, value, kLow32});
  MergeOutcome outcome;
  if (!Normalize(narrowed.conditions, &outcome) && outcome == MergeOutcome::kUnrepresentable) {
    narrowed.conditions.back() = {0, CompareOp::kEq, value, 0};
  }
  return narrowed;
}

// Under a permissive default: personality(v) -> errno(EPERM) for every v
// whose low 32 bits are not in kPersonalitySafe, as 32 rules of one masked
// compare each, "bit s set and bit c clear" (mask s|c, value s).
//
// Why this shape: the safe set is every subset of kPersonalitySafeBits (the
// four personas) plus all ones (the query). A value outside it has a bit
// outside kPersonalitySafeBits set (else it is a persona) and a bit clear
// (else it is the query), so it is denied iff some rule "outside bit set,
// another bit clear" matches. Taking the 30 outside bits in a cycle, a value
// with some but not all of them set has an outside bit set whose successor
// is clear (30 rules); with all of them set, bit 3 or bit 17 is clear (2
// rules, paired with bit 0). 32 is the fewest single-compare rules can do:
// each ~(1 << j) must be denied, and a rule matching it has bit j as its
// only clear bit, so no rule matches two of them. One comparison per rule
// keeps them expressible for libseccomp (OCI, Kubernetes: two comparisons
// on one argument fail with -EINVAL, rule_algebra.h), and the upper 32 bits
// are never compared: the kernel reads an unsigned int.
void AddPersonalityRefusal(std::vector<Candidate>& out) {
  std::vector<int> outside;  // the bits no safe persona sets
  for (int bit = 0; bit < 32; ++bit) {
    if ((kPersonalitySafeBits >> bit & 1) == 0) outside.push_back(bit);
  }
  auto deny_set_and_clear = [&](int set_bit, int clear_bit) {
    const uint64_t set = uint64_t{1} << set_bit;
    const uint64_t mask = set | uint64_t{1} << clear_bit;
    out.push_back({PrologueRule("personality", Errno(EPERM), {{0, CompareOp::kMaskedEq, set, mask}}), true});
  };
  for (size_t i = 0; i < outside.size(); ++i) deny_set_and_clear(outside[i], outside[(i + 1) % outside.size()]);
  for (int bit = 0; bit < 32; ++bit) {
    if ((kPersonalitySafeBits >> bit & 1) != 0) deny_set_and_clear(outside.front(), bit);
  }
}

// personality: narrow permissive policy rules to the safe values.
void AddPolicyRules(const ir::Syscalls& policy, std::vector<Candidate>& out) {
  for (const SyscallRule& r : policy.rules) {
    if (r.name != "personality" || Denies(r.action)) {
      out.push_back({r, false});
      continue;
    }
    for (uint64_t value : kPersonalitySafe) out.push_back({NarrowPersonality(r, value), false});
  }
  if (Permits(policy.default_action) || policy.default_action.kind == ActionKind::kNotify) {
    AddPersonalityRefusal(out);
  }
}

// True when one of `r`'s conditions pins the low 32 bits of arg 1 (a cmd,
// which the kernel truncates to 32 bits) to one of `denied_cmds`.
bool PinsCmdToOneOf(const SyscallRule& r, const std::vector<uint32_t>& denied_cmds) {
  return std::any_of(r.conditions.begin(), r.conditions.end(), [&](const ArgCondition& c) {
    if (c.arg != 1) return false;
    const bool pins_low32 = c.op == CompareOp::kEq || (c.op == CompareOp::kMaskedEq && (c.mask & kLow32) == kLow32);
    const uint32_t low = static_cast<uint32_t>(c.value);
    return pins_low32 && std::find(denied_cmds.begin(), denied_cmds.end(), low) != denied_cmds.end();
  });
}

// True when `r` (an ioctl rule) only matches calls the BPF prefix denies
// first (PinsCmdToOneOf). strict.cocoon spells the prologue's guard out
// itself (`deny ioctl if arg1 == TIOCSTI ...`); kept, those rules would split
// `allow ioctl` into range pieces again.
bool ShadowedByIoctlPrefix(const SyscallRule& r, const std::vector<uint32_t>& denied_cmds) {
  return r.name == "ioctl" && PinsCmdToOneOf(r, denied_cmds);
}

// The same for the F_SETLEASE guard: a policy's own `deny fcntl if arg1 ==
// 1024` (or fcntl64) is answered by the prefix first; kept, it would split
// `allow fcntl` into range pieces and undo the inline guard placement.
bool ShadowedByFcntlPrefix(const SyscallRule& r, const std::vector<uint32_t>& denied_cmds) {
  return (r.name == "fcntl" || r.name == "fcntl64") && PinsCmdToOneOf(r, denied_cmds);
}

// ConnectRouting::kSupervisor: a notify twin of every permitting connect
// rule (same conditions), and an unconditional one under a permissive
// default. Never a notify rule where the policy denies connect: the
// conflict resolution below lets errno/kill outrank notify.
void AddConnectBrokerRules(const ir::Syscalls& policy, std::vector<Candidate>& out) {
  constexpr char kBrokerGroup[] = "network-allow";
  const ir::Action notify{ActionKind::kNotify, 0};
  for (const SyscallRule& r : policy.rules) {
    if (r.name == "connect" && Permits(r.action)) out.push_back({SyscallRule{"connect", notify, r.conditions, kBrokerGroup}, true});
  }
  if (Permits(policy.default_action)) out.push_back({SyscallRule{"connect", notify, {}, kBrokerGroup}, true});
}

// Higher-ranked first; ties broken so that the output never depends on input order.
bool Outranks(const Candidate& a, const Candidate& b) {
  const int ra = ir::ActionRank(a.rule.action);
  const int rb = ir::ActionRank(b.rule.action);
  if (ra != rb) return ra > rb;
  if (a.from_prologue != b.from_prologue) return a.from_prologue;
  return ir::ActionOutranks(a.rule.action, b.rule.action);  // same rank: the lower errno
}

std::string Describe(const SyscallRule& r) {
  return r.name + (r.group.empty() ? "" : " (from " + r.group + ")");
}

// Name, then conditions (lexicographic on arg, op, value, mask), then action:
// the order is part of the golden output. Compared in place (no key copies:
// strict sorts ~500 rules).
bool RuleLess(const SyscallRule& a, const SyscallRule& b) {
  if (const int c = a.name.compare(b.name); c != 0) return c < 0;
  auto cond_key = [](const ArgCondition& x) { return std::make_tuple(x.arg, static_cast<int>(x.op), x.value, x.mask); };
  const bool conditions_less = std::lexicographical_compare(
      a.conditions.begin(), a.conditions.end(), b.conditions.begin(), b.conditions.end(),
      [&](const ArgCondition& x, const ArgCondition& y) { return cond_key(x) < cond_key(y); });
  if (conditions_less) return true;
  if (a.conditions != b.conditions) return false;
  return std::make_tuple(static_cast<int>(a.action.kind), a.action.errno_value) <
         std::make_tuple(static_cast<int>(b.action.kind), b.action.errno_value);
}

// Makes the rules of one syscall pairwise disjoint across different actions
// and appends them to `out.rules` sorted by RuleLess.
// `rules` (all of one syscall) is reordered in place.
void ResolveSyscall(std::span<Candidate> rules, const ir::Action& default_action, EffectiveSyscalls& out) {
  // libseccomp's rule merging slows down sharply past a few dozen conditional
  // rules on one syscall; the ioctl TIOCSTI/TIOCLINUX guard in rule form (OCI) needs ~130.
  constexpr size_t kMaxPiecesPerSyscall = 1024;
  if (rules.size() > 1) std::stable_sort(rules.begin(), rules.end(), Outranks);
  struct Piece {
    Conjunction conditions;
    ir::Action action;
    std::string group;
  };
  std::vector<Piece> accepted;
  for (const Candidate& c : rules) {
    MergeOutcome outcome;
    std::optional<Conjunction> own = Normalize(c.rule.conditions, &outcome);
    if (!own) {
      if (outcome == MergeOutcome::kUnrepresentable) {
        out.errors.push_back({c.rule.name, "syscall rule " + Describe(c.rule) +
                                               ": its conditions on one argument cannot be combined into a single "
                                               "comparison"});
      }
      continue;  // kEmpty: the rule can never match
    }
    std::vector<Conjunction> pieces = {*own};
    for (const Piece& higher : accepted) {
      if (higher.action == c.rule.action) continue;
      std::vector<Conjunction> next;
      for (const Conjunction& piece : pieces) {
        std::optional<std::vector<Conjunction>> rest = Subtract(piece, higher.conditions);
        if (!rest) {
          out.errors.push_back({c.rule.name, "syscall rule " + Describe(c.rule) +
                                                 " overlaps a more restrictive rule in a way seccomp cannot express"});
          return;
        }
        next.insert(next.end(), rest->begin(), rest->end());
      }
      pieces = std::move(next);
      if (pieces.size() + accepted.size() > kMaxPiecesPerSyscall) {
        out.errors.push_back({c.rule.name, "syscall " + c.rule.name + ": too many overlapping conditional rules"});
        return;
      }
    }
    for (Conjunction& piece : pieces) accepted.push_back({std::move(piece), c.rule.action, c.rule.group});
  }
  // Same action everywhere within a piece set; an unconditional piece makes
  // the others of its action redundant (libseccomp would drop them anyway).
  std::vector<ir::Action> unconditional;
  for (const Piece& p : accepted) {
    if (p.conditions.empty() && std::find(unconditional.begin(), unconditional.end(), p.action) == unconditional.end()) {
      unconditional.push_back(p.action);
    }
  }
  const std::string& name = rules.front().rule.name;
  const auto first_own = static_cast<std::ptrdiff_t>(out.rules.size());
  for (Piece& p : accepted) {
    if (p.action == default_action) continue;  // disjoint, so the default gives the same answer
    const bool covered = !p.conditions.empty() &&
                         std::find(unconditional.begin(), unconditional.end(), p.action) != unconditional.end();
    if (!covered) out.rules.push_back(SyscallRule{name, p.action, std::move(p.conditions), std::move(p.group)});
  }
  // In output order (RuleLess), then without duplicates (same action and
  // conditions; they can only be among this syscall's own rules): the first
  // of each, as the stable sort keeps them in the order they came.
  if (out.rules.size() - static_cast<size_t>(first_own) < 2) return;
  std::stable_sort(out.rules.begin() + first_own, out.rules.end(), RuleLess);
  out.rules.erase(std::unique(out.rules.begin() + first_own, out.rules.end(),
                              [](const SyscallRule& a, const SyscallRule& b) {
                                return a.action == b.action && a.conditions == b.conditions;
                              }),
                  out.rules.end());
}

}  // namespace

const std::vector<std::string_view>& I386MultiplexerNames() {
  static const std::vector<std::string_view> names = {"ipc", "socketcall"};
  return names;
}

namespace {

// Everything ComputeEffectiveSyscalls decides before the conflict
// resolution: `out` without rules or errors, and the candidate rules sorted
// by name (stably: each syscall's in the order they were made), with the
// range of each name.
struct Prepared {
  EffectiveSyscalls out;
  std::vector<Candidate> candidates;
  struct Run {
    std::string name;  // a copy: ResolveSyscall reorders the candidates
    size_t begin, end;
  };
  std::vector<Run> runs;  // by name

  std::span<Candidate> Of(const Run& run) { return {candidates.data() + run.begin, run.end - run.begin}; }
};

// Sorts `all` stably by name into `prepared` (an index sort: each
// Candidate is moved once).
void GroupByName(std::vector<Candidate>& all, Prepared& prepared) {
  std::vector<uint32_t> order(all.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return all[a].rule.name < all[b].rule.name; });
  prepared.candidates.reserve(all.size());
  for (uint32_t i : order) prepared.candidates.push_back(std::move(all[i]));
  for (size_t begin = 0; begin < prepared.candidates.size();) {
    size_t end = begin + 1;
    while (end < prepared.candidates.size() && prepared.candidates[end].rule.name == prepared.candidates[begin].rule.name) {
      ++end;
    }
    prepared.runs.push_back({prepared.candidates[begin].rule.name, begin, end});
    begin = end;
  }
}

// `policy` with each rule compared on the bits the kernel reads of its
// arguments (kernel_widths.h); a rule that cannot be is an error.
ir::Syscalls FitPolicyToKernelWidths(const ir::Syscalls& policy, std::vector<EffectiveSyscalls::Error>& errors) {
  ir::Syscalls fitted = policy;
  fitted.rules.clear();
  std::vector<std::string_view> permitted;  // unconditionally, by a rule
  for (const SyscallRule& r : policy.rules) {
    if (r.conditions.empty() && Permits(r.action)) permitted.push_back(r.name);
  }
  std::sort(permitted.begin(), permitted.end());
  for (const SyscallRule& r : policy.rules) {
    const bool allowed_anyway =
        Permits(policy.default_action) || std::binary_search(permitted.begin(), permitted.end(), r.name);
    KernelWidthFit fit = FitToKernelWidths(r, allowed_anyway ? LogOver::kAllow : LogOver::kDeny);
    if (!fit.error.empty()) errors.push_back({r.name, std::move(fit.error)});
    for (SyscallRule& rule : fit.rules) fitted.rules.push_back(std::move(rule));
  }
  return fitted;
}

Prepared Prepare(const ir::Syscalls& unfitted_policy, PrologueGuardForm ioctl_form, ConnectRouting connect,
                 NetlinkSockets netlink) {
  Prepared prepared;
  EffectiveSyscalls& out = prepared.out;
  const ir::Syscalls policy = FitPolicyToKernelWidths(unfitted_policy, out.errors);
  const PrologueGuardForm ioctl_form_requested = ioctl_form;
  out.default_action = policy.default_action;
  out.architectures = policy.architectures;
  // The prefix answers errno(EPERM) before any rule is consulted; a policy
  // ioctl rule more restrictive than that (kill, trap) must win instead, so
  // such policies keep the rule form.
  const ir::Action eperm = Errno(EPERM);
  auto form_for = [&](std::string_view name) {
    const bool outranks = std::any_of(policy.rules.begin(), policy.rules.end(), [&](const SyscallRule& r) {
      return r.name == name && ActionRank(r.action) > ActionRank(eperm);
    });
    return outranks ? PrologueGuardForm::kRules : ioctl_form;
  };
  const PrologueGuardForm seccomp_form = form_for("seccomp");
  const PrologueGuardForm clone_form =
      form_for("clone") == PrologueGuardForm::kRules || form_for("unshare") == PrologueGuardForm::kRules
          ? PrologueGuardForm::kRules
          : ioctl_form;
  const PrologueGuardForm socket_form = form_for("socket");
  // One guard for fcntl and i386's fcntl64 (they take the same cmds).
  const PrologueGuardForm fcntl_form =
      form_for("fcntl") == PrologueGuardForm::kRules || form_for("fcntl64") == PrologueGuardForm::kRules
          ? PrologueGuardForm::kRules
          : ioctl_form;
  ioctl_form = form_for("ioctl");
  if (ioctl_form == PrologueGuardForm::kBpfPrefix) out.ioctl_denied_cmds = {kTiocsti, kTioclinux};
  out.seccomp_listener_in_prefix = seccomp_form == PrologueGuardForm::kBpfPrefix;
  if (clone_form == PrologueGuardForm::kBpfPrefix) out.clone_new_mask_in_prefix = kCloneNewMask;
  const std::vector<uint64_t> refused_families = RefusedSocketFamilies(netlink);
  if (socket_form == PrologueGuardForm::kBpfPrefix) {
    for (uint64_t family : refused_families) {
      out.socket_denied_families_in_prefix.push_back(static_cast<uint32_t>(family));
    }
  }
  if (fcntl_form == PrologueGuardForm::kBpfPrefix) out.fcntl_denied_cmds_in_prefix = {kFSetLease};
  std::vector<Candidate> all;
  all.reserve(policy.rules.size() + 128);  // the prologue adds a few dozen
  AddFixedPrologue(all, GuardForms{ioctl_form, seccomp_form, clone_form, socket_form, fcntl_form}, refused_families);
  AddI386MultiplexerRefusal(policy, ioctl_form_requested, all, out);
  AddI386FcntlLeaseRefusal(policy, fcntl_form, all);
  AddReopenableDenials(policy, all, out.warnings);
  AddPolicyRules(policy, all);
  if (connect == ConnectRouting::kSupervisor) AddConnectBrokerRules(policy, all);
  // Safe only because no ioctl (fcntl) rule outranks the prefix's errno(EPERM) here.
  std::erase_if(all, [&](const Candidate& c) {
    return ShadowedByIoctlPrefix(c.rule, out.ioctl_denied_cmds) ||
           ShadowedByFcntlPrefix(c.rule, out.fcntl_denied_cmds_in_prefix);
  });
  GroupByName(all, prepared);
  return prepared;
}

// Resolves `candidates` into `first` and copies what that added to `second`.
void ResolveIntoBoth(std::span<Candidate> candidates, const ir::Action& default_action, EffectiveSyscalls& first,
                     EffectiveSyscalls& second) {
  const auto rules_before = static_cast<std::ptrdiff_t>(first.rules.size());
  const auto errors_before = static_cast<std::ptrdiff_t>(first.errors.size());
  ResolveSyscall(candidates, default_action, first);
  second.rules.insert(second.rules.end(), first.rules.begin() + rules_before, first.rules.end());
  second.errors.insert(second.errors.end(), first.errors.begin() + errors_before, first.errors.end());
}

bool SameCandidates(std::span<const Candidate> a, std::span<const Candidate> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Candidate& x, const Candidate& y) {
    return x.from_prologue == y.from_prologue && x.rule == y.rule;
  });
}

}  // namespace

NetlinkSockets NetlinkSocketsFor(const ir::Network& network) {
  return network.mode == ir::NetworkMode::kOff ? NetlinkSockets::kRefused : NetlinkSockets::kAllowed;
}

NetlinkSockets EnforcerNetlinkSocketsFor(const ir::Network& network) {
  return network.mode == ir::NetworkMode::kOn ? NetlinkSockets::kAllowed : NetlinkSockets::kRefused;
}

EffectiveSyscalls ComputeEffectiveSyscalls(const ir::Syscalls& policy, PrologueGuardForm ioctl_form,
                                           ConnectRouting connect, NetlinkSockets netlink) {
  Prepared prepared = Prepare(policy, ioctl_form, connect, netlink);
  for (const Prepared::Run& run : prepared.runs) ResolveSyscall(prepared.Of(run), policy.default_action, prepared.out);
  return std::move(prepared.out);
}

EffectiveSyscallForms ComputeEffectiveSyscallForms(const ir::Syscalls& policy, ConnectRouting bpf_connect,
                                                   NetlinkSockets netlink) {
  Prepared bpf = Prepare(policy, PrologueGuardForm::kBpfPrefix, bpf_connect, netlink);
  Prepared rules = Prepare(policy, PrologueGuardForm::kRules, ConnectRouting::kFilter, netlink);
  // A syscall with the same candidates in both forms (all but the guarded
  // ones and, for allow-lists, connect) resolves the same way: once.
  const ir::Action& default_action = policy.default_action;
  auto bpf_run = bpf.runs.begin();
  for (const Prepared::Run& run : rules.runs) {
    for (; bpf_run != bpf.runs.end() && bpf_run->name < run.name; ++bpf_run) {
      ResolveSyscall(bpf.Of(*bpf_run), default_action, bpf.out);
    }
    if (bpf_run != bpf.runs.end() && bpf_run->name == run.name && SameCandidates(bpf.Of(*bpf_run), rules.Of(run))) {
      ResolveIntoBoth(rules.Of(run), default_action, rules.out, bpf.out);
      ++bpf_run;
      continue;
    }
    ResolveSyscall(rules.Of(run), default_action, rules.out);
  }
  for (; bpf_run != bpf.runs.end(); ++bpf_run) ResolveSyscall(bpf.Of(*bpf_run), default_action, bpf.out);
  return {std::move(bpf.out), std::move(rules.out)};
}

}  // namespace cocoon::backends
