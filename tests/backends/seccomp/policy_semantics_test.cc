// Policy text through the real front end and the seccomp back end, then
// fake syscalls through the userspace evaluator: regressions where the
// compiled filter's answer differed from the language's rules.
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sys/syscall.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "compiler/backends/artifact.h"
#include "compiler/backends/seccomp/seccomp_backend.h"
#include "compiler/frontend/frontend.h"

namespace cocoon::backends {
namespace {

ir::Policy MustCheck(const std::string& syscalls_body) {
  Diagnostics diagnostics;
  frontend::FrontendOptions options;
  auto policy = frontend::CompilePolicyText("t.cocoon", "profile t {\n  syscalls {\n" + syscalls_body + "\n  }\n}\n",
                                            "", options, diagnostics);
  EXPECT_TRUE(policy.has_value()) << diagnostics.Render();
  return policy.value_or(ir::Policy{});
}

BpfProgram MustCompile(const ir::Policy& policy) {
  auto artifacts = CompileSeccomp(policy);
  EXPECT_TRUE(artifacts.ok()) << artifacts.status().ToString();
  if (!artifacts.ok()) return {};
  for (const Artifact& a : *artifacts) {
    if (a.path == "linux.seccomp.bpf") return ParseBpf(a.bytes).value();
  }
  ADD_FAILURE() << "no linux.seccomp.bpf";
  return {};
}

std::string Eval(const BpfProgram& p, long nr, std::vector<uint64_t> args = {}, uint32_t arch = AUDIT_ARCH_X86_64) {
  SeccompData d;
  d.nr = static_cast<int32_t>(nr);
  d.arch = arch;
  for (size_t i = 0; i < args.size() && i < 6; ++i) d.args[i] = args[i];
  auto r = EvaluateBpf(p, d);
  return r.ok() ? DescribeSeccompRet(r->ret) : "eval error: " + r.status().ToString();
}

// `default log` is as permissive as `default allow` (it records each call
// too). Written by the policy it is explicit, so the policy compiles and the
// default reaches the supervisor (which logs and lets the call continue);
// the checker used to accept it while compile and enforce refused ("the
// policy must say `default allow`").
TEST(PolicySemantics, DefaultLogWrittenByThePolicyCompiles) {
  const ir::Policy policy = MustCheck("    default log\n    allow @default");
  EXPECT_TRUE(policy.syscalls.default_explicitly_allows);
  const BpfProgram program = MustCompile(policy);
  EXPECT_EQ(Eval(program, SYS_getpid), "allow");
  EXPECT_EQ(Eval(program, SYS_mount), "notify");
}

// An unconditional rule with the default's action still outranks a less
// strict conditional rule on the same syscall ("the more restrictive action
// wins"); the checker used to drop it as redundant, leaving only the allow.
TEST(PolicySemantics, UnconditionalRuleEqualToTheDefaultStillOutranksConditionalAllow) {
  for (const char* def : {"errno EPERM", "errno ENOSYS"}) {
    SCOPED_TRACE(def);
    const std::string deny = std::string(def) == "errno EPERM" ? "deny ptrace" : "deny ptrace errno ENOSYS";
    const ir::Policy policy = MustCheck(std::string("    default ") + def + "\n    allow @default\n    " + deny +
                                        "\n    allow ptrace if arg0 == 0");
    const BpfProgram program = MustCompile(policy);
    const std::string want = std::string(def) == "errno EPERM" ? "errno(1)" : "errno(38)";
    EXPECT_EQ(Eval(program, SYS_ptrace, {0 /* PTRACE_TRACEME */}), want);
    EXPECT_EQ(Eval(program, SYS_ptrace, {16 /* PTRACE_ATTACH */, 1}), want);
    EXPECT_EQ(Eval(program, SYS_getpid), "allow");
  }
}

// i386 (`arch x86`, int 0x80): libseccomp adds socket rules to socketcall
// with arg0 rewritten to SYS_SOCKET and the family test dropped, so
// socketcall(SYS_SOCKET, {AF_INET, ...}) passed `allow socket if arg0 ==
// AF_UNIX`, and the AF_VSOCK/AF_ALG refusal. The multiplexers are refused
// outright now, and the direct i386 socket(2) keeps its rules and guard.
TEST(PolicySemantics, I386SocketcallAndIpcMultiplexersAreRefused) {
  constexpr long kI386Socketcall = 102, kI386Ipc = 117, kI386Socket = 359, kI386Getpid = 20;
  constexpr uint64_t kSysSocket = 1, kSemop = 1, kPointer = 0x10000;
  const ir::Policy policy = MustCheck(
      "    default errno ENOSYS\n    allow @default\n    allow socket if arg0 == AF_UNIX\n"
      "    allow socket if arg0 == AF_INET\n    allow semop\n    arch x86");
  auto artifacts = CompileSeccomp(policy);
  ASSERT_TRUE(artifacts.ok()) << artifacts.status().ToString();
  bool warned = false;
  for (const std::string& w : artifacts->front().warnings) warned |= w.find("socketcall") != std::string::npos;
  EXPECT_TRUE(warned);
  const BpfProgram program = ParseBpf(artifacts->front().bytes).value();
  EXPECT_EQ(Eval(program, kI386Socketcall, {kSysSocket, kPointer}, AUDIT_ARCH_I386), "errno(38)");
  EXPECT_EQ(Eval(program, kI386Socketcall, {2 /* SYS_BIND */, kPointer}, AUDIT_ARCH_I386), "errno(38)");
  EXPECT_EQ(Eval(program, kI386Ipc, {kSemop, 0}, AUDIT_ARCH_I386), "errno(38)");
  EXPECT_EQ(Eval(program, kI386Socket, {1 /* AF_UNIX */, 1}, AUDIT_ARCH_I386), "allow");
  EXPECT_EQ(Eval(program, kI386Socket, {2 /* AF_INET */, 1}, AUDIT_ARCH_I386), "allow");
  EXPECT_EQ(Eval(program, kI386Socket, {10 /* AF_INET6 */, 1}, AUDIT_ARCH_I386), "errno(38)");
  EXPECT_EQ(Eval(program, kI386Getpid, {}, AUDIT_ARCH_I386), "allow");
  EXPECT_EQ(Eval(program, SYS_socket, {1, 1}), "allow");  // x86_64 unchanged
  EXPECT_EQ(Eval(program, SYS_socket, {10, 1}), "errno(38)");
}

// The socket-family refusal (AF_VSOCK, AF_ALG) also covers i386's direct
// socket(2), which libseccomp numbers as a pseudo syscall: the guard prefix
// used to skip it there, so an unconditional `allow socket` let
// socket(AF_VSOCK) through int 0x80.
TEST(PolicySemantics, I386DirectSocketKeepsTheFamilyRefusal) {
  constexpr long kI386Socket = 359;
  const BpfProgram program =
      MustCompile(MustCheck("    default errno ENOSYS\n    allow @default\n    allow socket\n    arch x86"));
  EXPECT_EQ(Eval(program, kI386Socket, {40 /* AF_VSOCK */, 1}, AUDIT_ARCH_I386), "errno(97)");
  EXPECT_EQ(Eval(program, kI386Socket, {38 /* AF_ALG */, 5}, AUDIT_ARCH_I386), "errno(97)");
  EXPECT_EQ(Eval(program, kI386Socket, {2 /* AF_INET */, 1}, AUDIT_ARCH_I386), "allow");
  EXPECT_EQ(Eval(program, 102, {1, 0x10000}, AUDIT_ARCH_I386), "errno(38)");
  EXPECT_EQ(Eval(program, SYS_socket, {40, 1}), "errno(97)");
}

// strict with `arch x86`: the translation validation now also runs on i386
// (every rule, the guards, the multiplexers) and must accept it.
TEST(PolicySemantics, StrictWithX86CompilesAndRefusesTheMultiplexers) {
  Diagnostics diagnostics;
  frontend::FrontendOptions options;
  options.search_paths = {std::string(COCOON_SOURCE_DIR) + "/policies"};
  auto policy = frontend::CompilePolicyText(
      "t.cocoon", "import \"strict\"\nprofile t extends strict {\n  syscalls {\n    arch x86\n  }\n}\n", "", options,
      diagnostics);
  ASSERT_TRUE(policy.has_value()) << diagnostics.Render();
  EXPECT_NE(diagnostics.Render().find("socketcall"), std::string::npos) << diagnostics.Render();
  const BpfProgram program = MustCompile(*policy);
  EXPECT_EQ(Eval(program, 102 /* socketcall */, {1, 0x10000}, AUDIT_ARCH_I386), "errno(38)");
  EXPECT_EQ(Eval(program, 117 /* ipc */, {1, 0}, AUDIT_ARCH_I386), "errno(38)");
  EXPECT_EQ(Eval(program, 359 /* socket */, {40, 1}, AUDIT_ARCH_I386), "errno(97)");
}

// libseccomp 2.5.4 miscompiles some 64-bit ranges on one argument across
// rules: a failing low-half test of one rule jumps into the next rule's
// high-half test without reloading the high half. The verifier used to miss
// it (it never paired one constant's high word with another's low word), so
// sched_setaffinity(0, 0x80000000ffffffff, 0) was allowed instead of ENOSYS.
// Now the filter is either right on that call or refused, naming the syscall.
// mbind stands in for sched_setaffinity, whose arg1 (unsigned int len) is
// now compared on its low 32 bits only: mbind's len and mode are unsigned
// long, so the 64-bit ranges reach libseccomp as written.
TEST(PolicySemantics, MiscompiledSixtyFourBitRangesAreNeverEmitted) {
  const ir::Policy policy = MustCheck(
      "    default errno ENOSYS\n    allow @default\n"
      "    kill mbind if arg1 <= 0x8000000000000000 and arg2 >= 0xc7\n"
      "    allow mbind if arg1 >= 0xef62f3be3f5bf8cf");
  auto artifacts = CompileSeccomp(policy);
  if (!artifacts.ok()) {
    EXPECT_NE(artifacts.status().ToString().find("mbind"), std::string::npos) << artifacts.status().ToString();
    return;
  }
  const BpfProgram program = ParseBpf(artifacts->front().bytes).value();
  EXPECT_EQ(Eval(program, SYS_mbind, {0, 0x80000000ffffffffULL, 0}), "errno(38)");
  EXPECT_NE(Eval(program, SYS_mbind, {0, 0x8000000000000000ULL, 0xc7}), "allow");  // kill (or its notify routing)
  EXPECT_EQ(Eval(program, SYS_mbind, {0, 0xffffffffffffffffULL, 0}), "allow");
}

constexpr uint64_t kHigh = uint64_t{1} << 32;

// `==` on 32-bit parameters of two arguments of one syscall: the complement
// the allow keeps is one single-bit rule per bit of each, and checking that
// filter used to need tens of millions of test calls, so the policy was
// refused as too large to verify. Word classes (word_classes.h) bring it to
// tens of thousands; the filter is exact on what the kernel reads.
TEST(PolicySemantics, ThirtyTwoBitEqualsOnTwoArgumentsCompilesAndIsExact) {
  const BpfProgram program = MustCompile(MustCheck(
      "    default errno ENOSYS\n    allow @default\n    allow setsockopt\n    allow ioctl\n"
      "    deny setsockopt if arg1 == 1 and arg2 == 2\n    deny ioctl if arg0 == 5"));
  EXPECT_EQ(Eval(program, SYS_setsockopt, {3, 1, 2}), "errno(1)");
  EXPECT_EQ(Eval(program, SYS_setsockopt, {3, kHigh | 1, 2}), "errno(1)");  // the kernel reads level 1
  EXPECT_EQ(Eval(program, SYS_setsockopt, {3, 1, kHigh | 2}), "errno(1)");
  EXPECT_EQ(Eval(program, SYS_setsockopt, {3, 1, 3}), "allow");
  EXPECT_EQ(Eval(program, SYS_setsockopt, {3, 0, 2}), "allow");
  EXPECT_EQ(Eval(program, SYS_setsockopt, {3, 0x80000001, 2}), "allow");
  EXPECT_EQ(Eval(program, SYS_ioctl, {5, 0x5401}), "errno(1)");
  EXPECT_EQ(Eval(program, SYS_ioctl, {kHigh | 5, 0x5401}), "errno(1)");
  EXPECT_EQ(Eval(program, SYS_ioctl, {4, 0x5401}), "allow");
}

// The kernel casts each argument register to the parameter's declared type
// (SYSCALL_DEFINE's __SC_CAST), so socket(0x100000010, SOCK_RAW, 0) opens an
// AF_NETLINK socket (checked under the real kernel). Restrictive rules on a
// 32-bit parameter used to compare all 64 bits and were bypassed that way.
// (These policies keep the network off, where the prologue itself refuses
// AF_NETLINK, so they restrict AF_PACKET, 17, instead.)

TEST(PolicySemantics, RestrictiveRulesOnA32BitParameterIgnoreTheUpperHalf) {
  const BpfProgram program = MustCompile(MustCheck(
      "    default errno ENOSYS\n    allow @default\n    allow socket\n    deny socket if arg0 == AF_PACKET"));
  EXPECT_EQ(Eval(program, SYS_socket, {17, 3}), "errno(1)");
  EXPECT_EQ(Eval(program, SYS_socket, {kHigh | 17, 3}), "errno(1)");
  EXPECT_EQ(Eval(program, SYS_socket, {0xffffffff00000011ULL, 3}), "errno(1)");
  EXPECT_EQ(Eval(program, SYS_socket, {2, 1}), "allow");
  EXPECT_EQ(Eval(program, SYS_socket, {kHigh | 2, 1}), "allow");  // the kernel reads AF_INET
  EXPECT_EQ(Eval(program, SYS_socket, {kHigh | 40, 1}), "errno(97)");  // the prologue's AF_VSOCK refusal
}

// One row per commonly restricted narrow parameter: `deny NAME if argN == V`
// under a permissive default must also deny V with upper bits set.
TEST(PolicySemantics, EveryActionStricterThanAllowSeesTheKernelsReading) {
  struct Row {
    const char* rule;
    long nr;
    int arg;
    uint64_t value;
    const char* want;
  };
  const Row rows[] = {
      {"deny ioctl if arg1 == FIONREAD", SYS_ioctl, 1, 0x541B, "errno(1)"},
      {"deny prctl if arg0 == PR_SET_DUMPABLE", SYS_prctl, 0, 4, "errno(1)"},
      {"deny fcntl if arg1 == 1024", SYS_fcntl, 1, 1024, "errno(1)"},
      // kill, log and notify all reach the supervisor (SECCOMP_RET_USER_NOTIF).
      {"kill setsockopt if arg1 == 1 and arg2 == 25", SYS_setsockopt, 2, 25, "notify"},
      {"trap \"kill\" if arg1 == SIGKILL", SYS_kill, 1, 9, "trap"},
      {"deny tgkill if arg2 == 9 errno EACCES", SYS_tgkill, 2, 9, "errno(13)"},
      {"notify socketpair if arg0 == AF_UNIX", SYS_socketpair, 0, 1, "notify"},
      {"log socket if arg1 == SOCK_RAW", SYS_socket, 1, 3, "notify"},
      {"deny chmod if (arg1 & 0x800) == 0x800", SYS_chmod, 1, 0x800, "errno(1)"},  // umode_t: 16 bits
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.rule);
    const BpfProgram program = MustCompile(MustCheck(std::string("    default allow\n    ") + row.rule));
    std::vector<uint64_t> args = {0, 1, 25, 0, 0, 0};
    args[static_cast<size_t>(row.arg)] = row.value;
    if (row.nr == SYS_setsockopt) args[1] = kHigh | 1;
    EXPECT_EQ(Eval(program, row.nr, args), row.want);
    const uint64_t upper = row.nr == SYS_chmod ? 0x10000 : kHigh;
    args[static_cast<size_t>(row.arg)] = upper | row.value;
    EXPECT_EQ(Eval(program, row.nr, args), row.want);
    args[static_cast<size_t>(row.arg)] = 0xffffffff00000000ULL | row.value;
    EXPECT_EQ(Eval(program, row.nr, args), row.want);
    args[static_cast<size_t>(row.arg)] = upper;  // the kernel reads 0
    EXPECT_EQ(Eval(program, row.nr, args), "allow");
  }
}

// kill(-1, ...) arrives sign-extended from glibc, or zero-extended from a
// raw syscall; the kernel reads -1 both ways.
TEST(PolicySemantics, ASignExtendedConstantMatchesBothSpellings) {
  const BpfProgram program = MustCompile(MustCheck("    default allow\n    deny \"kill\" if arg0 == 0xffffffffffffffff"));
  EXPECT_EQ(Eval(program, SYS_kill, {0xffffffffffffffffULL, 9}), "errno(1)");
  EXPECT_EQ(Eval(program, SYS_kill, {0xffffffffULL, 9}), "errno(1)");
  EXPECT_EQ(Eval(program, SYS_kill, {1, 9}), "allow");
}

// Ranges: a restrictive `>=`/`>` already matched every value with upper bits
// set; `<`/`<=` did not, and now compare the low 32 bits.
TEST(PolicySemantics, RestrictiveRangesOnA32BitParameter) {
  const BpfProgram ge = MustCompile(MustCheck("    default allow\n    deny personality if arg0 >= 0x20000"));
  EXPECT_EQ(Eval(ge, SYS_personality, {0x20008}), "errno(1)");
  EXPECT_EQ(Eval(ge, SYS_personality, {kHigh | 0x20008}), "errno(1)");
  const BpfProgram lt = MustCompile(MustCheck("    default allow\n    deny fcntl if arg1 < 3\n    deny ioctl if arg1 <= 0x5401"));
  EXPECT_EQ(Eval(lt, SYS_fcntl, {0, 2}), "errno(1)");
  EXPECT_EQ(Eval(lt, SYS_fcntl, {0, kHigh | 2}), "errno(1)");
  EXPECT_EQ(Eval(lt, SYS_fcntl, {0, 0xffffffff00000000ULL}), "errno(1)");
  EXPECT_EQ(Eval(lt, SYS_fcntl, {0, 3}), "allow");
  EXPECT_EQ(Eval(lt, SYS_fcntl, {0, kHigh | 3}), "allow");
  EXPECT_EQ(Eval(lt, SYS_ioctl, {0, kHigh | 0x5401}), "errno(1)");
  EXPECT_EQ(Eval(lt, SYS_ioctl, {0, kHigh | 0x5400}), "errno(1)");
  EXPECT_EQ(Eval(lt, SYS_ioctl, {0, kHigh | 0x5402}), "allow");
}

// An allow rule may match less than the kernel reading, never more: `!=`
// and `>` used to let 0x1_00000010 (read as 16) through.
TEST(PolicySemantics, AllowRulesOnA32BitParameterNeverAllowWhatTheKernelReadsAsExcluded) {
  const BpfProgram program = MustCompile(MustCheck(
      "    default errno ENOSYS\n    allow @default\n    allow socket if arg0 != AF_PACKET\n"
      "    allow setsockopt if arg1 > 6\n    allow fcntl if arg1 == 1"));
  EXPECT_EQ(Eval(program, SYS_socket, {17, 3}), "errno(38)");
  EXPECT_EQ(Eval(program, SYS_socket, {kHigh | 17, 3}), "errno(38)");
  EXPECT_EQ(Eval(program, SYS_socket, {2, 1}), "allow");
  EXPECT_EQ(Eval(program, SYS_socket, {18, 1}), "allow");
  EXPECT_EQ(Eval(program, SYS_socket, {0xffffffff, 1}), "allow");
  EXPECT_EQ(Eval(program, SYS_setsockopt, {3, 7, 1}), "allow");
  EXPECT_EQ(Eval(program, SYS_setsockopt, {3, 0xffffffff, 1}), "allow");
  EXPECT_EQ(Eval(program, SYS_setsockopt, {3, 6, 1}), "errno(38)");
  EXPECT_EQ(Eval(program, SYS_setsockopt, {3, kHigh | 1, 1}), "errno(38)");
  EXPECT_EQ(Eval(program, SYS_fcntl, {3, 1}), "allow");
  EXPECT_EQ(Eval(program, SYS_fcntl, {3, kHigh | 1}), "errno(38)");  // stricter: fails closed
}

// log is both: it allows (so over a deny it must not allow what the kernel
// reads as excluded) and it is stricter than allow (so over an allow it
// must not be dodged into an unlogged allow). log reaches the supervisor
// (notify) in the BPF filter.
TEST(PolicySemantics, LogRulesOnA32BitParameterNeitherAllowMoreNorMissCalls) {
  const BpfProgram program = MustCompile(MustCheck(
      "    default errno ENOSYS\n    allow @default\n    log socket if arg0 != AF_PACKET\n"
      "    allow setsockopt\n    log setsockopt if arg1 > 6\n    log fcntl if arg1 == 1"));
  EXPECT_EQ(Eval(program, SYS_socket, {kHigh | 17, 3}), "errno(38)");
  EXPECT_EQ(Eval(program, SYS_socket, {2, 1}), "notify");
  EXPECT_EQ(Eval(program, SYS_setsockopt, {3, kHigh | 7, 1}), "notify");
  EXPECT_EQ(Eval(program, SYS_setsockopt, {3, 1, 1}), "allow");
  EXPECT_EQ(Eval(program, SYS_setsockopt, {3, kHigh | 1, 1}), "notify");  // over an allow: logs more, never less
  EXPECT_EQ(Eval(program, SYS_fcntl, {3, kHigh | 1}), "notify");  // exact: the kernel reads F_GETFD
  EXPECT_EQ(Eval(program, SYS_fcntl, {3, 2}), "errno(38)");
  const BpfProgram under_allow =
      MustCompile(MustCheck("    default allow\n    log socket if arg0 != AF_PACKET"));
  EXPECT_EQ(Eval(under_allow, SYS_socket, {kHigh | 2, 1}), "notify");
  EXPECT_EQ(Eval(under_allow, SYS_socket, {17, 1}), "allow");
}

// A comparison constant wider than the parameter can never (or always) hold
// for what the kernel reads: refused, naming the argument.
TEST(PolicySemantics, AConstantWiderThanA32BitParameterIsRefused) {
  const ir::Policy policy = MustCheck("    default allow\n    deny socket if arg0 > 0x100000000");
  auto artifacts = CompileSeccomp(policy);
  ASSERT_FALSE(artifacts.ok());
  EXPECT_NE(artifacts.status().ToString().find("arg0 of socket as a 32-bit value"), std::string::npos)
      << artifacts.status().ToString();
}

}  // namespace
}  // namespace cocoon::backends
