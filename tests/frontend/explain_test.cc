// `cocoon explain` output (ExplainPolicy): what it prints must be what the
// policy does, and a policy string must not be able to forge lines.
#include <gtest/gtest.h>

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
      "  description \"ok\\n  network: off\x1b[2J\"\n"
      "  environment { set A \"x\\ny\\tz\" }");
  EXPECT_NE(out.find("Profile p: ok\\n  network: off\\x1b[2J\n"), std::string::npos) << out;
  EXPECT_NE(out.find("set  A=x\\ny\\tz"), std::string::npos) << out;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
  EXPECT_EQ(out.find("\n  network: off"), std::string::npos) << out;
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

}  // namespace
}  // namespace cocoon::frontend
