// `cocoon explain` output (ExplainPolicy): what it prints must be what the
// policy does, and a policy string must not be able to forge lines.
#include <gtest/gtest.h>

#include <fstream>

#include "compiler/syscalls/syscall_groups.h"
#include "tests/frontend/test_util.h"

namespace cocoon::frontend {
namespace {

std::string Explain(const std::string& body) {
  std::optional<ir::Policy> policy;
  std::string out = testing::Diagnose("import \"strict\"\nprofile p extends strict {\n" + body + "\n}\n", &policy);
  EXPECT_TRUE(policy.has_value()) << out;
  return policy ? ExplainPolicy(*policy) : "";
}

size_t CountLines(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(Explain, PolicyStringsCannotForgeLines) {
  std::string out = Explain(
      "  relaxes environment\n"
      "  description \"ok\\n  network: off\\t\"\n"
      "  environment { set A \"x\\ny\\tz\" }");
  EXPECT_NE(out.find("Profile p: ok\\n  network: off\\t\n"), std::string::npos) << out;
  EXPECT_NE(out.find("set  A=x\\ny\\tz"), std::string::npos) << out;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  EXPECT_EQ(out.find("\n  network: off"), std::string::npos) << out;
}

// A description the profile did not write is its ancestor's, and may
// contradict the profile (strict's "128 MiB" under `memory 256MiB`): the
// header says whose it is (before: shown as the profile's own).
TEST(Explain, AnInheritedDescriptionSaysWhoseItIs) {
  std::string out = Explain("  relaxes limits\n  limits { memory 256MiB }");
  const std::string header = out.substr(0, out.find('\n'));
  EXPECT_TRUE(header.starts_with("Profile p: ")) << header;
  EXPECT_TRUE(header.ends_with(" (description inherited from strict)")) << header;
  out = Explain("  description \"mine\"");
  EXPECT_EQ(out.substr(0, out.find('\n')), "Profile p: mine") << out;
}

TEST(Explain, ConditionalGroupRulesShowTheirConditions) {
  std::string out = Explain("  relaxes syscalls\n  syscalls { kill @debug if arg1 in {1, 2} }");
  const syscalls::SyscallGroup* debug = syscalls::FindGroup("@debug");
  ASSERT_NE(debug, nullptr);
  const std::string members = std::to_string(syscalls::ExpandGroup("@debug").size()) + " syscalls";
  EXPECT_EQ(CountLines(out, "kill @debug if arg1 == 0x1 (" + members), 1u) << out;
  EXPECT_EQ(CountLines(out, "kill @debug if arg1 == 0x2 (" + members), 1u) << out;
  EXPECT_EQ(CountLines(out, "kill @debug ("), 0u) << out;  // would read as unconditional
}

// The whole line of `text` that holds `needle`, or "" when none does.
std::string LineWith(const std::string& text, const std::string& needle) {
  size_t at = text.find(needle);
  if (at == std::string::npos) return "";
  size_t begin = text.rfind('\n', at) + 1;  // npos + 1 == 0
  return text.substr(begin, text.find('\n', at) - begin);
}

// The 1-based line of policies/strict.cocoon holding `needle`, as
// ":N)" to match the end of an explain credit; strict.cocoon's lines move
// whenever a rule is added, so the test finds them rather than fixing them.
std::string StrictLineCredit(const std::string& needle) {
  std::ifstream in(cocoon::frontend::testing::RepoPath("policies/strict.cocoon"));
  std::string line;
  for (int number = 1; std::getline(in, line); ++number)
    if (line.find(needle) != std::string::npos) return "strict.cocoon:" + std::to_string(number) + ")";
  ADD_FAILURE() << "policies/strict.cocoon has no line with " << needle;
  return "strict.cocoon:?)";
}

// Each rule line is credited to the statement that wrote that rule (action
// and conditions), not to the child's last statement naming the syscall.
TEST(Explain, InheritedRulesAreCreditedToTheParent) {
  std::string out = Explain(
      "  relaxes syscalls\n"
      "  syscalls {\n"
      "    log @mount if arg0 == 0\n"
      "    deny ioctl if arg1 == 0x5413\n"
      "  }");
  // Found from the working directory or the repository: either spelling.
  const std::string inherited = "(inherited from strict, ";
  EXPECT_NE(LineWith(out, "errno EPERM ioctl if arg1 == 0x5412").find(inherited), std::string::npos) << out;
  EXPECT_TRUE(LineWith(out, "errno EPERM ioctl if arg1 == 0x5412").ends_with(StrictLineCredit("deny ioctl if arg1 == TIOCSTI"))) << out;
  EXPECT_NE(LineWith(out, "errno EPERM ioctl if arg1 == 0x5413").find("(t.cocoon:6)"), std::string::npos) << out;
  EXPECT_NE(LineWith(out, "errno EPERM @mount (").find(inherited), std::string::npos) << out;
  EXPECT_TRUE(LineWith(out, "errno EPERM @mount (").ends_with(StrictLineCredit("deny @mount @module"))) << out;
  EXPECT_NE(LineWith(out, "log @mount if arg0 == 0x0 (").find("(t.cocoon:5)"), std::string::npos) << out;
}

// A mount that a `hide` covers (inherited or the profile's own) says so on
// its own line: the enforcer masks it, so "read-only /etc/passwd" alone
// would tell a reviewer the sandbox reads it.
// strict's unconditional `deny @debug` outranks a conditional allow of one
// of its syscalls: the compiler denies every such call, and explain must
// not list the allow as if it let any through.
TEST(Explain, AConditionalRuleAnUnconditionalOneOutranksIsMarkedOverridden) {
  std::string out = Explain("  syscalls {\n    allow kcmp if arg2 == 1\n    allow getpid if arg0 == 1\n  }");
  EXPECT_NE(LineWith(out, "allow kcmp if arg2 == 0x1").find("OVERRIDDEN, never applies: the unconditional errno "
                                                              "EPERM kcmp from @debug wins"),
            std::string::npos)
      << out;
  // strict allows getpid outright: a conditional allow beside it is not overridden.
  EXPECT_EQ(LineWith(out, "allow getpid if arg0 == 0x1").find("OVERRIDDEN"), std::string::npos) << out;
}

// The compiler's prologue answers every clone3 with ENOSYS whatever the
// policy says: a conditional allow of it never applies (before: listed
// as if it did).
TEST(Explain, ARuleThePrologueOverridesIsMarkedOverridden) {
  std::string out = Explain("  syscalls {\n    allow clone3 if arg1 == 88\n  }");
  EXPECT_NE(LineWith(out, "allow clone3 if arg1 == 0x58").find("OVERRIDDEN, never applies: the compiler's prologue "
                                                               "answers every clone3 with errno ENOSYS"),
            std::string::npos)
      << out;
}

// Every other fixed answer of the prologue (docs/language.md, Prologue):
// a rule asking for one of those argument values never applies, and an
// unconditional rule says which values the prologue still answers. Before,
// `allow ioctl if arg1 == TIOCSTI` read as if it applied.
TEST(Explain, RulesForArgumentsThePrologueAnswersAreMarkedOverridden) {
  std::string out = Explain(
      "  relaxes syscalls\n  syscalls {\n"
      "    allow socket if arg0 == AF_VSOCK\n    allow socket if arg0 == AF_ALG\n"
      "    allow socket if arg0 == AF_NETLINK\n    allow socket if arg0 == AF_UNIX\n"
      "    allow ioctl if arg1 == TIOCSTI\n    kill ioctl if arg1 == TIOCLINUX\n    allow \"ioctl\"\n"
      "    allow fcntl if arg1 == 1024\n    allow unshare if arg0 == 0x10000000\n  }");
  for (const char* overridden :
       {"allow socket if arg0 == 0x28 (OVERRIDDEN, never applies: the compiler's prologue answers every socket call "
        "with AF_VSOCK with errno EAFNOSUPPORT",
        "allow socket if arg0 == 0x26 (OVERRIDDEN", "allow socket if arg0 == 0x10 (OVERRIDDEN",
        "allow ioctl if arg1 == 0x5412 (OVERRIDDEN, never applies: the compiler's prologue answers every ioctl call "
        "with TIOCSTI with errno EPERM",
        "allow fcntl if arg1 == 0x400 (OVERRIDDEN", "allow unshare if arg0 == 0x10000000 (OVERRIDDEN"}) {
    EXPECT_NE(out.find(overridden), std::string::npos) << overridden << "\n" << out;
  }
  // AF_UNIX is not refused; a kill outranks the prologue's EPERM.
  EXPECT_EQ(LineWith(out, "allow socket if arg0 == 0x1").find("OVERRIDDEN"), std::string::npos) << out;
  EXPECT_EQ(LineWith(out, "kill ioctl if arg1 == 0x541c").find("OVERRIDDEN"), std::string::npos) << out;
  EXPECT_NE(out.find("allow ioctl (except where the compiler's prologue answers: TIOCSTI: errno EPERM, TIOCLINUX: "
                     "errno EPERM)"),
            std::string::npos)
      << out;
  // With the network on, AF_NETLINK sockets are the policy's to allow.
  out = Explain("  relaxes syscalls network\n  network on\n  syscalls { allow socket if arg0 == AF_NETLINK }");
  EXPECT_EQ(LineWith(out, "allow socket if arg0 == 0x10").find("OVERRIDDEN"), std::string::npos) << out;
}

TEST(Explain, AMountAHideCoversSaysItIsHidden) {
  std::string out = Explain(
      "  relaxes filesystem\n"
      "  filesystem {\n"
      "    readonly /srv/data /srv/keep\n"
      "    hide /etc/passwd /srv/data\n"
      "  }");
  EXPECT_NE(LineWith(out, "read-only  /etc/passwd").find("(hidden by `hide /etc/passwd`)"), std::string::npos) << out;
  EXPECT_NE(LineWith(out, "read-only  /srv/data").find("(hidden by `hide /srv/data`)"), std::string::npos) << out;
  EXPECT_EQ(LineWith(out, "read-only  /srv/keep").find("hidden"), std::string::npos) << out;
}

// `unlimited` cannot remove an rlimit the enforcer always sets: check, explain
// and the enforcer agree on the default the sandbox gets (check once said the
// limit was removed while explain showed 1024).
TEST(Explain, UnlimitedOpenFilesAndFileSizeShowTheEnforcersDefault) {
  Diagnostics rendered;
  std::optional<ir::Policy> policy = CompilePolicyText(
      "t.cocoon",
      "profile a {\n  limits { open_files 4096 file_size 20GiB }\n"
      "  syscalls { default errno ENOSYS allow @system-service }\n}\n"
      "profile b extends a {\n  limits { open_files unlimited file_size unlimited }\n}\n",
      "b", FrontendOptions{}, rendered);
  const std::string diagnostics = rendered.Render();
  ASSERT_TRUE(policy) << diagnostics;
  EXPECT_EQ(diagnostics.find("removed"), std::string::npos) << diagnostics;
  EXPECT_NE(diagnostics.find("open_files is never unlimited: the sandbox gets the enforcer's default of 1024"),
            std::string::npos)
      << diagnostics;
  EXPECT_NE(diagnostics.find("file_size is never unlimited: the sandbox gets the enforcer's default of 16 GiB"),
            std::string::npos)
      << diagnostics;
  EXPECT_FALSE(policy->limits.open_files.set);  // what the enforcer replaces with ir::kDefaultOpenFiles
  const std::string out = ExplainPolicy(*policy);
  EXPECT_NE(LineWith(out, "open files  1024 (the enforcer's default)").find("(t.cocoon:6)"), std::string::npos)
      << out;
  EXPECT_NE(LineWith(out, "file size   16 GiB (the enforcer's default)").find("(t.cocoon:6)"), std::string::npos)
      << out;
}

}  // namespace
}  // namespace cocoon::frontend
