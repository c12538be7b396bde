// The fast lexer (compiler/frontend/lexer.h) must produce exactly the tokens
// of the generated ANTLR lexer: on tricky words, on every shipped policy, and
// on random strings over the characters the grammar cares about. The parse
// fuzzer runs the same comparison on every input it tries.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "compiler/frontend/lexer.h"
#include "compiler/frontend/parser.h"
#include "tests/frontend/test_util.h"

namespace cocoon::frontend {
namespace {

std::string Disagreement(const std::string& text) {
  std::string why;
  return LexersAgree(text, &why) ? "" : why;
}

class LexerAgreement : public ::testing::TestWithParam<const char*> {};

TEST_P(LexerAgreement, SameTokensAsAntlr) { EXPECT_EQ(Disagreement(GetParam()), "") << GetParam(); }

// Longest match and rule order: each line pits rules against each other.
INSTANTIATE_TEST_SUITE_P(
    Frontend, LexerAgreement,
    ::testing::Values(
        "arg0 arg argx arg12x arg0:1 arg5/x", "0x1F 0xZZ 0x 0X1 00x1 0x1g 1x2", "1.5GiB 1.5 12. 1.x 95% 1%x 5s2",
        "10.0.0.1:53 [::1]:8080 [12]:a [zz]:1 [1:2] [] [:]: localhost:80 a-b.c:d9 a: :80 x:-",
        ".foo:80 -foo:80 --- -a:1 .:1 _:1 a_b:c/d", "a:b/c usr/lib ./x ~/x ../x /usr/lib / . ~ 1a/b a/ _/ 9/",
        "@group @ @- @@x @a/b a@b /a@b", "\"str\\\"ing\" \"\" \"\\\\\" \"a\\\nb\" \"unterminated \n\"x", "\"\\",
        "\"a\\\"\"b\"\"\\\"\\\"\"", "# comment\n#\r\n x # y \"z\n", "== != <= >= < > = ! & | , { } ( ) =! !! <<= >>=",
        "include includes inherit in _x x-y.z IN In profile1 profile_ default:1 readonly/x best_effort",
        "caf\xC3\xA9 \xE2\x82\xAC \"\xC3\xA9\" #\xF0\x9F\x98\x80\n\xF0\x9F\x98\x80x", "\t\r\n \f\v x\x01y\x7f",
        "\xEF\xBB\xBF# bom\nx", "\xEF\xBB\xBF\xEF\xBB\xBFx", "x\xEF\xBB\xBFy",
        "profile p extends strict { limits { memory 1GiB processes 8 } }",
        "deny clone if (arg0 & CLONE_NEWUSER | 0x10) != 0 and arg1 in {1, 2,} errno EPERM"));

TEST(Lexer, AgreesOnEveryShippedPolicy) {
  size_t files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(testing::RepoPath("policies"))) {
    if (entry.path().extension() != ".cocoon") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(Disagreement(text.str()), "") << entry.path();
    ++files;
  }
  EXPECT_GT(files, 3u);
}

TEST(Lexer, AgreesOnRandomStrings) {
  // Characters at the edges of the token rules, plus some UTF-8.
  const std::vector<std::string> pieces = {
      "a", "g", "r", "x", "X", "0", "1", "9", "f", ".", "-", "_", "/", "~", ":", "[", "]", "@", "\"", "\\", "#",
      " ", "\n", "\r", "=", "!", "<", ">", "%", "+", ",", "{", "(", "&", "|", "arg", "in", "0x", "\xC3\xA9", "\x01"};
  std::mt19937 rng(1234);
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    size_t length = rng() % 24 + 1;
    for (size_t i = 0; i < length; ++i) text += pieces[rng() % pieces.size()];
    ASSERT_EQ(Disagreement(text), "") << "input: " << text;
  }
}

TEST(Lexer, HostileRunsStayLinear) {
  // Each of these makes ANTLR's lexer rescan a long run from every position;
  // the fast lexer must still give the same tokens (its linear time is
  // measured in bench/frontend_bench.cc, not asserted here).
  for (std::string text : {std::string(1500, '-'), "\"" + std::string(1500, '\\') + "\"\\\"",
                           "a" + std::string(1500, ':'), std::string(1000, '"') + "\\"}) {
    EXPECT_EQ(Disagreement(text), "");
  }
}

}  // namespace
}  // namespace cocoon::frontend
