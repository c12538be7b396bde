// The checker reports what the seccomp back end cannot express at the
// policy's statement (frontend::FrontendOptions::syscall_rule_check wired to
// backends::SyscallRuleProblems, as cli/frontend_util.h does), so a policy
// the checker accepts compiles (issue 3's compile_fuzzer property).
#include <linux/audit.h>
#include <sys/syscall.h>

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "compiler/backends/artifact.h"
#include "compiler/backends/oci/docker_seccomp_import.h"
#include "compiler/backends/oci/oci_seccomp.h"
#include "compiler/backends/seccomp/bpf_evaluator.h"
#include "compiler/backends/seccomp/seccomp_backend.h"
#include "compiler/common/status.h"
#include "compiler/frontend/frontend.h"

namespace cocoon::backends {
namespace {

namespace fs = std::filesystem;

const fs::path kRepo = fs::path(COCOON_SOURCE_DIR).lexically_normal();

frontend::FrontendOptions Options(bool with_back_end_checks) {
  frontend::FrontendOptions options;
  options.search_paths = {(kRepo / "policies").string()};
  if (with_back_end_checks) options.syscall_rule_check = SyscallRuleProblems;
  return options;
}

// Without the check, the back end refuses `text` itself, saying `needle`.
void ExpectTheCompilerRefuses(const std::string& text, const std::string& needle) {
  Diagnostics unchecked;
  auto accepted = frontend::CompilePolicyText("p.cocoon", text, "", Options(false), unchecked);
  ASSERT_TRUE(accepted.has_value()) << unchecked.Render();
  auto compiled = CompileSeccomp(*accepted);
  ASSERT_FALSE(compiled.ok());
  EXPECT_NE(compiled.status().message().find(needle), std::string::npos) << compiled.status().ToString();
}

// What `cocoon check` reports for `text` (it builds the filter,
// FilterBuildProblems), rendered; empty when the policy checks.
std::string CheckWithTheFilterBuilt(const std::string& text) {
  frontend::FrontendOptions built = Options(false);
  built.syscall_rule_check = FilterBuildProblems;
  Diagnostics diagnostics;
  const bool ok = frontend::CompilePolicyText("p.cocoon", text, "", built, diagnostics).has_value();
  return ok ? std::string() : diagnostics.Render();
}

// The Linux filter `policy` compiles to: linux.seccomp.bpf, decoded.
Result<BpfProgram> LinuxProgramOf(const ir::Policy& policy) {
  COCOON_ASSIGN_OR_RETURN(std::vector<Artifact> artifacts, CompileSeccomp(policy));
  for (const Artifact& a : artifacts) {
    if (a.path == "linux.seccomp.bpf") return ParseBpf(a.bytes);
  }
  return NotFoundError("the Linux target made no linux.seccomp.bpf");
}

// What `program` answers syscall `nr` of `arch` with `arg0` ("allow",
// "errno(1)", ...).
std::string AnswerTo(const BpfProgram& program, uint32_t arch, int nr, uint64_t arg0) {
  SeccompData data;
  data.nr = nr;
  data.arch = arch;
  data.args[0] = arg0;
  auto result = EvaluateBpf(program, data);
  return result.ok() ? DescribeSeccompRet(result->ret) : result.status().ToString();
}

// Two exceptions on one argument of a syscall @basic-io allows: "lseek unless
// arg1 is 5 or 7" needs two != comparisons of arg1 in one seccomp rule.
// (arg1, the offset, is 64-bit in the kernel; on a 32-bit parameter such as
// read's fd the exceptions are masked compares, which carve fine.)
constexpr char kTwoExceptions[] =
    "import \"strict\"\n"
    "profile p extends strict {\n"
    "  syscalls {\n"
    "    deny lseek if arg1 == 5 errno EPERM\n"
    "    deny lseek if arg1 == 7 errno EPERM\n"
    "  }\n"
    "}\n";

TEST(SyscallRuleProblemsTest, TheCheckerReportsWhatSeccompCannotExpressAtTheRule) {
  Diagnostics diagnostics;
  auto policy = frontend::CompilePolicyText("p.cocoon", kTwoExceptions, "", Options(true), diagnostics);
  EXPECT_FALSE(policy.has_value());
  std::string text = diagnostics.Render();
  EXPECT_NE(text.find("p.cocoon:5:5"), std::string::npos) << text;
  EXPECT_NE(text.find("cannot express"), std::string::npos) << text;
  EXPECT_NE(text.find("deny lseek if arg1 == 7"), std::string::npos) << "the source line is shown\n" << text;
  EXPECT_EQ(diagnostics.error_count(), 1u) << text;
}

TEST(SyscallRuleProblemsTest, WithoutTheCheckTheBackEndRefusesTheSamePolicy) {
  Diagnostics diagnostics;
  auto policy = frontend::CompilePolicyText("p.cocoon", kTwoExceptions, "", Options(false), diagnostics);
  ASSERT_TRUE(policy.has_value()) << diagnostics.Render();
  std::vector<ir::SyscallRuleProblem> problems = SyscallRuleProblems(*policy);
  ASSERT_FALSE(problems.empty());
  EXPECT_EQ(problems.front().syscall, "lseek");
  auto compiled = CompileSeccomp(*policy);
  ASSERT_FALSE(compiled.ok());
  EXPECT_EQ(compiled.status().message(), problems.front().message);
}

TEST(SyscallRuleProblemsTest, OneExceptionPerArgumentPassesAndCompiles) {
  const std::string text =
      "import \"strict\"\n"
      "profile p extends strict {\n"
      "  syscalls {\n"
      "    deny read if arg0 == 5 errno EPERM\n"
      "  }\n"
      "}\n";
  Diagnostics diagnostics;
  auto policy = frontend::CompilePolicyText("p.cocoon", text, "", Options(true), diagnostics);
  ASSERT_TRUE(policy.has_value()) << diagnostics.Render();
  EXPECT_TRUE(CompileSeccomp(*policy).ok());
}

TEST(SyscallRuleProblemsTest, EveryShippedProfilePassesTheCheck) {
  std::vector<fs::path> files = {kRepo / "policies/strict.cocoon", kRepo / "policies/build.cocoon"};
  for (const auto& entry : fs::directory_iterator(kRepo / "policies/runtimes")) {
    if (entry.path().extension() == ".cocoon") files.push_back(entry.path());
  }
  for (const fs::path& file : files) {
    Diagnostics diagnostics;
    EXPECT_TRUE(frontend::CheckPolicyFile(file.string(), "", Options(true), diagnostics))
        << file << "\n" << diagnostics.Render();
  }
}

// A rule set the compiler would refuse as too large to verify completely
// (seccomp_verify.h) is a check error at its statement, so that a policy
// that checks also compiles (fuzz/compile_fuzzer found one under strict:
// 32-bit `==` conditions on two arguments of one syscall, which now verify
// in far fewer test calls, word_classes.h). What is still too large: many
// distinct 64-bit values on two arguments.
TEST(SyscallRuleProblemsTest, ARuleSetTooLargeToVerifyIsACheckError) {
  auto policy_text = [](int rules) {
    std::string text = "profile p {\n  syscalls {\n    default errno EPERM\n";
    for (uint64_t i = 1; i <= static_cast<uint64_t>(rules); ++i) {
      text += "    deny mbind if arg1 == " + std::to_string(0x100000003ULL * i * 7) +
              " and arg2 == " + std::to_string(0x200000005ULL * i * 3) + " errno EACCES\n";
    }
    return text + "  }\n}\n";
  };
  const std::string text = policy_text(90);
  Diagnostics diagnostics;
  auto policy = frontend::CompilePolicyText("p.cocoon", text, "", Options(true), diagnostics);
  EXPECT_FALSE(policy.has_value());
  const std::string rendered = diagnostics.Render();
  EXPECT_NE(rendered.find("p.cocoon:"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("too many distinct values"), std::string::npos) << rendered;
  // Without the check, the compiler refuses the same policy: they agree.
  ExpectTheCompilerRefuses(text, "too many distinct values");
  // Fewer such rules, and `==` on two 32-bit arguments, check and compile.
  for (const std::string& fits : {policy_text(16),
                                  std::string("profile p {\n  syscalls {\n    default errno EPERM\n    allow setsockopt\n"
                                              "    deny setsockopt if arg1 == 1 and arg2 == 2\n  }\n}\n")}) {
    Diagnostics one;
    auto ok = frontend::CompilePolicyText("p.cocoon", fits, "", Options(true), one);
    ASSERT_TRUE(ok.has_value()) << one.Render();
    EXPECT_TRUE(CompileSeccomp(*ok).ok()) << fits;
  }
}

// libseccomp 2.5.4 loops forever adding some multi-argument rule sets
// (child_deadline.h). Such a policy is a `cocoon check` error at the
// syscall's rule, and the compiler refuses it the same way instead of hanging.
TEST(SyscallRuleProblemsTest, RulesThatHangLibseccompAreRefusedNotHung) {
  const std::string text =
      "profile p {\n  syscalls {\n    default errno ENOSYS\n    allow mbind if arg1 != 7 and arg2 == 5\n"
      "    allow mbind if arg1 != 7 and arg2 == 0x500000000\n  }\n}\n";
  // `cocoon check` builds the filter (FilterBuildProblems); launches only
  // check the rules (no fork on a warm cache) and refuse when they compile.
  const std::string rendered = CheckWithTheFilterBuilt(text);
  EXPECT_FALSE(rendered.empty());
  EXPECT_NE(rendered.find("p.cocoon:5:5"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("cannot build the rules for mbind"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("docs/security.md"), std::string::npos) << rendered;
  ExpectTheCompilerRefuses(text, "cannot build the rules for mbind");
}

// A rule set libseccomp 2.5.4 miscompiles passes the rule checks (nothing
// is wrong with it) and is refused when the filter is built and verified.
// `cocoon check` builds it (FilterBuildProblems), so the refusal is at the
// syscall's rule there, not only at compile time without a location.
TEST(SyscallRuleProblemsTest, ARuleSetLibseccompMiscompilesIsACheckErrorWhenTheFilterIsBuilt) {
  const std::string text =
      "profile p {\n  syscalls {\n    default errno ENOSYS\n"
      "    kill mbind if arg1 <= 0x500000000 and arg2 >= 0xc7\n"
      "    allow mbind if arg1 >= 0x700000000 and arg2 < 0x300000000\n  }\n}\n";
  Diagnostics rules_only;
  EXPECT_TRUE(frontend::CompilePolicyText("p.cocoon", text, "", Options(true), rules_only).has_value())
      << rules_only.Render();
  const std::string rendered = CheckWithTheFilterBuilt(text);
  EXPECT_FALSE(rendered.empty());
  EXPECT_NE(rendered.find("p.cocoon:5:5"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("miscompiled the rules for mbind"), std::string::npos) << rendered;
  // Every shipped profile builds.
  frontend::FrontendOptions built = Options(false);
  built.syscall_rule_check = FilterBuildProblems;
  Diagnostics strict;
  EXPECT_TRUE(frontend::CheckPolicyFile((kRepo / "policies/strict.cocoon").string(), "", built, strict))
      << strict.Render();
}

// moby's default profile, imported, passes the check and compiles to a
// filter: `allow socket if arg0 > 0x28` overlaps the prologue's socket-family
// guard in the OCI rule form only, which the check does not report (the
// filter puts that guard in its prefix; bench/run compiles this for Linux);
// oci::RuleFormProblems does.
TEST(SyscallRuleProblemsTest, ImportedMobyProfilePassesTheCheckAndCompiles) {
  std::ifstream in(kRepo / "tests/backends/oci/data/moby-default-seccomp.json");
  std::stringstream json;
  json << in.rdbuf();
  auto text = oci::ImportDockerSeccomp(json.str(), {});
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  Diagnostics diagnostics;
  auto policy = frontend::CompilePolicyText("moby.cocoon", *text, "", Options(true), diagnostics);
  ASSERT_TRUE(policy.has_value()) << diagnostics.Render();
  EXPECT_TRUE(CompileSeccomp(*policy).ok());
  // The rule form's one problem, which `cocoon compile --target oci|k8s`
  // reports at the rule (tests/cli, CocoonCompile).
  std::vector<ir::SyscallRuleProblem> rule_form = oci::RuleFormProblems(*policy);
  ASSERT_EQ(rule_form.size(), 1u);
  EXPECT_EQ(rule_form[0].syscall, "socket");
  EXPECT_NE(rule_form[0].message.find("OCI and Kubernetes"), std::string::npos) << rule_form[0].message;
}

// A Docker entry denying socket for AF_INET6 (10) and AF_PACKET (17), two
// conditions on arg0: runc ORs them (one rule each). Imported, compiled and
// evaluated, both families are refused and others are not; the importer used
// to AND them into a rule that never matched. (Not AF_NETLINK: the imported
// profile keeps the network off, where the prologue refuses netlink itself.)
TEST(SyscallRuleProblemsTest, ImportedRepeatedIndexConditionsDenyEachValue) {
  auto text = oci::ImportDockerSeccomp(
      R"({"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["socket"], "action": "SCMP_ACT_ERRNO",
           "args": [{"index": 0, "value": 10, "op": "SCMP_CMP_EQ"}, {"index": 0, "value": 17, "op": "SCMP_CMP_EQ"}]}]})",
      {});
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  Diagnostics diagnostics;
  auto policy = frontend::CompilePolicyText("imported.cocoon", *text, "", Options(true), diagnostics);
  ASSERT_TRUE(policy.has_value()) << diagnostics.Render() << "\n" << *text;
  auto program = LinuxProgramOf(*policy);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  auto socket_with = [&](uint64_t family) { return AnswerTo(*program, AUDIT_ARCH_X86_64, SYS_socket, family); };
  EXPECT_EQ(socket_with(10), "errno(1)") << *text;
  EXPECT_EQ(socket_with(17), "errno(1)") << *text;
  EXPECT_EQ(socket_with(16 /* AF_NETLINK */), "errno(97)") << *text;  // the network is off
  EXPECT_EQ(socket_with(1 /* AF_UNIX */), "allow") << *text;
}

// With `arch x86` libseccomp folds every socket rule into socketcall with
// its conditions dropped, so strict's `allow socket ...` beside a policy's
// `deny socket if arg0 == AF_PACKET` became one condition with two
// actions: the Linux filter failed with "libseccomp refused the rule for
// socket: File exists" (reported at the profile) while OCI compiled. Both
// compile now, and the i386 calls get what the rules say.
TEST(SyscallRuleProblemsTest, I386SocketRulesOfTwoActionsCompileForBothTargets) {
  const std::string text =
      "import \"strict\"\n"
      "profile y2 extends strict {\n"
      "  relaxes syscalls\n"
      "  syscalls {\n"
      "    deny socket if arg0 == AF_PACKET errno EACCES\n"
      "    arch x86\n"
      "  }\n"
      "}\n";
  EXPECT_EQ(CheckWithTheFilterBuilt(text), "");
  Diagnostics diagnostics;
  auto policy = frontend::CompilePolicyText("y2.cocoon", text, "", Options(true), diagnostics);
  ASSERT_TRUE(policy.has_value()) << diagnostics.Render();
  EXPECT_TRUE(oci::RuleFormProblems(*policy).empty());
  EXPECT_TRUE(CompileOci(*policy).ok());
  auto program = LinuxProgramOf(*policy);
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  auto i386_call = [&](int nr, uint64_t arg0) { return AnswerTo(*program, AUDIT_ARCH_I386, nr, arg0); };
  constexpr int kI386Socket = 359, kI386Socketcall = 102;
  EXPECT_EQ(i386_call(kI386Socket, 17 /* AF_PACKET */), "errno(13)");
  EXPECT_EQ(i386_call(kI386Socket, 16 /* AF_NETLINK */), "errno(97)");  // the network is off
  EXPECT_EQ(i386_call(kI386Socket, 1 /* AF_UNIX */), "allow");
  EXPECT_EQ(i386_call(kI386Socketcall, 1 /* SYS_SOCKET */), "errno(38)");
}

// runc and crun build the OCI/Kubernetes profile themselves with libseccomp
// 2.5.4, adding each `syscalls[]` entry in the file's order. For these two
// rules that program let kill(1, 0) through and answered kill(5, 15) with
// ESRCH under crun instead of trapping, while Cocoon's own filter (other
// insertion order) is right. The Linux target still compiles; the rule form
// is refused at the rule, by the checker wired as `cocoon compile --target
// oci` wires it (cli/frontend_util.cc) and by both back ends themselves.
constexpr char kRuntimeMiscompiled[] =
    "profile m1c {\n"
    "  filesystem { root host readonly /usr /bin /lib /lib64 work /work }\n"
    "  syscalls {\n"
    "    default allow\n"
    "    trap \"kill\" if arg1 != 0x100 and arg0 < 0x7fffffff\n"
    "    deny \"kill\" if arg1 != 0x8\n"
    "  }\n"
    "  user 1000:1000\n"
    "}\n";

TEST(SyscallRuleProblemsTest, RuleFormTheRuntimeMiscompilesIsRefusedAtTheRule) {
  Diagnostics diagnostics;
  auto policy = frontend::CompilePolicyText("m1c.cocoon", kRuntimeMiscompiled, "", Options(true), diagnostics);
  ASSERT_TRUE(policy.has_value()) << diagnostics.Render();
  EXPECT_TRUE(CompileSeccomp(*policy).ok());

  std::vector<ir::SyscallRuleProblem> rule_form = oci::RuleFormProblems(*policy);
  ASSERT_EQ(rule_form.size(), 1u);
  EXPECT_EQ(rule_form[0].syscall, "kill");
  EXPECT_NE(rule_form[0].message.find("miscompiled the rules for kill"), std::string::npos) << rule_form[0].message;
  EXPECT_NE(rule_form[0].help.find("runc and crun"), std::string::npos) << rule_form[0].help;

  frontend::FrontendOptions with_rule_form = Options(false);
  with_rule_form.syscall_rule_check = oci::RuleFormProblems;
  Diagnostics at_rule;
  EXPECT_FALSE(frontend::CompilePolicyText("m1c.cocoon", kRuntimeMiscompiled, "", with_rule_form, at_rule));
  EXPECT_NE(at_rule.Render().find("m1c.cocoon:6:5: for the OCI and Kubernetes seccomp profile"), std::string::npos)
      << at_rule.Render();

  for (auto compile : {CompileOci, CompileKubernetes}) {
    auto artifacts = compile(*policy);
    ASSERT_FALSE(artifacts.ok());
    EXPECT_NE(artifacts.status().message().find("miscompiled the rules for kill"), std::string::npos)
        << artifacts.status().ToString();
  }
}

// The shipped profiles' rule forms build correctly as the runtimes build
// them, so they still compile for OCI and Kubernetes.
TEST(SyscallRuleProblemsTest, ShippedProfilesRuleFormsBuildAsTheRuntimesBuildThem) {
  for (const char* name : {"strict", "build"}) {
    const std::string text = "import \"" + std::string(name) + "\"\nprofile p extends " + name + " { }\n";
    Diagnostics diagnostics;
    auto policy = frontend::CompilePolicyText("p.cocoon", text, "", Options(true), diagnostics);
    ASSERT_TRUE(policy.has_value()) << diagnostics.Render();
    EXPECT_TRUE(oci::RuleFormProblems(*policy).empty()) << name;
    auto oci = CompileOci(*policy);
    EXPECT_TRUE(oci.ok()) << name << ": " << oci.status().ToString();
    auto k8s = CompileKubernetes(*policy);
    EXPECT_TRUE(k8s.ok()) << name << ": " << k8s.status().ToString();
  }
}

}  // namespace
}  // namespace cocoon::backends
