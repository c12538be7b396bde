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

// The first pass kept a blank line between `{  # C0` and `# C1` (a
// comment inside the block's first statement), the second removed it.
TEST(Formatter, ACommentInsideTheFirstStatementOfABlockIsStable) {
  const std::string once = Fmt(
      "profile p { # C0\n\n  description # C1\n \"d\"\n  syscalls { default errno ENOSYS allow @system-service }\n}\n");
  EXPECT_EQ(once,
            "profile p {  # C0\n"
            "  # C1\n"
            "  description \"d\"\n"
            "  syscalls {\n"
            "    default errno ENOSYS\n"
            "    allow @system-service\n"
            "  }\n"
            "}\n");
  EXPECT_EQ(Fmt(once), once);
}

// Every .cocoon file of the repository (shipped policies, test and bench
// policies).
std::vector<std::pair<std::string, std::string>> CorpusFiles() {
  std::vector<std::pair<std::string, std::string>> files;
  for (const char* dir : {"policies", "tests", "bench"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(testing::RepoPath(dir))) {
      if (!entry.is_regular_file() || entry.path().extension() != ".cocoon") continue;
      std::stringstream text;
      text << std::ifstream(entry.path()).rdbuf();
      files.emplace_back(entry.path().string(), text.str());
    }
  }
  return files;
}

// `text` with comments and blank lines put between its words, outside
// strings and comments: at each run of blanks, chosen by a fixed
// pseudo-random sequence, a trailing comment and a newline, a blank line, a
// comment on a line of its own, or nothing. Each comment is "# cN", N unique.
std::string WithComments(const std::string& text, uint32_t seed, int& comments) {
  std::string out;
  bool in_string = false, in_comment = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_comment) {
      in_comment = c != '\n';
    } else if (in_string) {
      if (c == '\\' && i + 1 < text.size()) {  // an escape: both characters
        out += c;
        out += text[++i];
        continue;
      }
      in_string = c != '"';
    } else if (c == '"') {
      in_string = true;
    } else if (c == '#') {
      in_comment = true;
    } else if (c == ' ' || c == '\n') {
      seed = seed * 1103515245u + 12345u;
      switch ((seed >> 16) % 6) {
        case 0: out += " # c" + std::to_string(comments++) + "\n"; break;
        case 1: out += "\n\n"; break;
        case 2: out += "\n# c" + std::to_string(comments++) + "\n"; break;
        case 3: out += "\n\n  # c" + std::to_string(comments++) + "\n\n"; break;
        default: break;
      }
    }
    out += c;
  }
  return out;
}

// fmt(fmt(x)) == fmt(x), and no comment is lost, over the corpus and over
// comment-heavy versions of it.
TEST(Formatter, IsIdempotentOverTheCorpusAndCommentHeavyVariants) {
  const auto files = CorpusFiles();
  ASSERT_GE(files.size(), 10u);
  size_t variants = 0;
  for (const auto& [path, text] : files) {
    for (uint32_t seed = 0; seed < 4; ++seed) {
      int comments = 0;
      const std::string input = seed == 0 ? text : WithComments(text, seed, comments);
      Diagnostics diagnostics;
      const std::optional<std::string> once = FormatPolicy("t.cocoon", input, diagnostics);
      if (!once) {
        if (seed == 0) ADD_FAILURE() << path << ":\n" << diagnostics.Render();
        continue;  // a test policy that is meant not to parse
      }
      variants += seed == 0 ? 0 : 1;
      const std::optional<std::string> twice = FormatPolicy("t.cocoon", *once, diagnostics);
      ASSERT_TRUE(twice) << path << " seed " << seed << ":\n" << diagnostics.Render() << *once;
      EXPECT_EQ(*twice, *once) << path << " seed " << seed << "; input:\n" << input;
      for (int n = 0; n < comments; ++n) {
        EXPECT_NE(once->find("# c" + std::to_string(n) + "\n"), std::string::npos) << path << " lost # c" << n;
      }
    }
  }
  EXPECT_EQ(variants, 3 * files.size());  // every commented variant parses
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
