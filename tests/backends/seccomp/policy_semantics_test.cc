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

}  // namespace
}  // namespace cocoon::backends
