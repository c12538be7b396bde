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
TEST(PolicySemantics, MiscompiledSixtyFourBitRangesAreNeverEmitted) {
  const ir::Policy policy = MustCheck(
      "    default errno ENOSYS\n    allow @default\n"
      "    kill sched_setaffinity if arg1 <= 0x8000000000000000 and arg2 >= 0xc7\n"
      "    allow sched_setaffinity if arg1 >= 0xef62f3be3f5bf8cf");
  auto artifacts = CompileSeccomp(policy);
  if (!artifacts.ok()) {
    EXPECT_NE(artifacts.status().ToString().find("sched_setaffinity"), std::string::npos) << artifacts.status().ToString();
    return;
  }
  const BpfProgram program = ParseBpf(artifacts->front().bytes).value();
  EXPECT_EQ(Eval(program, SYS_sched_setaffinity, {0, 0x80000000ffffffffULL, 0}), "errno(38)");
  EXPECT_NE(Eval(program, SYS_sched_setaffinity, {0, 0x8000000000000000ULL, 0xc7}), "allow");  // kill (or its notify routing)
  EXPECT_EQ(Eval(program, SYS_sched_setaffinity, {0, 0xffffffffffffffffULL, 0}), "allow");
}

}  // namespace
}  // namespace cocoon::backends
