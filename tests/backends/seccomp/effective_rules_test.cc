#include "compiler/backends/seccomp/effective_rules.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>

#include "compiler/backends/seccomp/rule_algebra.h"
#include "tests/backends/seccomp/test_policies.h"

namespace cocoon::backends {
namespace {

using namespace cocoon::backends::testing;  // NOLINT

std::vector<ir::SyscallRule> RulesFor(const EffectiveSyscalls& e, const std::string& name) {
  std::vector<ir::SyscallRule> out;
  std::copy_if(e.rules.begin(), e.rules.end(), std::back_inserter(out),
               [&](const ir::SyscallRule& r) { return r.name == name; });
  return out;
}

bool HasWarning(const EffectiveSyscalls& e, const std::string& text) {
  return std::any_of(e.warnings.begin(), e.warnings.end(),
                     [&](const std::string& w) { return w.find(text) != std::string::npos; });
}

TEST(EffectiveRules, PrologueDeniesWithoutAPolicyRule) {
  ir::Syscalls s;  // default errno ENOSYS, no rules
  EffectiveSyscalls e = ComputeEffectiveSyscalls(s);
  EXPECT_TRUE(e.errors.empty());
  for (const char* name : {"bpf", "setns", "keyctl", "io_uring_setup", "userfaultfd", "open_by_handle_at"}) {
    auto rules = RulesFor(e, name);
    ASSERT_EQ(rules.size(), 1u) << name;
    EXPECT_EQ(rules[0].action, Errno(EPERM));
    EXPECT_EQ(rules[0].group, "prologue");
  }
  // clone3's ENOSYS equals the default: no rule needed (libseccomp rejects it).
  EXPECT_TRUE(RulesFor(e, "clone3").empty());
}

// Under a permissive default the prologue refuses every personality value
// whose low 32 bits are not a safe persona or the 0xffffffff query (glibc
// and programs query with it), in both forms, with 32 rules of one masked
// compare on arg 0 each (what libseccomp, so OCI and Kubernetes, can take)
// that never test the upper 32 bits (the kernel reads an unsigned int).
TEST(EffectiveRules, PermissiveDefaultRefusesExactlyTheUnsafePersonalities) {
  const std::vector<uint64_t> values = PersonalityTestValues();
  for (const ir::Action& default_action : {Allow(), Log(), ir::Action{ir::ActionKind::kNotify, 0}}) {
    for (PrologueGuardForm form : {PrologueGuardForm::kRules, PrologueGuardForm::kBpfPrefix}) {
      SCOPED_TRACE("default " + std::to_string(static_cast<int>(default_action.kind)) + ", form " +
                   std::to_string(static_cast<int>(form)));
      ir::Syscalls s;
      s.default_action = default_action;
      const std::vector<ir::SyscallRule> rules = RulesFor(ComputeEffectiveSyscalls(s, form), "personality");
      EXPECT_EQ(rules.size(), 32u);
      for (const ir::SyscallRule& r : rules) {
        EXPECT_EQ(r.action, Errno(EPERM));
        ASSERT_EQ(r.conditions.size(), 1u);
        EXPECT_EQ(r.conditions[0].arg, 0);
        EXPECT_EQ(r.conditions[0].op, ir::CompareOp::kMaskedEq);
        EXPECT_EQ(r.conditions[0].mask >> 32, 0u);
      }
      for (uint64_t v : values) {
        const uint64_t args[6] = {v, 0, 0, 0, 0, 0};
        const bool denied = std::any_of(rules.begin(), rules.end(), [&](const ir::SyscallRule& r) {
          return ConjunctionMatches(r.conditions, args);
        });
        EXPECT_EQ(denied, !IsSafePersonality(v)) << std::hex << "personality(0x" << v << ")";
      }
    }
  }
}

TEST(EffectiveRules, NamedAllowReopensWithWarning) {
  ir::Syscalls s;
  AddRule(s, "bpf", Allow());
  EffectiveSyscalls e = ComputeEffectiveSyscalls(s);
  auto rules = RulesFor(e, "bpf");
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0].action, Allow());
  EXPECT_TRUE(HasWarning(e, "policy reopens bpf"));
}

// A prologue-denied call the policy names, unconditionally, with another
// errno gets that errno: as strict, and what the policy says. It got the
// prologue's EPERM (same rank, the prologue first) while explain showed
// EACCES (a review: `deny setns errno EACCES` under strict). A conditional
// one leaves the prologue's denial for every other call.
TEST(EffectiveRules, ANamedErrnoRuleAnswersForAPrologueDeniedCall) {
  ir::Syscalls s;
  AddRule(s, "setns", Errno(EACCES));
  EffectiveSyscalls e = ComputeEffectiveSyscalls(s);
  auto rules = RulesFor(e, "setns");
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0].action, Errno(EACCES));
  EXPECT_FALSE(HasWarning(e, "policy reopens setns"));
  ir::Syscalls conditional;
  conditional.rules.push_back(ir::SyscallRule{"setns", Errno(EACCES), {{1, ir::CompareOp::kEq, 0, 0}}, ""});
  auto kept = RulesFor(ComputeEffectiveSyscalls(conditional), "setns");
  EXPECT_TRUE(std::any_of(kept.begin(), kept.end(), [](const ir::SyscallRule& r) {
    return r.conditions.empty() && r.action == Errno(EPERM);
  })) << "a conditional errno rule dropped the prologue's denial of every other setns";
}

TEST(EffectiveRules, ReopenedListIsHonoured) {
  ir::Syscalls s;
  AddGroup(s, "@keyring", Allow());
  s.reopened = {"keyctl"};
  EffectiveSyscalls e = ComputeEffectiveSyscalls(s);
  EXPECT_EQ(RulesFor(e, "keyctl")[0].action, Allow());
  EXPECT_EQ(RulesFor(e, "add_key")[0].action, Errno(EPERM));  // via a group only: stays denied
  EXPECT_TRUE(HasWarning(e, "add_key through @keyring"));
}

TEST(EffectiveRules, UnconditionalAllowKeepsCloneGuard) {
  ir::Syscalls s;
  AddRule(s, "clone", Allow());
  EffectiveSyscalls e = ComputeEffectiveSyscalls(s);
  auto rules = RulesFor(e, "clone");
  // 7 EPERM rules (one per CLONE_NEW* bit) + one allow for (flags & mask) == 0.
  ASSERT_EQ(rules.size(), 8u);
  int allows = 0;
  for (const auto& r : rules) {
    if (r.action == Allow()) {
      ++allows;
      ASSERT_EQ(r.conditions.size(), 1u);
      EXPECT_EQ(r.conditions[0].op, ir::CompareOp::kMaskedEq);
      EXPECT_EQ(r.conditions[0].mask, 0x7E020000u);
      EXPECT_EQ(r.conditions[0].value, 0u);
    }
  }
  EXPECT_EQ(allows, 1);
}

TEST(EffectiveRules, KillBeatsPrologueErrno) {
  ir::Syscalls s;
  AddGroup(s, "@module", Kill());
  EffectiveSyscalls e = ComputeEffectiveSyscalls(s);
  EXPECT_EQ(RulesFor(e, "init_module")[0].action, Kill());
  EXPECT_EQ(RulesFor(e, "init_module").size(), 1u);
}

TEST(EffectiveRules, UnrepresentableIsAnError) {
  ir::Syscalls s;
  AddRule(s, "read", Allow(), {{0, ir::CompareOp::kGt, 2, 0}, {0, ir::CompareOp::kLt, 9, 0}});
  EffectiveSyscalls e = ComputeEffectiveSyscalls(s);
  ASSERT_FALSE(e.errors.empty());
  EXPECT_EQ(e.errors[0].syscall, "read");
  EXPECT_NE(e.errors[0].message.find("read"), std::string::npos);
}

TEST(EffectiveRules, SortedAndDeterministic) {
  ir::Syscalls s = StrictSyscalls();
  EffectiveSyscalls a = ComputeEffectiveSyscalls(s);
  std::reverse(s.rules.begin(), s.rules.end());
  EffectiveSyscalls b = ComputeEffectiveSyscalls(s);
  EXPECT_EQ(a.rules, b.rules);
  for (size_t i = 1; i < a.rules.size(); ++i) EXPECT_LE(a.rules[i - 1].name, a.rules[i].name);
  for (const auto& r : a.rules) EXPECT_NE(r.action, s.default_action) << r.name;
}

TEST(RuleAlgebra, MergeAndNegate) {
  using ir::CompareOp;
  auto m = MergeSameArg({0, CompareOp::kGe, 5, 0}, {0, CompareOp::kGe, 9, 0});
  ASSERT_EQ(m.outcome, MergeOutcome::kMerged);
  EXPECT_EQ(m.condition->value, 9u);
  EXPECT_EQ(MergeSameArg({0, CompareOp::kEq, 5, 0}, {0, CompareOp::kLt, 5, 0}).outcome, MergeOutcome::kEmpty);
  EXPECT_EQ(MergeSameArg({0, CompareOp::kMaskedEq, 1, 1}, {0, CompareOp::kMaskedEq, 0, 1}).outcome,
            MergeOutcome::kEmpty);
  auto masked = MergeSameArg({0, CompareOp::kMaskedEq, 1, 1}, {0, CompareOp::kMaskedEq, 0, 2});
  EXPECT_EQ(masked.condition->mask, 3u);
  EXPECT_EQ(Negate({0, CompareOp::kMaskedEq, 0, 0x30}).size(), 2u);
  auto rest = Subtract({}, {{0, CompareOp::kEq, 1, 0}});
  ASSERT_TRUE(rest);
  ASSERT_EQ(rest->size(), 1u);
  EXPECT_EQ((*rest)[0][0].op, CompareOp::kNe);
}

// network allow { ... }: connect goes to the supervisor's broker where the
// policy permits it, a denial of connect still wins, and other policies'
// rules are untouched.
TEST(EffectiveRules, ConnectRoutedToSupervisorOnlyWhereThePolicyPermits) {
  ir::Syscalls s = StrictSyscalls();
  AddRule(s, "connect", Allow());
  EffectiveSyscalls filtered = ComputeEffectiveSyscalls(s);
  EffectiveSyscalls routed = ComputeEffectiveSyscalls(s, PrologueGuardForm::kRules, ConnectRouting::kSupervisor);
  auto rules = RulesFor(routed, "connect");
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_EQ(rules[0].action.kind, ir::ActionKind::kNotify);
  EXPECT_TRUE(rules[0].conditions.empty());
  EXPECT_EQ(rules[0].group, "network-allow");
  ASSERT_EQ(RulesFor(filtered, "connect").size(), 1u);
  EXPECT_EQ(RulesFor(filtered, "connect")[0].action, Allow());
  // Everything but connect is identical.
  std::erase_if(routed.rules, [](const ir::SyscallRule& r) { return r.name == "connect"; });
  std::erase_if(filtered.rules, [](const ir::SyscallRule& r) { return r.name == "connect"; });
  EXPECT_EQ(routed.rules, filtered.rules);

  ir::Syscalls denies;  // default errno ENOSYS, connect denied explicitly
  AddRule(denies, "connect", Errno(EPERM));
  auto denied = RulesFor(ComputeEffectiveSyscalls(denies, PrologueGuardForm::kRules, ConnectRouting::kSupervisor), "connect");
  ASSERT_EQ(denied.size(), 1u);
  EXPECT_EQ(denied[0].action, Errno(EPERM));
  ir::Syscalls by_default;  // default errno ENOSYS, no connect rule: stays denied
  EXPECT_TRUE(RulesFor(ComputeEffectiveSyscalls(by_default, PrologueGuardForm::kRules, ConnectRouting::kSupervisor),
                       "connect").empty());
}

// A netlink socket's receive queue is charged to no memory cgroup, so with
// the network off (only loopback, which the enforcer brings up with an
// ioctl) the prologue refuses AF_NETLINK like AF_VSOCK and AF_ALG, in both
// forms, even where the policy allows `socket` by name; with the network on
// or an allow-list it does not.
TEST(EffectiveRules, NetlinkIsRefusedOnlyWithTheNetworkOff) {
  EXPECT_EQ(NetlinkSocketsFor(ir::Network{ir::NetworkMode::kOff, {}}), NetlinkSockets::kRefused);
  EXPECT_EQ(NetlinkSocketsFor(ir::Network{ir::NetworkMode::kOn, {}}), NetlinkSockets::kAllowed);
  EXPECT_EQ(NetlinkSocketsFor(ir::Network{ir::NetworkMode::kAllowList, {{"127.0.0.1", 9}}}),
            NetlinkSockets::kAllowed);
  // cocoon enforce runs an allow-list in the loopback-only namespace of the
  // network off (its connect broker reaches the host from the supervisor).
  EXPECT_EQ(EnforcerNetlinkSocketsFor(ir::Network{ir::NetworkMode::kOff, {}}), NetlinkSockets::kRefused);
  EXPECT_EQ(EnforcerNetlinkSocketsFor(ir::Network{ir::NetworkMode::kOn, {}}), NetlinkSockets::kAllowed);
  EXPECT_EQ(EnforcerNetlinkSocketsFor(ir::Network{ir::NetworkMode::kAllowList, {{"127.0.0.1", 9}}}),
            NetlinkSockets::kRefused);
  ir::Syscalls s = StrictSyscalls();
  AddRule(s, "socket", Allow());  // named singly: still no reopening
  auto netlink_refusals = [](const EffectiveSyscalls& e) {
    const ir::SyscallRule want{
        "socket", Errno(EAFNOSUPPORT), {{0, ir::CompareOp::kMaskedEq, 16, 0xffffffff}}, "prologue"};
    const std::vector<ir::SyscallRule> rules = RulesFor(e, "socket");
    return std::count(rules.begin(), rules.end(), want);
  };
  const EffectiveSyscalls refused = ComputeEffectiveSyscalls(s, PrologueGuardForm::kRules, ConnectRouting::kFilter,
                                                             NetlinkSockets::kRefused);
  EXPECT_TRUE(refused.errors.empty());
  EXPECT_EQ(netlink_refusals(refused), 1);
  const EffectiveSyscalls allowed = ComputeEffectiveSyscalls(s, PrologueGuardForm::kRules, ConnectRouting::kFilter,
                                                             NetlinkSockets::kAllowed);
  EXPECT_EQ(netlink_refusals(allowed), 0);
  EXPECT_EQ(ComputeEffectiveSyscalls(s, PrologueGuardForm::kBpfPrefix, ConnectRouting::kFilter,
                                     NetlinkSockets::kRefused)
                .socket_denied_families_in_prefix,
            (std::vector<uint32_t>{40, 38, 16}));
  EXPECT_EQ(ComputeEffectiveSyscalls(s, PrologueGuardForm::kBpfPrefix, ConnectRouting::kFilter,
                                     NetlinkSockets::kAllowed)
                .socket_denied_families_in_prefix,
            (std::vector<uint32_t>{40, 38}));
  // The default fails closed: a caller that does not say gets the refusal.
  EXPECT_EQ(netlink_refusals(ComputeEffectiveSyscalls(s)), 1);
}

void ExpectSame(const EffectiveSyscalls& a, const EffectiveSyscalls& b) {
  EXPECT_EQ(a.default_action, b.default_action);
  EXPECT_EQ(a.rules, b.rules);
  EXPECT_EQ(a.architectures, b.architectures);
  EXPECT_EQ(a.warnings, b.warnings);
  EXPECT_EQ(a.errors, b.errors);
  EXPECT_EQ(a.ioctl_denied_cmds, b.ioctl_denied_cmds);
  EXPECT_EQ(a.seccomp_listener_in_prefix, b.seccomp_listener_in_prefix);
  EXPECT_EQ(a.clone_new_mask_in_prefix, b.clone_new_mask_in_prefix);
  EXPECT_EQ(a.socket_denied_families_in_prefix, b.socket_denied_families_in_prefix);
  EXPECT_EQ(a.fcntl_denied_cmds_in_prefix, b.fcntl_denied_cmds_in_prefix);
}

// ComputeEffectiveSyscallForms (what `cocoon compile --target all` uses)
// gives exactly the two separate computations: plain strict, an allow-list
// (connect differs between the forms), a kill ioctl rule (keeps the rule
// form in both), a permissive default, and rules that cannot be expressed.
TEST(EffectiveRules, BothFormsAtOnceEqualEachFormAlone) {
  std::vector<ir::Syscalls> cases(5, StrictSyscalls());
  AddRule(cases[1], "connect", Allow());
  AddRule(cases[2], "ioctl", Kill(), {{1, ir::CompareOp::kEq, 0x5401, 0}});
  AddRule(cases[2], "socket", Allow(), {{0, ir::CompareOp::kEq, 1, 0}});
  cases[3].default_action = Allow();
  cases[3].default_explicitly_allows = true;
  AddRule(cases[3], "personality", Log());
  AddRule(cases[4], "read", Allow(), {{0, ir::CompareOp::kGt, 2, 0}, {0, ir::CompareOp::kLt, 9, 0}});
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    for (ConnectRouting connect : {ConnectRouting::kFilter, ConnectRouting::kSupervisor}) {
      for (NetlinkSockets netlink : {NetlinkSockets::kRefused, NetlinkSockets::kAllowed}) {
        const EffectiveSyscallForms forms = ComputeEffectiveSyscallForms(cases[i], connect, netlink);
        ExpectSame(forms.bpf, ComputeEffectiveSyscalls(cases[i], PrologueGuardForm::kBpfPrefix, connect, netlink));
        ExpectSame(forms.rules,
                   ComputeEffectiveSyscalls(cases[i], PrologueGuardForm::kRules, ConnectRouting::kFilter, netlink));
      }
    }
  }
}

}  // namespace
}  // namespace cocoon::backends

namespace cocoon::backends {
namespace {

// With `arch x86` the OCI rule form refuses the i386 multiplexers with an
// unconditional rule (it swallows the socket/IPC rules libseccomp folds into
// them); equal to an ENOSYS default it would be dropped, so it is EPERM then.
TEST(EffectiveRules, X86RefusesTheI386MultiplexersInBothForms) {
  ir::Syscalls s;  // default errno ENOSYS
  s.architectures = {ir::Arch::kX86_64, ir::Arch::kX86};
  s.rules.push_back({"socket", {ir::ActionKind::kAllow, 0}, {{0, ir::CompareOp::kEq, 1, 0}}, ""});
  s.rules.push_back({"socketcall", {ir::ActionKind::kAllow, 0}, {}, ""});
  EffectiveSyscalls rules_form = ComputeEffectiveSyscalls(s, PrologueGuardForm::kRules);
  for (const char* name : {"socketcall", "ipc"}) {
    auto rules = RulesFor(rules_form, name);
    ASSERT_EQ(rules.size(), 1u) << name;
    EXPECT_TRUE(rules[0].conditions.empty());
    EXPECT_EQ(rules[0].action, Errno(EPERM)) << name;
  }
  EXPECT_TRUE(HasWarning(rules_form, "socketcall"));
  s.default_action = ir::Action{ir::ActionKind::kKillProcess, 0};
  EXPECT_EQ(RulesFor(ComputeEffectiveSyscalls(s, PrologueGuardForm::kRules), "socketcall").at(0).action, Errno(ENOSYS));
  EffectiveSyscalls bpf_form = ComputeEffectiveSyscalls(s, PrologueGuardForm::kBpfPrefix);
  EXPECT_TRUE(bpf_form.i386_multiplexers_in_prefix);
  s.architectures = {ir::Arch::kX86_64};
  EXPECT_FALSE(ComputeEffectiveSyscalls(s, PrologueGuardForm::kBpfPrefix).i386_multiplexers_in_prefix);
  EXPECT_TRUE(RulesFor(ComputeEffectiveSyscalls(s, PrologueGuardForm::kRules), "ipc").empty());
}

// fcntl F_SETLEASE (1024, low 32 bits of the cmd) is refused in every
// policy: a prologue rule in the OCI form (fcntl64 too with `arch x86`, where
// i386 has it), a guard of the BPF prefix otherwise; a policy kill rule on
// fcntl keeps the rule form, where the kill outranks the refusal.
TEST(EffectiveRules, FcntlSetLeaseRefusedInBothForms) {
  ir::Syscalls s = StrictSyscalls();
  s.architectures = {ir::Arch::kX86_64};
  const ir::ArgCondition lease{1, ir::CompareOp::kMaskedEq, 1024, 0xffffffff};
  EffectiveSyscalls rules_form = ComputeEffectiveSyscalls(s, PrologueGuardForm::kRules);
  EXPECT_TRUE(rules_form.fcntl_denied_cmds_in_prefix.empty());
  auto refusals = [](const EffectiveSyscalls& e, const char* name, const ir::ArgCondition& lease) {
    size_t n = 0;
    for (const auto& r : RulesFor(e, name)) n += r.action == Errno(EPERM) && r.conditions == std::vector{lease};
    return n;
  };
  EXPECT_EQ(refusals(rules_form, "fcntl", lease), 1u);
  EXPECT_TRUE(RulesFor(rules_form, "fcntl64").size() <= 1u);  // strict's own unconditional allow, no refusal
  EXPECT_EQ(refusals(rules_form, "fcntl64", lease), 0u);
  s.architectures = {ir::Arch::kX86_64, ir::Arch::kX86};
  EXPECT_EQ(refusals(ComputeEffectiveSyscalls(s, PrologueGuardForm::kRules), "fcntl64", lease), 1u);
  EffectiveSyscalls bpf_form = ComputeEffectiveSyscalls(s, PrologueGuardForm::kBpfPrefix);
  EXPECT_EQ(bpf_form.fcntl_denied_cmds_in_prefix, (std::vector<uint32_t>{1024}));
  for (const char* name : {"fcntl", "fcntl64"}) {
    auto rules = RulesFor(bpf_form, name);
    ASSERT_EQ(rules.size(), 1u) << name;  // strict's `allow`, unsplit
    EXPECT_TRUE(rules[0].conditions.empty()) << name;
  }
  // A policy rule the guard shadows is dropped, one it does not is kept.
  AddRule(s, "fcntl64", Errno(EACCES), {{1, ir::CompareOp::kEq, 1024, 0}});
  AddRule(s, "fcntl", Errno(EACCES), {{1, ir::CompareOp::kEq, 1025, 0}});
  bpf_form = ComputeEffectiveSyscalls(s, PrologueGuardForm::kBpfPrefix);
  auto eacces = [](const EffectiveSyscalls& e, const char* name) {
    auto rules = RulesFor(e, name);
    return std::count_if(rules.begin(), rules.end(), [](const ir::SyscallRule& r) { return r.action == Errno(EACCES); });
  };
  EXPECT_EQ(eacces(bpf_form, "fcntl64"), 0);
  EXPECT_EQ(RulesFor(bpf_form, "fcntl64").size(), 1u);
  EXPECT_EQ(eacces(bpf_form, "fcntl"), 1);
  ir::Syscalls killing = StrictSyscalls();
  AddRule(killing, "fcntl64", Kill());
  EXPECT_TRUE(ComputeEffectiveSyscalls(killing, PrologueGuardForm::kBpfPrefix).fcntl_denied_cmds_in_prefix.empty());
}

}  // namespace
}  // namespace cocoon::backends
