// The hardening prologue and the conflict resolution described in
// effective_rules.h.
#include "compiler/backends/seccomp/effective_rules.h"

#include <algorithm>
#include <cerrno>
#include <map>
#include <tuple>

#include "compiler/backends/seccomp/rule_algebra.h"
#include "compiler/syscalls/syscall_groups.h"

namespace cocoon::backends {
namespace {

using ir::ActionKind;
using ir::ArgCondition;
using ir::CompareOp;
using ir::SyscallRule;

constexpr char kPrologueGroup[] = "prologue";
// CLONE_NEWNS|CLONE_NEWCGROUP|CLONE_NEWUTS|CLONE_NEWIPC|CLONE_NEWUSER|
// CLONE_NEWPID|CLONE_NEWNET, as in sandboxed-api's policy.cc.
constexpr uint64_t kCloneNewMask = 0x7E020000;
constexpr uint64_t kLow32 = 0xffffffffULL;
constexpr uint64_t kTiocsti = 0x5412;   // <asm-generic/ioctls.h>
constexpr uint64_t kTioclinux = 0x541C;
constexpr uint64_t kAfAlg = 38;     // <linux/socket.h>
constexpr uint64_t kAfVsock = 40;
constexpr uint64_t kRefusedSocketFamilies[] = {kAfVsock, kAfAlg};
constexpr uint64_t kSeccompSetModeFilter = 1;      // <linux/seccomp.h>
constexpr uint64_t kSeccompFlagNewListener = 1u << 3;
// personality(2): PER_LINUX, PER_LINUX32, UNAME26, PER_LINUX32|UNAME26 and
// the 0xffffffff query; the safe set moby and sandboxed-api use.
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
  PrologueGuardForm ioctl, seccomp, clone, socket;
};

void AddFixedPrologue(std::vector<Candidate>& out, const GuardForms& forms) {
  // clone3 passes its flags in a struct behind a pointer, which seccomp
  // cannot read; ENOSYS makes glibc fall back to clone (moby#42680).
  out.push_back({PrologueRule("clone3", Errno(ENOSYS)), true});
  if (forms.clone == PrologueGuardForm::kRules) AddCloneGuards(out);  // else clone_new_mask_in_prefix
  // ioctl's cmd is an unsigned int: the kernel drops the upper 32 bits, so
  // compare only the low 32 (else 0x1_00005412 would slip past an Eq).
  // TIOCSTI pushes input into the controlling terminal (CVE-2017-5226).
  for (uint64_t cmd : {kTiocsti, kTioclinux}) {
    if (forms.ioctl == PrologueGuardForm::kBpfPrefix) continue;  // EffectiveSyscalls::ioctl_denied_cmds
    out.push_back({PrologueRule("ioctl", Errno(EPERM), {{1, CompareOp::kMaskedEq, cmd, kLow32}}), true});
  }
  // Socket families that a network namespace does not isolate: AF_VSOCK (40)
  // talks to the hypervisor and other VMs whatever the netns, and AF_ALG (38)
  // exposes the kernel crypto API, a recurring source of kernel bugs. The
  // domain is an int, so only the low 32 bits count. EAFNOSUPPORT is what a
  // kernel without the family answers, so programs fall back cleanly.
  for (uint64_t family : kRefusedSocketFamilies) {
    if (forms.socket == PrologueGuardForm::kBpfPrefix) break;  // EffectiveSyscalls::socket_denied_families_in_prefix
    out.push_back({PrologueRule("socket", Errno(EAFNOSUPPORT), {{0, CompareOp::kMaskedEq, family, kLow32}}), true});
  }
  // A sandboxed process must not install a filter with a user-notification
  // listener: it could then answer its own (or its children's) syscalls.
  if (forms.seccomp == PrologueGuardForm::kBpfPrefix) return;  // EffectiveSyscalls::seccomp_listener_in_prefix
  out.push_back({PrologueRule("seccomp", Errno(EPERM),
                              {{0, CompareOp::kMaskedEq, kSeccompSetModeFilter, kLow32},
                               {1, CompareOp::kMaskedEq, kSeccompFlagNewListener, kSeccompFlagNewListener}}),
                 true});
}

bool IsReopened(std::string_view name, const ir::Syscalls& policy) {
  if (std::find(policy.reopened.begin(), policy.reopened.end(), name) != policy.reopened.end()) return true;
  return std::any_of(policy.rules.begin(), policy.rules.end(), [&](const SyscallRule& r) {
    return r.name == name && r.group.empty() && !Denies(r.action);
  });
}

void AddReopenableDenials(const ir::Syscalls& policy, std::vector<Candidate>& out,
                          std::vector<std::string>& warnings) {
  for (std::string_view name : syscalls::PrologueDeniedSyscalls()) {
    if (IsReopened(name, policy)) {
      warnings.push_back("policy reopens " + std::string(name) + ", which the prologue denies by default");
      continue;
    }
    for (const SyscallRule& r : policy.rules) {
      if (r.name == name && !Denies(r.action)) {
        warnings.push_back("policy allows " + r.name + " through " + r.group +
                           " but the prologue keeps it denied; name it on its own to reopen it");
        break;
      }
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
    for (int bit = 0; bit < 32; ++bit) {
      const uint64_t b = uint64_t{1} << bit;
      if ((kPersonalitySafeBits & b) != 0) continue;
      out.push_back({PrologueRule("personality", Errno(EPERM), {{0, CompareOp::kMaskedEq, b, b}}), true});
    }
  }
}

// True when `r` (an ioctl rule) only matches calls the BPF prefix denies
// first: one of its conditions pins the low 32 bits of arg 1 (the cmd, which
// the kernel truncates to 32 bits) to a denied value. strict.cocoon spells
// the prologue's guard out itself (`deny ioctl if arg1 == TIOCSTI ...`);
// kept, those rules would split `allow ioctl` into range pieces again.
bool ShadowedByIoctlPrefix(const SyscallRule& r, const std::vector<uint32_t>& denied_cmds) {
  if (r.name != "ioctl") return false;
  return std::any_of(r.conditions.begin(), r.conditions.end(), [&](const ArgCondition& c) {
    if (c.arg != 1) return false;
    const bool pins_low32 = c.op == CompareOp::kEq || (c.op == CompareOp::kMaskedEq && (c.mask & kLow32) == kLow32);
    const uint32_t low = static_cast<uint32_t>(c.value);
    return pins_low32 && std::find(denied_cmds.begin(), denied_cmds.end(), low) != denied_cmds.end();
  });
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
  const int ra = ActionRank(a.rule.action);
  const int rb = ActionRank(b.rule.action);
  if (ra != rb) return ra > rb;
  if (a.from_prologue != b.from_prologue) return a.from_prologue;
  if (a.rule.action.errno_value != b.rule.action.errno_value) {
    return a.rule.action.errno_value < b.rule.action.errno_value;
  }
  return false;
}

std::string Describe(const SyscallRule& r) {
  return r.name + (r.group.empty() ? "" : " (from " + r.group + ")");
}

// Makes the rules of one syscall pairwise disjoint across different actions.
void ResolveSyscall(std::vector<Candidate> rules, const ir::Action& default_action, EffectiveSyscalls& out) {
  // libseccomp's rule merging slows down sharply past a few dozen conditional
  // rules on one syscall; the ioctl TIOCSTI/TIOCLINUX guard in rule form (OCI) needs ~130.
  constexpr size_t kMaxPiecesPerSyscall = 1024;
  std::stable_sort(rules.begin(), rules.end(), Outranks);
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
        out.errors.push_back("syscall rule " + Describe(c.rule) +
                             ": its conditions on one argument cannot be combined into a single comparison");
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
          out.errors.push_back("syscall rule " + Describe(c.rule) +
                               " overlaps a more restrictive rule in a way seccomp cannot express");
          return;
        }
        next.insert(next.end(), rest->begin(), rest->end());
      }
      pieces = std::move(next);
      if (pieces.size() + accepted.size() > kMaxPiecesPerSyscall) {
        out.errors.push_back("syscall " + c.rule.name + ": too many overlapping conditional rules");
        return;
      }
    }
    for (Conjunction& piece : pieces) accepted.push_back({std::move(piece), c.rule.action, c.rule.group});
  }
  // Same action everywhere within a piece set; an unconditional piece makes
  // the others of its action redundant (libseccomp would drop them anyway).
  // Duplicates can only be among this syscall's own rules (appended here).
  const size_t first_own = out.rules.size();
  for (const Piece& p : accepted) {
    if (p.action == default_action) continue;  // disjoint, so the default gives the same answer
    const bool covered = !p.conditions.empty() &&
                         std::any_of(accepted.begin(), accepted.end(), [&](const Piece& other) {
                           return other.action == p.action && other.conditions.empty();
                         });
    if (covered) continue;
    SyscallRule rule{rules.front().rule.name, p.action, p.conditions, p.group};
    const bool duplicate =
        std::any_of(out.rules.begin() + static_cast<long>(first_own), out.rules.end(), [&](const SyscallRule& r) {
          return r.action == rule.action && r.conditions == rule.conditions;
        });
    if (!duplicate) out.rules.push_back(std::move(rule));
  }
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

}  // namespace

int ActionRank(const ir::Action& action) {
  switch (action.kind) {
    case ActionKind::kKillProcess: return 6;
    case ActionKind::kTrap: return 5;
    case ActionKind::kErrno: return 4;
    case ActionKind::kNotify: return 3;
    case ActionKind::kLog: return 2;
    case ActionKind::kAllow: return 1;
  }
  return 0;
}

namespace {

// Everything ComputeEffectiveSyscalls decides before the conflict
// resolution: `out` without rules or errors, and the candidate rules by name.
struct Prepared {
  EffectiveSyscalls out;
  std::map<std::string, std::vector<Candidate>> by_name;
};

Prepared Prepare(const ir::Syscalls& policy, PrologueGuardForm ioctl_form, ConnectRouting connect) {
  Prepared prepared;
  EffectiveSyscalls& out = prepared.out;
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
  ioctl_form = form_for("ioctl");
  if (ioctl_form == PrologueGuardForm::kBpfPrefix) out.ioctl_denied_cmds = {kTiocsti, kTioclinux};
  out.seccomp_listener_in_prefix = seccomp_form == PrologueGuardForm::kBpfPrefix;
  if (clone_form == PrologueGuardForm::kBpfPrefix) out.clone_new_mask_in_prefix = kCloneNewMask;
  if (socket_form == PrologueGuardForm::kBpfPrefix) {
    for (uint64_t family : kRefusedSocketFamilies) {
      out.socket_denied_families_in_prefix.push_back(static_cast<uint32_t>(family));
    }
  }
  std::vector<Candidate> all;
  AddFixedPrologue(all, GuardForms{ioctl_form, seccomp_form, clone_form, socket_form});
  AddReopenableDenials(policy, all, out.warnings);
  AddPolicyRules(policy, all);
  if (connect == ConnectRouting::kSupervisor) AddConnectBrokerRules(policy, all);
  // Safe only because no ioctl rule outranks the prefix's errno(EPERM) here.
  std::erase_if(all, [&](const Candidate& c) { return ShadowedByIoctlPrefix(c.rule, out.ioctl_denied_cmds); });
  for (Candidate& c : all) prepared.by_name[c.rule.name].push_back(std::move(c));
  return prepared;
}

// The resolved rules of one syscall (sorted by RuleLess) and its errors.
struct Resolved {
  std::vector<SyscallRule> rules;
  std::vector<std::string> errors;
};

Resolved ResolveOne(std::vector<Candidate> candidates, const ir::Action& default_action) {
  EffectiveSyscalls one;
  ResolveSyscall(std::move(candidates), default_action, one);
  // RuleLess orders by name first, so sorting each syscall's rules on its
  // own gives the order one sort of the whole list would.
  std::sort(one.rules.begin(), one.rules.end(), RuleLess);
  return {std::move(one.rules), std::move(one.errors)};
}

void Append(const Resolved& resolved, EffectiveSyscalls& out) {
  out.rules.insert(out.rules.end(), resolved.rules.begin(), resolved.rules.end());
  out.errors.insert(out.errors.end(), resolved.errors.begin(), resolved.errors.end());
}

void Append(Resolved&& resolved, EffectiveSyscalls& out) {
  out.rules.insert(out.rules.end(), std::make_move_iterator(resolved.rules.begin()),
                   std::make_move_iterator(resolved.rules.end()));
  out.errors.insert(out.errors.end(), std::make_move_iterator(resolved.errors.begin()),
                    std::make_move_iterator(resolved.errors.end()));
}

bool SameCandidates(const std::vector<Candidate>& a, const std::vector<Candidate>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Candidate& x, const Candidate& y) {
    return x.from_prologue == y.from_prologue && x.rule == y.rule;
  });
}

}  // namespace

EffectiveSyscalls ComputeEffectiveSyscalls(const ir::Syscalls& policy, PrologueGuardForm ioctl_form,
                                           ConnectRouting connect) {
  Prepared prepared = Prepare(policy, ioctl_form, connect);
  EffectiveSyscalls& out = prepared.out;
  for (auto& [name, candidates] : prepared.by_name) Append(ResolveOne(std::move(candidates), policy.default_action), out);
  return std::move(out);
}

EffectiveSyscallForms ComputeEffectiveSyscallForms(const ir::Syscalls& policy, ConnectRouting bpf_connect) {
  Prepared bpf = Prepare(policy, PrologueGuardForm::kBpfPrefix, bpf_connect);
  Prepared rules = Prepare(policy, PrologueGuardForm::kRules, ConnectRouting::kFilter);
  // A syscall with the same candidates in both forms (all but the guarded
  // ones and, for allow-lists, connect) resolves the same way: once.
  auto bpf_it = bpf.by_name.begin();
  for (auto& [name, candidates] : rules.by_name) {
    for (; bpf_it != bpf.by_name.end() && bpf_it->first < name; ++bpf_it) {
      Append(ResolveOne(std::move(bpf_it->second), policy.default_action), bpf.out);
    }
    if (bpf_it != bpf.by_name.end() && bpf_it->first == name && SameCandidates(bpf_it->second, candidates)) {
      Resolved shared = ResolveOne(std::move(candidates), policy.default_action);
      Append(shared, rules.out);
      Append(std::move(shared), bpf.out);
      ++bpf_it;
      continue;
    }
    Append(ResolveOne(std::move(candidates), policy.default_action), rules.out);
  }
  for (; bpf_it != bpf.by_name.end(); ++bpf_it) Append(ResolveOne(std::move(bpf_it->second), policy.default_action), bpf.out);
  return {std::move(bpf.out), std::move(rules.out)};
}

}  // namespace cocoon::backends
