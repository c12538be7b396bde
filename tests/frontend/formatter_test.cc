// Formatter: canonical output, comments kept, idempotent, same meaning.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/common/file_replace.h"
#include "tests/frontend/test_util.h"

namespace cocoon::frontend {
namespace {

std::string Fmt(const std::string& text) {
  Diagnostics diagnostics;
  auto out = FormatPolicy("t.cocoon", text, diagnostics);
  EXPECT_TRUE(out) << diagnostics.Render();
  return out.value_or("");
}

TEST(Formatter, CanonicalLayout) {
  EXPECT_EQ(Fmt("profile   x   extends y{limits{memory 1GiB   processes 3} network off\n"
                "syscalls { deny clone if (arg0&0x10)!=0 errno EPERM  allow @basic-io }}"),
            "profile x extends y {\n"
            "  limits {\n"
            "    memory 1GiB\n"
            "    processes 3\n"
            "  }\n"
            "  network off\n"
            "  syscalls {\n"
            "    deny clone if (arg0 & 0x10) != 0 errno EPERM\n"
            "    allow @basic-io\n"
            "  }\n"
            "}\n");
}

TEST(Formatter, KeepsCommentsAndBlankLines) {
  const char* input =
      "# header\n"
      "import \"strict\"   # trailing\n"
      "\n"
      "profile p extends strict {  # after brace\n"
      "  # leading\n"
      "  network off # why\n"
      "\n\n\n"
      "  filesystem {\n"
      "    readonly /usr\n"
      "    # before close\n"
      "  }\n"
      "  # end of profile\n"
      "}\n"
      "# end of file\n";
  const char* expected =
      "# header\n"
      "import \"strict\"  # trailing\n"
      "\n"
      "profile p extends strict {  # after brace\n"
      "  # leading\n"
      "  network off  # why\n"
      "\n"
      "  filesystem {\n"
      "    readonly /usr\n"
      "    # before close\n"
      "  }\n"
      "  # end of profile\n"
      "}\n"
      "# end of file\n";
  EXPECT_EQ(Fmt(input), expected);
  EXPECT_EQ(Fmt(expected), expected);
}

// A comment after a statement stays after it, also when the statement is
// the first of a block opened on the same line: it once moved up to the
// `{` ("limits {  # about memory"), onto another statement.
TEST(Formatter, ATrailingCommentStaysAfterItsStatement) {
  EXPECT_EQ(Fmt("profile p {\n  limits { memory 1GiB # about memory\n  wall_time 5s }\n}\n"),
            "profile p {\n"
            "  limits {\n"
            "    memory 1GiB  # about memory\n"
            "    wall_time 5s\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(Fmt("profile p {\n  limits { memory 512MiB wall_time 30s # inline\n  }\n}\n"),
            "profile p {\n"
            "  limits {\n"
            "    memory 512MiB\n"
            "    wall_time 30s  # inline\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(Fmt("profile p { limits { memory 1GiB } # after the block\n}\n"),
            "profile p {\n"
            "  limits {\n"
            "    memory 1GiB\n"
            "  }  # after the block\n"
            "}\n");
}

TEST(Formatter, ConditionsKeepTheirGrouping) {
  std::string out = Fmt("profile p { syscalls { allow socket if (arg0 == 1 or arg0 == 2) and arg1 in {1,2} } }");
  EXPECT_NE(out.find("allow socket if (arg0 == 1 or arg0 == 2) and arg1 in {1, 2}"), std::string::npos) << out;
  EXPECT_EQ(Fmt(out), out);
}

// `if` is a keyword only where a rule's condition starts; elsewhere it is a
// word like any other and must survive formatting (parse_fuzzer found it
// dropped from the head of an unknown statement, and so from a runtime name).
TEST(Formatter, IfOutsideARuleIsAWordThatIsKept) {
  std::string out = Fmt("profile p { runtime if { interpreter /bin/sh } extra { if set X \"1\" } }");
  EXPECT_EQ(out,
            "profile p {\n"
            "  runtime if {\n"
            "    interpreter /bin/sh\n"
            "  }\n"
            "  extra {\n"
            "    if\n"
            "    set X \"1\"\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(Fmt(out), out);
}

TEST(Formatter, StringsRoundTrip) {
  std::string out = Fmt("profile p { description \"a \\\"quoted\\\" \\\\ word\" }");
  EXPECT_EQ(out, "profile p {\n  description \"a \\\"quoted\\\" \\\\ word\"\n}\n");
}

TEST(Formatter, FormattedTextCompilesToTheSameIr) {
  const char* input =
      "import \"strict\" profile p extends strict { limits { memory 64MiB } syscalls { allow socket if arg0 in "
      "{AF_UNIX,AF_INET} } environment { set A \"x\" pass TERM } }";
  std::optional<ir::Policy> a, b;
  ASSERT_EQ(testing::Diagnose(input, &a), "");
  ASSERT_EQ(testing::Diagnose(Fmt(input), &b), "");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->syscalls.rules, b->syscalls.rules);
  EXPECT_EQ(a->limits.memory_bytes.value, b->limits.memory_bytes.value);
  EXPECT_EQ(a->environment.set, b->environment.set);
}

TEST(Formatter, RefusesTextThatDoesNotParse) {
  Diagnostics diagnostics;
  EXPECT_FALSE(FormatPolicy("t.cocoon", "profile {", diagnostics));
  EXPECT_TRUE(diagnostics.has_errors());
}

// `cocoon fmt --write` rewrites through ReplaceFileContents: the file keeps
// its mode (a 0600 policy stayed readable by all), and a symlink stays a
// link whose target gets the new text (it became a regular file, the target
// untouched).
TEST(Formatter, WriteKeepsTheModeAndFollowsASymlink) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("cocoon-fmt-write-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "real");
  const fs::path target = dir / "real" / "p.cocoon";
  const fs::path link = dir / "p.cocoon";
  std::ofstream(target) << "profile p {   network off }\n";
  ASSERT_EQ(::chmod(target.c_str(), 0600), 0);
  fs::create_symlink(target, link);

  ASSERT_TRUE(ReplaceFileContents(link.string(), "profile p {\n  network off\n}\n").ok());

  EXPECT_TRUE(fs::is_symlink(link));
  std::stringstream text;
  text << std::ifstream(target).rdbuf();
  EXPECT_EQ(text.str(), "profile p {\n  network off\n}\n");
  struct stat st;
  ASSERT_EQ(::stat(target.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  // No temporary is left beside the target.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "real"), fs::directory_iterator()), 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace cocoon::frontend
