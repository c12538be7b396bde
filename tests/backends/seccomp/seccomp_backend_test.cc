// Compiles syscall IR with libseccomp and runs fake syscalls through the
// userspace evaluator (the bpf_dsl style: ExpectErrno(EPERM, FakeSyscall(...))).
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <termios.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <iostream>
#include <random>

#include "compiler/backends/seccomp/rule_algebra.h"
#include "compiler/backends/seccomp/seccomp_backend.h"
#include "compiler/syscalls/syscall_groups.h"
#include "tests/backends/seccomp/test_policies.h"

namespace cocoon::backends {
namespace {

using namespace cocoon::backends::testing;  // NOLINT

constexpr uint32_t kX32Bit = 0x40000000;

class Filter {
 public:
  explicit Filter(const ir::Syscalls& syscalls, SupervisedRouting routing = SupervisedRouting::kNative,
                  DefaultAllowance allowance = DefaultAllowance::kRefuse) {
    rules_ = ComputeEffectiveSyscalls(syscalls, PrologueGuardForm::kBpfPrefix);
    SeccompFilterOptions options;
    options.routing = routing;
    options.default_allowance = allowance;
    auto built = BuildSeccompFilter(rules_, options);
    EXPECT_TRUE(built.ok()) << built.status().ToString();
    if (!built.ok()) return;
    filter_ = *built;
    program_ = *ParseBpf(filter_.bpf);
  }
  std::string Run(long nr, std::vector<uint64_t> args = {}, uint32_t arch = AUDIT_ARCH_X86_64) const {
    SeccompData data;
    data.nr = static_cast<int32_t>(nr);
    data.arch = arch;
    for (size_t i = 0; i < args.size() && i < 6; ++i) data.args[i] = args[i];
    auto result = EvaluateBpf(program_, data);
    if (!result.ok()) return "eval error: " + result.status().ToString();
    EXPECT_LE(result->executed, filter_.stats.worst_case_any);
    if ((result->ret & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ALLOW) {
      EXPECT_LE(result->executed, filter_.stats.worst_case_allow);
    }
    return DescribeSeccompRet(result->ret);
  }
  const CompiledSeccompFilter& compiled() const { return filter_; }
  const EffectiveSyscalls& rules() const { return rules_; }
  const BpfProgram& program() const { return program_; }

 private:
  EffectiveSyscalls rules_;
  CompiledSeccompFilter filter_;
  BpfProgram program_;
};

TEST(SeccompBackend, StrictAllowsDeniesAndKills) {
  Filter f(StrictSyscalls());
  EXPECT_EQ(f.Run(SYS_getpid), "allow");
  EXPECT_EQ(f.Run(SYS_openat), "allow");
  EXPECT_EQ(f.Run(SYS_execve), "allow");
  EXPECT_EQ(f.Run(SYS_mount), "errno(1)");
  EXPECT_EQ(f.Run(SYS_reboot), "errno(1)");
  EXPECT_EQ(f.Run(SYS_acct), "errno(38)");  // not in any rule: two-tier default
  EXPECT_EQ(f.Run(SYS_ptrace), "kill_process");
  EXPECT_EQ(f.Run(SYS_modify_ldt), "kill_process");
  EXPECT_EQ(f.Run(SYS_bpf), "errno(1)");            // prologue
  EXPECT_EQ(f.Run(SYS_io_uring_setup), "errno(1)");  // prologue
  EXPECT_EQ(f.Run(SYS_keyctl), "errno(1)");
}

TEST(SeccompBackend, ForeignArchAndX32AreKilled) {
  Filter f(StrictSyscalls());
  EXPECT_EQ(f.Run(SYS_getpid | kX32Bit), "kill_process");
  EXPECT_EQ(f.Run(20 /* i386 getpid */, {}, AUDIT_ARCH_I386), "kill_process");
  EXPECT_EQ(f.Run(SYS_getpid, {}, AUDIT_ARCH_AARCH64), "kill_process");
  EXPECT_EQ(f.Run(0x7fffffff), "kill_process");  // x32 bit set: bad arch
  EXPECT_EQ(f.Run(999), "errno(38)");
}

TEST(SeccompBackend, X32OnlyWhenThePolicyAddsIt) {
  ir::Syscalls s = StrictSyscalls();
  s.architectures = {ir::Arch::kX86_64, ir::Arch::kX32};
  Filter f(s);
  EXPECT_EQ(f.Run(SYS_getpid | kX32Bit), "allow");
  EXPECT_EQ(f.Run(20, {}, AUDIT_ARCH_I386), "kill_process");
}

TEST(SeccompBackend, CloneGuards) {
  Filter f(StrictSyscalls());
  EXPECT_EQ(f.rules().clone_new_mask_in_prefix, 0x7E020000u);
  for (const auto& r : f.rules().rules) EXPECT_TRUE(r.name != "clone" || r.conditions.empty()) << "split clone rule";
  EXPECT_EQ(f.Run(SYS_clone, {CLONE_NEWPID | (uint64_t{1} << 33)}), "errno(1)");
  EXPECT_EQ(f.Run(SYS_clone, {CLONE_NEWUSER}), "errno(1)");
  EXPECT_EQ(f.Run(SYS_clone, {CLONE_NEWNS | SIGCHLD}), "errno(1)");
  EXPECT_EQ(f.Run(SYS_clone, {CLONE_NEWNET}), "errno(1)");
  EXPECT_EQ(f.Run(SYS_clone, {SIGCHLD}), "allow");
  EXPECT_EQ(f.Run(SYS_clone, {CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD}), "allow");
  EXPECT_EQ(f.Run(SYS_unshare, {CLONE_NEWUSER}), "errno(1)");
  EXPECT_EQ(f.Run(SYS_unshare, {CLONE_FILES}), "errno(38)");  // unshare is not in @system-service
  EXPECT_EQ(f.Run(SYS_clone3), "errno(38)");
  EXPECT_EQ(f.Run(SYS_setns), "errno(1)");
}

TEST(SeccompBackend, PersonalityLimitedToSafeValues) {
  Filter f(StrictSyscalls());
  for (uint64_t v : {0x0ull, 0x8ull, 0x20000ull, 0x20008ull, 0xffffffffull}) {
    EXPECT_EQ(f.Run(SYS_personality, {v}), "allow") << v;
  }
  EXPECT_EQ(f.Run(SYS_personality, {0x0400000}), "errno(38)");  // READ_IMPLIES_EXEC
  EXPECT_EQ(f.Run(SYS_personality, {0x0040000}), "errno(38)");  // ADDR_NO_RANDOMIZE
}

// The same under a permissive default (the prologue's own refusal, no
// policy rule): the safe personas and the 0xffffffff query pass, whatever
// the upper 32 bits; every other value fails with EPERM, as in moby's
// profile. The query used to be refused: it sets every bit.
TEST(SeccompBackend, PermissiveDefaultAllowsSafePersonalitiesAndTheQuery) {
  ir::Syscalls s;
  s.default_action = Allow();
  s.default_explicitly_allows = true;
  SeccompFilterOptions options;
  options.default_allowance = DefaultAllowance::kPolicyExplicit;
  auto built = BuildSeccompFilter(ComputeEffectiveSyscalls(s, PrologueGuardForm::kBpfPrefix), options);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const BpfProgram program = *ParseBpf(built->bpf);
  SeccompData data;
  data.arch = AUDIT_ARCH_X86_64;
  data.nr = SYS_personality;
  for (uint64_t v : PersonalityTestValues()) {
    data.args[0] = v;
    auto result = EvaluateBpf(program, data);
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    EXPECT_EQ(DescribeSeccompRet(result->ret), IsSafePersonality(v) ? "allow" : "errno(1)")
        << std::hex << "personality(0x" << v << ")";
  }
}

// AF_VSOCK is not network-namespaced and AF_ALG exposes the kernel crypto
// API: both are refused whatever the policy's network setting.
TEST(SeccompBackend, SocketFamiliesOutsideTheNetnsDenied) {
  Filter f(StrictSyscalls());
  EXPECT_EQ(f.Run(SYS_socket, {40 /* AF_VSOCK */, 1}), "errno(97)");
  EXPECT_EQ(f.Run(SYS_socket, {38 /* AF_ALG */, 5}), "errno(97)");
  EXPECT_EQ(f.Run(SYS_socket, {(uint64_t{1} << 32) | 40, 1}), "errno(97)");  // int: high bits dropped
  EXPECT_EQ(f.Run(SYS_socket, {1 /* AF_UNIX */, 1}), "allow");
  EXPECT_EQ(f.Run(SYS_socket, {2 /* AF_INET */, 1}), "allow");
}

// AF_NETLINK follows the policy's network (effective_rules.h
// NetlinkSockets): refused with it off, allowed with it on or an allow-list,
// through the whole back end (CompileSeccomp reads policy.network).
TEST(SeccompBackend, NetlinkSocketsFollowTheNetwork) {
  for (ir::NetworkMode mode : {ir::NetworkMode::kOff, ir::NetworkMode::kOn, ir::NetworkMode::kAllowList}) {
    SCOPED_TRACE(static_cast<int>(mode));
    ir::Policy policy;
    policy.network.mode = mode;
    if (mode == ir::NetworkMode::kAllowList) policy.network.allow = {{"127.0.0.1", 9}};
    policy.syscalls = StrictSyscalls();
    auto artifacts = CompileSeccomp(policy);
    ASSERT_TRUE(artifacts.ok()) << artifacts.status().ToString();
    auto bpf = std::find_if(artifacts->begin(), artifacts->end(),
                            [](const Artifact& a) { return a.path == "linux.seccomp.bpf"; });
    ASSERT_NE(bpf, artifacts->end());
    const BpfProgram program = *ParseBpf(bpf->bytes);
    auto socket_answer = [&](uint64_t family, uint64_t type) {
      SeccompData data;
      data.nr = SYS_socket;
      data.arch = AUDIT_ARCH_X86_64;
      data.args[0] = family;
      data.args[1] = type;
      auto r = EvaluateBpf(program, data);
      return r.ok() ? DescribeSeccompRet(r->ret) : r.status().ToString();
    };
    // An allow-list runs in the loopback-only namespace of the network off.
    const std::string want = mode == ir::NetworkMode::kOn ? "allow" : "errno(97)";
    EXPECT_EQ(socket_answer(16 /* AF_NETLINK */, SOCK_RAW), want);
    EXPECT_EQ(socket_answer((uint64_t{1} << 32) | 16, SOCK_DGRAM), want);  // int: high bits dropped
    EXPECT_EQ(socket_answer(40 /* AF_VSOCK */, SOCK_STREAM), "errno(97)");  // whatever the network
    EXPECT_EQ(socket_answer(1 /* AF_UNIX */, SOCK_STREAM), "allow");
  }
}

TEST(SeccompBackend, IoctlTiocstiDenied) {
  Filter f(StrictSyscalls());
  EXPECT_EQ(f.Run(SYS_ioctl, {0, TIOCSTI}), "errno(1)");
  EXPECT_EQ(f.Run(SYS_ioctl, {0, TIOCLINUX}), "errno(1)");
  EXPECT_EQ(f.Run(SYS_ioctl, {0, 0xdead000000000000ull | TIOCSTI}), "errno(1)");  // kernel drops high bits
  EXPECT_EQ(f.Run(SYS_ioctl, {0, TCGETS}), "allow");
}

TEST(SeccompBackend, IoctlGuardIsInlineNotRules) {
  Filter f(StrictSyscalls());
  EXPECT_EQ(f.rules().ioctl_denied_cmds, (std::vector<uint32_t>{TIOCSTI, TIOCLINUX}));
  size_t ioctl_rules = 0;
  for (const auto& r : f.rules().rules) ioctl_rules += r.name == "ioctl";
  EXPECT_EQ(ioctl_rules, 1u) << "strict's `allow ioctl` should reach libseccomp as one unconditional rule";
  // The guards sit on the guarded syscalls' paths (guard_inline.h), no prefix.
  EXPECT_TRUE(f.compiled().guards_inline);
  EXPECT_EQ(f.compiled().prefix_instructions, 0u);
  EXPECT_EQ(f.Run(SYS_ioctl, {0, TIOCSTI}), "errno(1)");
  EXPECT_EQ(f.Run(SYS_ioctl, {0, TIOCLINUX}), "errno(1)");
  EXPECT_EQ(f.Run(SYS_ioctl, {0, TIOCSTI | (uint64_t{1} << 32)}), "errno(1)");
  EXPECT_EQ(f.Run(SYS_ioctl, {0, TIOCLINUX | (uint64_t{1} << 63)}), "errno(1)");
  EXPECT_EQ(f.Run(SYS_ioctl, {0, TCGETS}), "allow");
  EXPECT_EQ(f.Run(SYS_ioctl, {0, TIOCSTI + 1}), "allow");
  EXPECT_EQ(f.Run(SYS_getpid), "allow");
  EXPECT_EQ(f.Run(SYS_mount), "errno(1)");
  EXPECT_EQ(f.Run(SYS_ioctl, {0, TIOCSTI}, AUDIT_ARCH_AARCH64), "kill_process");  // foreign arch
  EXPECT_NE(f.compiled().pfc.find("cocoon guard markers"), std::string::npos);
  // Other syscalls pay nothing for the guards; the longest path is within a
  // guard block (5 instructions) of libseccomp's own, and never longer than
  // the prefix placement's.
  const auto& c = f.compiled();
  EXPECT_LE(c.stats.worst_case_allow, c.libseccomp_stats.worst_case_allow + 5);
  EXPECT_LE(c.inline_placement_stats.worst_case_allow, c.prefix_placement_stats.worst_case_allow);
  // The emitted program's number search (bpf_dispatch.h) can only shorten it.
  EXPECT_LE(c.stats.worst_case_allow, c.inline_placement_stats.worst_case_allow);
  EXPECT_LT(c.stats.instructions, c.inline_placement_stats.instructions / 2)
      << "strict's per-syscall compares should have become a search over number ranges";
}

// A guarded syscall with conditional rules only: some of its calls reach no
// marker, so the guards stay a prefix, with the same answers.
TEST(SeccompBackend, ConditionalIoctlRulesKeepThePrefix) {
  ir::Syscalls s = StrictSyscalls();
  for (auto& r : s.rules) {
    if (r.name == "ioctl") r.conditions = {{0, ir::CompareOp::kLe, 2, 0}};
  }
  Filter f(s);
  EXPECT_FALSE(f.compiled().guards_inline);
  // ld/jeq arch, ld nr, jeq ioctl/seccomp/clone/unshare/socket/fcntl, ld cmd, 2 jeq, ld op, jeq, ld flags,
  // jset, ld flags, jset, ld family, 3 jeq (AF_VSOCK, AF_ALG, AF_NETLINK: the network is off), ld fcntl cmd,
  // jeq F_SETLEASE, ret EPERM, ret EAFNOSUPPORT
  EXPECT_EQ(f.compiled().prefix_instructions, 26u);
  EXPECT_NE(f.compiled().pfc.find("cocoon guard prefix"), std::string::npos);
  EXPECT_EQ(f.Run(SYS_ioctl, {1, TIOCSTI}), "errno(1)");
  EXPECT_EQ(f.Run(SYS_ioctl, {7, TIOCSTI}), "errno(1)");  // no rule matches: the prefix still answers
  EXPECT_EQ(f.Run(SYS_ioctl, {1, TCGETS}), "allow");
  EXPECT_EQ(f.Run(SYS_ioctl, {7, TCGETS}), "errno(38)");
  EXPECT_EQ(f.Run(SYS_socket, {40, 1}), "errno(97)");
  EXPECT_EQ(f.Run(SYS_clone, {CLONE_NEWUSER}), "errno(1)");
  EXPECT_EQ(f.Run(SYS_fcntl, {3, 1024 /* F_SETLEASE */, 1}), "errno(1)");
  EXPECT_EQ(f.Run(SYS_fcntl, {3, 3 /* F_GETFL */}), "allow");
}

TEST(SeccompBackend, IoctlGuardWithoutAnIoctlRuleAndOnEveryArch) {
  ir::Syscalls s;
  s.default_action = Errno(ENOSYS);
  s.architectures = {ir::Arch::kX86_64, ir::Arch::kX32, ir::Arch::kX86};
  AddRule(s, "getpid", Allow());
  Filter f(s);
  EXPECT_EQ(f.Run(SYS_ioctl, {0, TIOCSTI}), "errno(1)");
  EXPECT_EQ(f.Run(SYS_ioctl, {0, TCGETS}), "errno(38)");  // the policy's default
  EXPECT_EQ(f.Run(514 | kX32Bit, {0, TIOCSTI}), "errno(1)");  // x32 ioctl
  EXPECT_EQ(f.Run(54, {0, TIOCLINUX}, AUDIT_ARCH_I386), "errno(1)");  // i386 ioctl
  EXPECT_EQ(f.Run(54, {0, TCGETS}, AUDIT_ARCH_I386), "errno(38)");
  EXPECT_EQ(f.Run(SYS_getpid), "allow");
}

TEST(SeccompBackend, IoctlKillRuleOutranksThePrefix) {
  ir::Syscalls s = StrictSyscalls();
  for (auto& r : s.rules) {
    if (r.name == "ioctl") r.action = Kill();
  }
  Filter f(s);
  EXPECT_TRUE(f.rules().ioctl_denied_cmds.empty());  // rule form: kill beats the prologue's EPERM
  EXPECT_TRUE(f.rules().seccomp_listener_in_prefix);  // the other guards stay out of the rules
  EXPECT_EQ(f.Run(SYS_ioctl, {0, TIOCSTI}), "kill_process");
  EXPECT_EQ(f.Run(SYS_ioctl, {0, TCGETS}), "kill_process");
}

TEST(SeccompBackend, SeccompListenerDenied) {
  Filter f(StrictSyscalls());
  EXPECT_TRUE(f.rules().seccomp_listener_in_prefix);
  for (const auto& r : f.rules().rules) EXPECT_TRUE(r.name != "seccomp" || r.conditions.empty()) << "split seccomp rule";
  EXPECT_EQ(f.Run(SYS_seccomp, {SECCOMP_SET_MODE_FILTER | (uint64_t{1} << 40),
                                SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_TSYNC}), "errno(1)");
  EXPECT_EQ(f.Run(SYS_seccomp, {SECCOMP_SET_MODE_STRICT, SECCOMP_FILTER_FLAG_NEW_LISTENER}), "allow");
  EXPECT_EQ(f.Run(SYS_seccomp, {SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER}), "errno(1)");
  EXPECT_EQ(f.Run(SYS_seccomp, {SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC}), "allow");
}

TEST(SeccompBackend, RoutedActionsGoToUserNotif) {
  ir::Syscalls s = StrictSyscalls();
  AddRule(s, "sethostname", Log());
  Filter routed(s, SupervisedRouting::kRouteToNotify);
  EXPECT_EQ(routed.Run(SYS_ptrace), "notify");
  EXPECT_EQ(routed.Run(SYS_sethostname), "notify");
  EXPECT_EQ(routed.Run(SYS_getpid | kX32Bit), "kill_process");  // bad arch stays in the kernel
  EXPECT_TRUE(routed.compiled().needs_listener);
  auto json = nlohmann::json::parse(SeccompSidecarJson(routed.rules(), routed.compiled(),
                                                       SupervisedRouting::kRouteToNotify));
  bool saw_ptrace = false;
  for (const auto& e : json["supervised"]) {
    if (e["syscall"] == "ptrace") {
      saw_ptrace = true;
      EXPECT_EQ(e["action"], "kill");
      EXPECT_EQ(e["numbers"]["x86_64"], SYS_ptrace);
    }
  }
  EXPECT_TRUE(saw_ptrace);
  EXPECT_EQ(json["default_action"]["errno"], 38);
  EXPECT_GT(json["stats"]["worst_case_allow"].get<int>(), 0);
}

// Under `default log` every call no rule names reaches the listener too, so
// the enforcer answers an unlisted (arch, number) with the default: the
// sidecar must list each supervised rule at every number the filter places
// it on. libseccomp puts an i386 `kill socket` on the direct syscall (359)
// although its name resolves to socketcall's pseudo number; the sidecar left
// x86 out, and the enforcer would have logged (allowed) that socket call.
TEST(SeccompBackend, TheSidecarListsASupervisedRuleAtEveryNumberTheFilterRoutes) {
  ir::Syscalls s;
  s.default_action = Log();
  s.architectures = {ir::Arch::kX86_64, ir::Arch::kX86};
  AddRule(s, "socket", Kill());
  AddRule(s, "getpid", Allow());
  Filter routed(s, SupervisedRouting::kRouteToNotify, DefaultAllowance::kPolicyExplicit);
  EXPECT_EQ(routed.Run(359, {2, 1, 0}, AUDIT_ARCH_I386), "notify");
  EXPECT_EQ(routed.Run(SYS_socket, {2, 1, 0}), "notify");
  EXPECT_EQ(routed.Run(SYS_mincore), "notify");  // the default's call
  auto json = nlohmann::json::parse(SeccompSidecarJson(routed.rules(), routed.compiled(),
                                                       SupervisedRouting::kRouteToNotify));
  EXPECT_EQ(json["default_supervised"], true);
  bool saw_socket = false;
  for (const auto& e : json["supervised"]) {
    if (e["syscall"] != "socket") continue;
    saw_socket = true;
    EXPECT_EQ(e["action"], "kill");
    EXPECT_EQ(e["numbers"]["x86_64"], SYS_socket);
    EXPECT_EQ(e["numbers"]["x86"], 359) << e.dump();
  }
  EXPECT_TRUE(saw_socket);
}

// SeccompCompileInput keys the compiled-filter cache (cli/policy_compile_util.cc):
// what the filter does not read must not change it, and everything it reads must.
TEST(SeccompBackend, CompileInputCoversWhatTheFilterReadsAndNothingElse) {
  ir::Policy base;
  base.syscalls = StrictSyscalls();
  const std::string key = SeccompCompileInput(base);

  ir::Policy other_limits = base;
  other_limits.limits.wall_time_ms = {true, 1234, ir::Enforcement::kRequired};
  other_limits.limits.memory_bytes = {true, 1 << 30, ir::Enforcement::kBestEffort};
  other_limits.environment.set.push_back({"A", "b"});
  other_limits.filesystem.mounts.push_back({ir::MountKind::kReadOnly, "/opt", "/opt", 0, false});
  other_limits.cwd = "/elsewhere";
  EXPECT_EQ(SeccompCompileInput(other_limits), key);

  auto differs = [&](const char* what, const ir::Policy& changed) {
    EXPECT_NE(SeccompCompileInput(changed), key) << what << " must change the filter's cache key";
  };
  ir::Policy p = base;
  p.network.mode = ir::NetworkMode::kAllowList;  // connect goes to the broker
  differs("an allow-list", p);
  p = base;
  p.network.mode = ir::NetworkMode::kOn;  // netlink is no longer refused
  differs("the network on", p);
  p = base;
  p.syscalls.default_action = Kill();
  differs("the default action", p);
  p = base;
  p.syscalls.default_explicitly_allows = true;
  differs("an explicit default allow", p);
  p = base;
  p.syscalls.architectures.push_back(ir::Arch::kX32);
  differs("an extra architecture", p);
  p = base;
  p.syscalls.reopened.push_back("bpf");
  differs("a reopened prologue syscall", p);
  ASSERT_FALSE(base.syscalls.rules.empty());
  p = base;
  p.syscalls.rules[0].action = Errno(13);
  differs("a rule's action", p);
  p = base;
  p.syscalls.rules[0].conditions.push_back({1, ir::CompareOp::kMaskedEq, 2, 3});
  differs("a rule's condition", p);
  ir::Policy q = p;
  q.syscalls.rules[0].conditions.back().mask = 7;
  EXPECT_NE(SeccompCompileInput(q), SeccompCompileInput(p)) << "a condition's mask";
  p = base;
  p.syscalls.rules[0].group = "@other";
  differs("a rule's group (the sidecar names it)", p);
  p = base;
  p.syscalls.rules.pop_back();
  differs("a rule less", p);
}

// The key's exact text: the compiled-filter caches of earlier runs hold it,
// so a rewrite of how it is built must not change it.
TEST(SeccompBackend, CompileInputTextIsStable) {
  ir::Policy p;
  p.network.mode = ir::NetworkMode::kAllowList;
  p.syscalls.default_action = Errno(38);
  p.syscalls.architectures = {ir::Arch::kX86_64, ir::Arch::kX86};
  p.syscalls.reopened = {"bpf"};
  p.syscalls.rules = {{"ioctl", Errno(1), {{1, ir::CompareOp::kMaskedEq, 0x5412, 0xffffffff}}, ""},
                      {"read", Allow(), {}, "@basic-io"},
                      {"socket", Kill(), {{0, ir::CompareOp::kGt, 18446744073709551615ull, 0}, {2, ir::CompareOp::kLt, 3, 0}}, ""}};
  EXPECT_EQ(SeccompCompileInput(p),
            "cocoon-seccomp-input-v2\n"
            "routing 1\n"
            "netlink 0\n"  // refused: cocoon enforce runs an allow-list in a loopback-only namespace
            "default 1/38\n"
            "arch 0\n"
            "arch 2\n"
            "reopened bpf\n"
            "rule 5:ioctl 1/1 group 0: arg1 6 21522 4294967295\n"
            "rule 4:read 0/0 group 9:@basic-io\n"
            "rule 6:socket 2/0 group 0: arg0 4 18446744073709551615 0 arg2 2 3 0\n");
}

// `cocoon check` builds a filter once per distinct compile input: a profile
// whose syscall section is another's gets that profile's answer, whatever
// else differs; one that differs is built for itself.
TEST(SeccompBackend, FilterBuildProblemsMemoBuildsEachInputOnce) {
  FilterBuildProblemsMemo memo;
  ir::Policy base;
  base.syscalls = StrictSyscalls();
  EXPECT_TRUE(memo(base).empty());
  ir::Policy other_limits = base;
  other_limits.limits.memory_bytes = {true, 1 << 30, ir::Enforcement::kRequired};
  other_limits.cwd = "/elsewhere";
  EXPECT_TRUE(memo(other_limits).empty());
  EXPECT_EQ(memo.builds(), 1u);
  // A rule set libseccomp 2.5.4 miscompiles (seccomp_verify.h): refused, and
  // the answer is that of FilterBuildProblems itself.
  ir::Policy bad = base;
  bad.syscalls.rules.erase(std::remove_if(bad.syscalls.rules.begin(), bad.syscalls.rules.end(),
                                          [](const ir::SyscallRule& r) { return r.name == "read"; }),
                           bad.syscalls.rules.end());
  bad.syscalls.rules.push_back({"read", ir::Action{ir::ActionKind::kNotify, 0},
                                {{0, ir::CompareOp::kLe, 2, 0}, {1, ir::CompareOp::kMaskedEq, 0xff, 0xff}}, ""});
  bad.syscalls.rules.push_back({"read", Allow(), {{0, ir::CompareOp::kGt, 0x100000000ull, 0}}, ""});
  std::sort(bad.syscalls.rules.begin(), bad.syscalls.rules.end(),
            [](const ir::SyscallRule& a, const ir::SyscallRule& b) { return a.name < b.name; });
  const std::vector<ir::SyscallRuleProblem> expected = FilterBuildProblems(bad);
  ASSERT_FALSE(expected.empty());
  const std::vector<ir::SyscallRuleProblem> got = memo(bad);
  ASSERT_EQ(got.size(), expected.size());
  EXPECT_EQ(got[0].syscall, expected[0].syscall);
  EXPECT_EQ(got[0].message, expected[0].message);
  EXPECT_EQ(memo(bad).size(), expected.size());
  EXPECT_EQ(memo.builds(), 2u);
}

// fcntl(fd, F_SETLEASE, ...) is refused in every policy (effective_rules.h:
// rootless, a lease on a file shared with the host stalls every host writer's
// open for up to lease-break-time), like ioctl TIOCSTI; the rest of fcntl is
// the policy's. One row per compiled arch: its audit arch and fcntl numbers
// (i386 has fcntl64 too).
constexpr uint64_t kFSetLease = 1024;  // <linux/fcntl.h> F_LINUX_SPECIFIC_BASE + 0
constexpr uint64_t kFGetFl = 3, kFSetFl = 4;

struct FcntlOnArch {
  ir::Arch arch;
  uint32_t audit_arch;
  std::vector<long> numbers;
  bool wide_args;  // a 64-bit ABI: the upper half of the cmd reaches seccomp
};

const std::vector<FcntlOnArch>& FcntlOnEveryArch() {
  static const std::vector<FcntlOnArch> rows = {
      {ir::Arch::kX86_64, AUDIT_ARCH_X86_64, {72}, true},
      {ir::Arch::kX32, AUDIT_ARCH_X86_64, {72 | kX32Bit}, true},
      {ir::Arch::kX86, AUDIT_ARCH_I386, {55, 221 /* fcntl64 */}, false},
      {ir::Arch::kAarch64, AUDIT_ARCH_AARCH64, {25}, true},
  };
  return rows;
}

// `s` on every arch of FcntlOnEveryArch, compiled and checked: F_SETLEASE
// gets errno(EPERM), F_GETFL and F_SETFL get `permitted`.
void ExpectLeaseRefusedOnEveryArch(ir::Syscalls s, const std::string& permitted) {
  s.architectures.clear();
  for (const FcntlOnArch& row : FcntlOnEveryArch()) s.architectures.push_back(row.arch);
  const EffectiveSyscalls rules = ComputeEffectiveSyscalls(s, PrologueGuardForm::kBpfPrefix);
  EXPECT_EQ(rules.fcntl_denied_cmds_in_prefix, (std::vector<uint32_t>{kFSetLease}));
  SeccompFilterOptions options;
  options.default_allowance = DefaultAllowance::kPolicyExplicit;
  auto built = BuildSeccompFilter(rules, options);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  const BpfProgram program = *ParseBpf(built->bpf);
  auto run = [&](uint32_t audit_arch, long nr, uint64_t cmd) {
    SeccompData d;
    d.arch = audit_arch;
    d.nr = static_cast<int32_t>(nr);
    d.args[0] = 3;
    d.args[1] = cmd;
    d.args[2] = 1;  // F_WRLCK for the lease, O_APPEND-ish flags otherwise
    return DescribeSeccompRet(EvaluateBpf(program, d)->ret);
  };
  for (const FcntlOnArch& row : FcntlOnEveryArch()) {
    for (long nr : row.numbers) {
      SCOPED_TRACE(std::string(syscalls::ArchName(row.arch)) + " nr " + std::to_string(nr));
      EXPECT_EQ(run(row.audit_arch, nr, kFSetLease), "errno(1)");
      if (row.wide_args) {
        EXPECT_EQ(run(row.audit_arch, nr, kFSetLease | 0xdead00000000ULL), "errno(1)");  // int cmd
      }
      EXPECT_EQ(run(row.audit_arch, nr, kFGetFl), permitted);
      EXPECT_EQ(run(row.audit_arch, nr, kFSetFl), permitted);
      EXPECT_EQ(run(row.audit_arch, nr, kFSetLease + 1), permitted);  // F_GETLEASE
    }
  }
}

TEST(SeccompBackend, FcntlSetLeaseRefusedUnderStrictOnEveryArch) {
  ExpectLeaseRefusedOnEveryArch(StrictSyscalls(), "allow");
}

TEST(SeccompBackend, FcntlSetLeaseRefusedUnderDefaultAllowOnEveryArch) {
  ir::Syscalls s;
  s.default_action = Allow();
  AddRule(s, "mount", Errno(EPERM));
  ExpectLeaseRefusedOnEveryArch(s, "allow");
}

// Strict's `allow fcntl` stays one unconditional rule: the guard is inline
// (on fcntl's path only), not ~100 masked pieces.
TEST(SeccompBackend, FcntlGuardIsInlineNotRules) {
  Filter f(StrictSyscalls());
  size_t fcntl_rules = 0;
  for (const auto& r : f.rules().rules) fcntl_rules += r.name == "fcntl";
  EXPECT_EQ(fcntl_rules, 1u);
  EXPECT_TRUE(f.compiled().guards_inline);
  EXPECT_EQ(f.Run(SYS_fcntl, {3, kFSetLease, 1}), "errno(1)");
  EXPECT_EQ(f.Run(SYS_fcntl, {3, kFGetFl}), "allow");
  EXPECT_NE(f.compiled().pfc.find("fcntl F_SETLEASE"), std::string::npos);
}

// A policy's own `deny fcntl if arg1 == 1024` is answered by the guard
// first and dropped (like ShadowedByIoctlPrefix); a kill rule on fcntl
// outranks the guard's errno, so the refusal goes back to rule form.
TEST(SeccompBackend, FcntlRulesTheGuardShadowsAreDropped) {
  ir::Syscalls s = StrictSyscalls();
  AddRule(s, "fcntl", Errno(EACCES), {{1, ir::CompareOp::kEq, kFSetLease, 0}});
  Filter f(s);
  for (const auto& r : f.rules().rules) EXPECT_FALSE(r.name == "fcntl" && !r.conditions.empty());
  EXPECT_TRUE(f.compiled().guards_inline);
  EXPECT_EQ(f.Run(SYS_fcntl, {3, kFSetLease, 1}), "errno(1)");
  ir::Syscalls killing = StrictSyscalls();
  for (auto& r : killing.rules) {
    if (r.name == "fcntl") r.action = Kill();
  }
  Filter k(killing);
  EXPECT_TRUE(k.rules().fcntl_denied_cmds_in_prefix.empty());
  EXPECT_EQ(k.rules().ioctl_denied_cmds, (std::vector<uint32_t>{TIOCSTI, TIOCLINUX}));  // the others stay guards
  EXPECT_EQ(k.Run(SYS_fcntl, {3, kFSetLease, 1}), "kill_process");
  EXPECT_EQ(k.Run(SYS_fcntl, {3, kFGetFl}), "kill_process");
}

TEST(SeccompBackend, RefusesPermissiveDefaultUnlessExplicit) {
  ir::Syscalls s;
  s.default_action = Allow();
  AddRule(s, "mount", Errno(EPERM));
  auto refused = BuildSeccompFilter(ComputeEffectiveSyscalls(s), {});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("default action allows"), std::string::npos);
  SeccompFilterOptions options;
  options.default_allowance = DefaultAllowance::kPolicyExplicit;
  auto built = BuildSeccompFilter(ComputeEffectiveSyscalls(s), options);
  ASSERT_TRUE(built.ok()) << built.status().ToString();
  BpfProgram p = *ParseBpf(built->bpf);
  EXPECT_EQ(p.back().code, BPF_RET | BPF_K);
  EXPECT_NE(p.back().k & SECCOMP_RET_ACTION_FULL, SECCOMP_RET_ALLOW);
  // Even with default allow, the prologue and personality guard hold.
  SeccompData d;
  d.arch = AUDIT_ARCH_X86_64;
  d.nr = SYS_personality;
  d.args[0] = 0x0400000;
  EXPECT_EQ(DescribeSeccompRet(EvaluateBpf(p, d)->ret), "errno(1)");
  d.nr = SYS_clone;
  d.args[0] = CLONE_NEWUSER;
  EXPECT_EQ(DescribeSeccompRet(EvaluateBpf(p, d)->ret), "errno(1)");
}

TEST(SeccompBackend, EndsInDenyAndReportsBothLayouts) {
  Filter f(StrictSyscalls());
  const auto& c = f.compiled();
  EXPECT_EQ(f.program().back().code, BPF_RET | BPF_K);
  EXPECT_EQ(f.program().back().k, SECCOMP_RET_ERRNO | EPERM);  // the inline guards' shared deny
  // A strict-sized filter only builds the tree (the linear chain cannot win).
  EXPECT_EQ(c.linear_stats.instructions, 0u);
  EXPECT_GT(c.binary_tree_stats.instructions, 0u);
  EXPECT_EQ(c.optimize_level, 2);
  EXPECT_NE(c.pfc.find("clone"), std::string::npos);
  // A small one builds both and keeps the shorter worst case.
  ir::Syscalls small;
  small.default_action = Errno(ENOSYS);
  for (const char* name : {"read", "write", "exit_group"}) AddRule(small, name, Allow());
  Filter g(small);
  const auto& d = g.compiled();
  EXPECT_GT(d.linear_stats.instructions, 0u);
  EXPECT_GT(d.binary_tree_stats.instructions, 0u);
  EXPECT_EQ(d.stats.worst_case_allow,
            std::min(d.linear_stats.worst_case_allow, d.binary_tree_stats.worst_case_allow));
}

// Random conditional rules on syscalls the prologue leaves alone: the compiled
// BPF must agree with "most restrictive matching rule wins, else default".
TEST(SeccompBackend, RandomRuleSetsMatchReferenceSemantics) {
  std::mt19937_64 rng(1234);
  // Their arguments are 64-bit in the kernel (unsigned long, size_t), so the
  // reference is the plain 64-bit comparison (kernel_widths.h leaves them be).
  const std::vector<std::pair<std::string, long>> names = {{"munmap", SYS_munmap}, {"mlock", SYS_mlock},
                                                           {"getpid", SYS_getpid}};
  const std::vector<ir::Action> actions = {Allow(), Errno(EPERM), Errno(EACCES), Kill(), Log()};
  const uint64_t values[] = {0, 1, 2, 3, 0x10, 0xff, 0x100000000ull};
  int refused = 0;
  for (int round = 0; round < 31; ++round) {
    ir::Syscalls s;
    s.default_action = Errno(ENOSYS);
    const int n = 1 + static_cast<int>(rng() % 6);
    for (int i = 0; i < n; ++i) {
      std::vector<ir::ArgCondition> conds;
      const int nc = static_cast<int>(rng() % 3);
      for (int j = 0; j < nc; ++j) {
        ir::ArgCondition c;
        c.arg = static_cast<uint8_t>(rng() % 2);
        c.op = static_cast<ir::CompareOp>(rng() % 7);
        c.value = values[rng() % 7];
        c.mask = c.op == ir::CompareOp::kMaskedEq ? (values[rng() % 7] | c.value) : 0;
        if (std::any_of(conds.begin(), conds.end(), [&](auto& o) { return o.arg == c.arg; })) continue;
        conds.push_back(c);
      }
      const auto& [name, nr] = names[rng() % names.size()];
      AddRule(s, name, actions[rng() % actions.size()], conds);
    }
    EffectiveSyscalls eff = ComputeEffectiveSyscalls(s);
    if (!eff.errors.empty()) continue;  // an unrepresentable overlap is refused, not miscompiled
    // libseccomp gets very slow with hundreds of rules on one syscall; keep the test fast.
    if (eff.rules.size() > 60) continue;
    auto built = BuildSeccompFilter(eff, {});
    if (!built.ok()) {
      // Both layouts failed translation validation: refused, never emitted.
      EXPECT_NE(built.status().message().find("miscompiled"), std::string::npos) << built.status().ToString();
      ++refused;
      continue;
    }
    BpfProgram p = *ParseBpf(built->bpf);
    for (const auto& [name, nr] : names) {
      for (uint64_t a0 : values) {
        for (uint64_t a1 : values) {
          uint64_t args[6] = {a0, a1, 0, 0, 0, 0};
          ir::Action expected = s.default_action;
          int best = -1;
          for (const auto& r : s.rules) {
            if (r.name != name || !ConjunctionMatches(r.conditions, args)) continue;
            int rank = ActionRank(r.action) * 1000 - r.action.errno_value;
            if (rank > best) best = rank, expected = r.action;
          }
          SeccompData d;
          d.nr = static_cast<int32_t>(nr);
          d.arch = AUDIT_ARCH_X86_64;
          d.args[0] = a0;
          d.args[1] = a1;
          const uint32_t ret = EvaluateBpf(p, d)->ret;
          std::string want = expected.kind == ir::ActionKind::kErrno ? "errno(" + std::to_string(expected.errno_value) + ")"
                             : expected.kind == ir::ActionKind::kAllow ? "allow"
                             : expected.kind == ir::ActionKind::kLog   ? "notify"
                                                                       : "notify";
          ASSERT_EQ(DescribeSeccompRet(ret), want) << "round " << round << " " << name << " a0=" << a0
                                                   << " a1=" << a1 << "\n" << built->pfc;
        }
      }
    }
  }
  EXPECT_LT(refused, 10) << "libseccomp workarounds refuse too many rule sets";
  std::cout << "rule sets refused after failed translation validation: " << refused << "/31\n";
}

}  // namespace
}  // namespace cocoon::backends
