// docs/language.md reproduces the shipped syscall group table; keep it in sync.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "compiler/syscalls/syscall_groups.h"
#include "tests/frontend/test_util.h"

namespace cocoon::frontend {
namespace {

std::string GeneratedTable() {
  std::string out = "| Group | What it covers | Members |\n|---|---|---|\n";
  for (const auto& group : syscalls::AllGroups()) {
    out += "| `" + std::string(group.name) + "` | " + std::string(group.description) + " | ";
    for (size_t i = 0; i < group.members.size(); ++i) out += (i ? ", " : "") + std::string(group.members[i]);
    out += " |\n";
  }
  return out;
}

TEST(Docs, LanguageReferenceHasTheShippedGroupTable) {
  std::ifstream file(testing::RepoPath("docs/language.md"));
  std::stringstream text;
  text << file.rdbuf();
  std::string doc = text.str();
  const std::string begin = "<!-- BEGIN GROUP TABLE (generated from compiler/syscalls; do not edit) -->\n";
  const std::string end = "<!-- END GROUP TABLE -->";
  size_t from = doc.find(begin);
  size_t to = doc.find(end);
  ASSERT_NE(from, std::string::npos);
  ASSERT_NE(to, std::string::npos);
  from += begin.size();
  EXPECT_EQ(doc.substr(from, to - from), GeneratedTable())
      << "regenerate the table in docs/language.md from compiler/syscalls";
}

}  // namespace
}  // namespace cocoon::frontend
