// Hostile input: the parser never crashes, never hangs, and reports limits.
#include <gtest/gtest.h>

#include <random>

#include "compiler/frontend/parser.h"
#include "tests/frontend/test_util.h"

namespace cocoon::frontend {
namespace {

bool Parses(const std::string& text, Diagnostics& diagnostics, ParseOptions options = {}) {
  auto source = std::make_shared<const Source>("t.cocoon", text);
  return ParsePolicy(source, options, diagnostics).has_value();
}

TEST(Robustness, RandomMegabyteFinishesWithCappedErrors) {
  std::mt19937 rng(42);
  std::string text(1 << 20, ' ');
  for (char& c : text) c = static_cast<char>(rng() % 96 + 32);
  Diagnostics diagnostics;
  EXPECT_FALSE(Parses(text, diagnostics));
  EXPECT_LE(diagnostics.error_count(), 25u);
}

TEST(Robustness, RandomTokensFinish) {
  const char* words[] = {"profile", "{", "}", "(", ")", "limits", "memory", "5s", "/usr", "\"x\"", "allow",
                         "if", "arg0", "==", "or", "in", ",", "@mount", "syscalls", "network", "off"};
  std::mt19937 rng(7);
  std::string text;
  while (text.size() < (1 << 20)) text += std::string(words[rng() % std::size(words)]) + " ";
  Diagnostics diagnostics;
  EXPECT_FALSE(Parses(text, diagnostics));
}

// Runs that a lexer rule scans to the end and then rejects (a HOSTPORT with
// no ':', a string with no closing quote, digits and dashes) must become ONE
// token: with one error token per character, ANTLR rescans the rest of the
// run from every position, which is quadratic (minutes for 160 KiB). The
// error naming the whole run (truncated) shows it was lexed as one token.
TEST(Robustness, LongRejectedRunsAreOneToken) {
  const std::string runs[] = {std::string(1 << 20, '-'), [] {
                                std::string s;
                                while (s.size() < (1 << 20)) s += "9-";
                                return s;
                              }(),
                              [] {
                                std::string s;
                                while (s.size() < (1 << 20)) s += "\"\\";
                                return s;
                              }()};
  for (const std::string& run : runs) {
    Diagnostics diagnostics;
    EXPECT_FALSE(Parses(run, diagnostics));
    std::string rendered = diagnostics.Render();
    EXPECT_NE(rendered.find("unexpected '" + run.substr(0, 37) + "...'"), std::string::npos)
        << rendered.substr(0, 300);
    EXPECT_EQ(diagnostics.error_count(), 1u) << rendered.substr(0, 300);
  }
}

TEST(Robustness, DeepNestingIsRefusedNotRecursed) {
  std::string text = "profile p { syscalls { allow read if " + std::string(100000, '(') + "arg0 == 1" +
                     std::string(100000, ')') + " } }";
  Diagnostics diagnostics;
  EXPECT_FALSE(Parses(text, diagnostics));
  EXPECT_NE(diagnostics.Render().find("nesting is deeper than the limit of 64"), std::string::npos);
}

TEST(Robustness, FileSizeLimit) {
  ParseOptions options;
  options.max_file_bytes = 100;
  Diagnostics diagnostics;
  EXPECT_FALSE(Parses(std::string(101, ' '), diagnostics, options));
  EXPECT_NE(diagnostics.Render().find("the limit is 100"), std::string::npos);
}

TEST(Robustness, InvalidUtf8AndNulBytes) {
  Diagnostics a;
  EXPECT_FALSE(Parses("profile p { description \"\xff\" }", a));
  EXPECT_NE(a.Render().find("invalid UTF-8 (byte 0xFF)"), std::string::npos);
  Diagnostics b;
  EXPECT_FALSE(Parses(std::string("profile p {\0}", 13), b));
  Diagnostics c;
  EXPECT_TRUE(Parses("\xEF\xBB\xBFprofile p { description \"h\xC3\xA9llo\" hostname x }", c)) << c.Render();
}

// Each `and` step copies the conjunction built so far: without a cap, 80,000
// terms took 14 s. The cap stops at the 65th comparison, at its position.
// (Its cost is bench/frontend_bench.cc's BM_CheckLongAndChain, not a timer
// here: under the sanitizers this file alone takes seconds to parse.)
TEST(Robustness, LongAndChainIsCapped) {
  std::string condition = "arg0 == 0";
  for (int i = 1; i < 80000; ++i) condition += " and arg1 == " + std::to_string(i);
  std::string out = testing::Diagnose("import \"strict\"\nprofile p extends strict {\n  syscalls { deny ioctl if " +
                                      condition + " }\n}\n");
  EXPECT_NE(out.find("t.cocoon:3:" + std::to_string(28 + condition.find("arg1 == 64 ")) +
                     ": more than 64 comparisons ANDed in one rule"),
            std::string::npos)
      << out.substr(0, 300);
}

// One BOM is stripped by the parser; a second would be stripped by ANTLR
// without the offsets knowing, and every position would be one off.
TEST(Robustness, SecondByteOrderMarkIsAnErrorAtTheStart) {
  std::string out = testing::Diagnose("\xEF\xBB\xBF\xEF\xBB\xBFprofile t { netwrk off }");
  EXPECT_NE(out.find("ERROR: t.cocoon:1:1: the file starts with two byte-order marks"), std::string::npos) << out;
  EXPECT_NE(out.find("help: remove the extra byte-order mark (U+FEFF)"), std::string::npos) << out;
  EXPECT_EQ(out.find("unknown setting"), std::string::npos) << out;  // stops before checking
}

// "Trojan Source": a right-to-left override in a comment or a string makes
// an editor show the text in another order, and a zero-width character
// inside a path hides a different path. Each one is an error, all of them
// reported, and the echoed line shows '?' for each of its bytes (the raw
// character would reorder the terminal's line too).
TEST(Robustness, InvisibleAndDirectionChangingCharactersAreErrors) {
  const std::string rlo = "\xE2\x80\xAE", zwsp = "\xE2\x80\x8B", bom = "\xEF\xBB\xBF";
  std::optional<ir::Policy> policy;
  std::string out = testing::Diagnose(bom + "profile t {  # harmless" + rlo + " comment\n"
                                          "  filesystem { hide /etc/pass" + zwsp + "wd }\n"
                                          "  environment { set A \"x" + bom + "\" }\n}\n",
                                      &policy);
  EXPECT_FALSE(policy.has_value());
  EXPECT_NE(out.find("ERROR: t.cocoon:1:27: invisible character U+202E (RIGHT-TO-LEFT OVERRIDE): what a reviewer "
                     "reads would not be what runs"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("ERROR: t.cocoon:2:30: invisible character U+200B (ZERO WIDTH SPACE)"), std::string::npos) << out;
  EXPECT_NE(out.find(" |   filesystem { hide /etc/pass???wd }\n |                              ^~~\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find("ERROR: t.cocoon:3:25: invisible character U+FEFF"), std::string::npos) << "a BOM past the start\n"
                                                                                           << out;
  EXPECT_EQ(out.find(rlo), std::string::npos) << "echoed raw";
  // The file's own leading byte-order mark is its encoding, not content.
  std::string leading = testing::Diagnose(bom + "profile t { network off }\n");
  EXPECT_EQ(leading.find("ERROR"), std::string::npos) << leading;
}

// The rest of what a reader cannot see: a line separator (a line break to
// some editors, nothing to others), a tag character (4 bytes, past U+FFFF),
// a variation selector and a Hangul filler. They used to pass.
TEST(Robustness, LineSeparatorsTagsVariationSelectorsAndFillersAreErrors) {
  std::optional<ir::Policy> policy;
  std::string out = testing::Diagnose("profile t {  # a\u2028 comment\n"
                                      "  filesystem { hide /etc/pass\U000E0041wd }\n"
                                      "  environment { set A \"x\uFE0Fy\" set B \"\u3164\" }\n}\n",
                                      &policy);
  EXPECT_FALSE(policy.has_value());
  EXPECT_NE(out.find("ERROR: t.cocoon:1:17: invisible character U+2028 (LINE SEPARATOR)"), std::string::npos) << out;
  EXPECT_NE(out.find("ERROR: t.cocoon:2:30: invisible character U+E0041 (a TAG character)"), std::string::npos)
      << out;
  EXPECT_NE(out.find(" |   filesystem { hide /etc/pass????wd }\n |                              ^~~~\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("invisible character U+FE0F (VARIATION SELECTOR)"), std::string::npos) << out;
  EXPECT_NE(out.find("invisible character U+3164 (HANGUL FILLER)"), std::string::npos) << out;
}

// An emoji's presentation selector (U+FE0F, or U+FE0E) right after it, in
// a comment or a description, is what editors write for "✅️": allowed.
// Anywhere it could hide meaning it stays an error: in a name, a path or
// any other string, stacked, after a space or at a line's start, and any
// other variation selector.
TEST(Robustness, APresentationSelectorOnAVisibleCharacterIsAllowedOnlyInCommentsAndDescriptions) {
  std::optional<ir::Policy> policy;
  std::string out = testing::Diagnose("profile t {  # done \u2705\uFE0F, #\uFE0F\u20E3 and \u2764\uFE0E\n"
                                      "  description \"Shield \u26D4\uFE0F here\" # \"q\" \u2705\uFE0F\n"
                                      "  syscalls { allow read }\n}\n",
                                      &policy);
  EXPECT_TRUE(policy.has_value()) << out;
  EXPECT_EQ(out.find("invisible"), std::string::npos) << out;

  const std::vector<std::pair<std::string, std::string>> refused = {
      {"a path", "  filesystem { readonly \"/data/\u2705\uFE0F\" }\n"},
      {"an environment value", "  environment { set A \"\u2705\uFE0F\" }\n"},
      {"a name", "  hostname a\u2705\uFE0F\n"},
      {"a string that is no description's on its line", "  description\n  \"\u2705\uFE0F\"\n"},
      {"a stacked one", "  # \u2705\uFE0F\uFE0F\n"},
      {"one after a space", "  # ok \uFE0F\n"},
      {"one after a no-break space", "  # ok\u00A0\uFE0F\n"},
      {"one at a line's start", "\uFE0F  # x\n"},
      {"another variation selector", "  # \u2705\uFE00\n"},
  };
  for (const auto& [where, line] : refused) {
    out = testing::Diagnose("profile t {\n" + line + "  syscalls { allow read }\n}\n", &policy);
    EXPECT_FALSE(policy.has_value()) << where;
    EXPECT_NE(out.find("invisible character U+FE0"), std::string::npos) << where << "\n" << out;
  }
}

// Terminal control characters: a lone CR returns the cursor, so the rest of
// the line is drawn over what came before it; ESC [2K erases the line; a
// backspace, DEL or a C1 control (CSI U+009B, NEL U+0085) acts instead of
// drawing. In a comment they used to pass silently, so a policy could show
// `network off` on a terminal and run with the network on. Each is refused
// where it is, comments and strings included; CRLF line endings still work.
TEST(Robustness, TerminalControlCharactersAreErrorsEvenInComments) {
  std::optional<ir::Policy> policy;
  std::string out = testing::Diagnose(
      "profile base {\n  network on\r  # network off: no network at all\n  syscalls {\n"
      "    default allow #\x1b[2K\r    # default errno ENOSYS\n    allow @system-service\n  }\n}\n",
      &policy);
  EXPECT_FALSE(policy.has_value()) << out;
  EXPECT_NE(out.find("ERROR: t.cocoon:2:13: lone carriage return"), std::string::npos) << out;
  EXPECT_NE(out.find("help: use LF (or CRLF) line endings"), std::string::npos) << out;
  EXPECT_NE(out.find("ERROR: t.cocoon:4:20: control character U+001B ESC (escape)"), std::string::npos) << out;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << "echoed raw";
  EXPECT_EQ(out.find('\r'), std::string::npos) << "echoed raw";

  out = testing::Diagnose("profile p {  # a\x08\x08" "b \x7f c\xC2\x9B" "2K \xC2\x85 d\x0c\n  network off\n}\n", &policy);
  EXPECT_FALSE(policy.has_value()) << out;
  for (const char* what : {"1:17: control character U+0008 BS (backspace)", "1:18: control character U+0008 BS",
                           "1:21: control character U+007F DEL", "1:24: control character U+009B CSI",
                           "1:29: control character U+0085 NEL (next line)",
                           "1:33: control character U+000C FF (form feed)"}) {
    EXPECT_NE(out.find(std::string("ERROR: t.cocoon:") + what), std::string::npos) << what << "\n" << out;
  }

  // A CR inside a string: the same error, not "unterminated string?".
  out = testing::Diagnose("profile p {\n  environment { set A \"x\ry\" }\n}\n", &policy);
  EXPECT_FALSE(policy.has_value()) << out;
  EXPECT_NE(out.find("ERROR: t.cocoon:2:25: lone carriage return"), std::string::npos) << out;
  EXPECT_EQ(out.find("unterminated"), std::string::npos) << out;

  // A file of lone CRs (old Mac line endings) is one error, not one a line.
  out = testing::Diagnose("import \"strict\"\rprofile p extends strict {\r  limits { memroy 1GiB }\r}\r", &policy);
  EXPECT_EQ(out.find("memroy"), out.rfind("memroy")) << out;  // stops before checking
  EXPECT_NE(out.find("ERROR: t.cocoon:1:16: lone carriage return"), std::string::npos) << out;
  EXPECT_EQ(out.find("ERROR", 1), std::string::npos) << out;

  // Random bytes: ten are reported, then a count.
  std::string many = "profile p { network off }\n#";
  for (int i = 0; i < 25; ++i) many += "\x1b";
  out = testing::Diagnose(many + "\n", &policy);
  EXPECT_NE(out.find("15 more control characters are not shown"), std::string::npos) << out;

  // CRLF line endings, a tab and a CRLF inside a comment are text.
  out = testing::Diagnose("import \"strict\"\r\nprofile p extends strict {\r\n\tnetwork off  # ok\r\n}\r\n", &policy);
  EXPECT_TRUE(policy.has_value()) << out;
  EXPECT_EQ(out.find("ERROR"), std::string::npos) << out;
}

TEST(Robustness, NonAsciiSpansPointAtTheRightBytes) {
  std::string out = testing::Diagnose("profile t { description \"\xC3\xA9\xC3\xA9\" netwrk off }");
  EXPECT_NE(out.find("t.cocoon:1:32: unknown setting 'netwrk'"), std::string::npos) << out;
}

}  // namespace
}  // namespace cocoon::frontend
