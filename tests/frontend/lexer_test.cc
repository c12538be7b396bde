// What the lexer makes of each kind of word. The lexer matches keywords as
// names and then gives them their keyword type (grammar/CocoonLexer.g4), and
// it fills its DFA edge table for every character a DFA state cannot tell
// apart from the one it computed (compiler/frontend/parser.cc,
// DenseEdgeLexerSimulator): these rows pin both down, each word alone (a
// cold DFA) and all of them in one file, forwards and backwards (edges first
// computed on other characters).
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "compiler/frontend/parser.h"

namespace cocoon::frontend {
namespace {

using ast::WordKind;

struct WordRow {
  std::string text;  // as written
  WordKind kind;
  std::string word;  // the Word's text (strings are unquoted)
};

const std::vector<WordRow>& WordRows() {
  static const std::vector<WordRow> rows = {
      {"memory", WordKind::kIdent, "memory"},
      {"m", WordKind::kIdent, "m"},
      {"Zz_9-.q", WordKind::kIdent, "Zz_9-.q"},
      {"_x", WordKind::kIdent, "_x"},
      {"a", WordKind::kIdent, "a"},
      {"ar", WordKind::kIdent, "ar"},
      {"arg", WordKind::kIdent, "arg"},
      {"argx", WordKind::kIdent, "argx"},
      {"x", WordKind::kIdent, "x"},
      {"X", WordKind::kIdent, "X"},
      {"on", WordKind::kKeyword, "on"},
      {"off", WordKind::kKeyword, "off"},
      {"host", WordKind::kKeyword, "host"},
      {"optional", WordKind::kKeyword, "optional"},
      {"unlimited", WordKind::kKeyword, "unlimited"},
      {"best_effort", WordKind::kKeyword, "best_effort"},
      {"onx", WordKind::kIdent, "onx"},
      {"o", WordKind::kIdent, "o"},
      {"On", WordKind::kIdent, "On"},
      {"on.x", WordKind::kIdent, "on.x"},
      {"on-x", WordKind::kIdent, "on-x"},
      {"hosts", WordKind::kIdent, "hosts"},
      {"best_effort2", WordKind::kIdent, "best_effort2"},
      {"0", WordKind::kNumber, "0"},
      {"42", WordKind::kNumber, "42"},
      {"0x7E020000", WordKind::kNumber, "0x7E020000"},
      {"0Xff", WordKind::kNumber, "0Xff"},
      {"5s", WordKind::kQuantity, "5s"},
      {"0x", WordKind::kQuantity, "0x"},
      {"1.5GiB", WordKind::kQuantity, "1.5GiB"},
      {"95%", WordKind::kQuantity, "95%"},
      // Any other word that starts with a digit: the checker says what is wrong.
      {"0x40MiB", WordKind::kQuantity, "0x40MiB"},
      {"0x10s", WordKind::kQuantity, "0x10s"},
      {"1.5", WordKind::kQuantity, "1.5"},
      {"1e3MiB", WordKind::kQuantity, "1e3MiB"},
      {"10.0.0.1", WordKind::kQuantity, "10.0.0.1"},
      {"0x40B", WordKind::kNumber, "0x40B"},
      {"host:80", WordKind::kHostPort, "host:80"},
      {"on:1", WordKind::kHostPort, "on:1"},
      {"10.0.0.1:53", WordKind::kHostPort, "10.0.0.1:53"},
      {"[::1]:8080", WordKind::kHostPort, "[::1]:8080"},
      {"65534:65534", WordKind::kHostPort, "65534:65534"},
      {"@system-service", WordKind::kGroup, "@system-service"},
      {"/usr/lib", WordKind::kPath, "/usr/lib"},
      // No ',': the lexer keeps one in a path, and the parser refuses it
      // there (diagnostics_test.cc, comma_in_a_bare_path_list).
      {"/a+b@c%d=e~f:g", WordKind::kPath, "/a+b@c%d=e~f:g"},
      {"./x", WordKind::kPath, "./x"},
      {"~/y", WordKind::kPath, "~/y"},
      {"usr/lib", WordKind::kPath, "usr/lib"},
      {"off/x", WordKind::kPath, "off/x"},
      {"9a/b", WordKind::kPath, "9a/b"},
      {"\"a \\\"q\\\" b\"", WordKind::kString, "a \"q\" b"},
      {"\"\"", WordKind::kString, ""},
  };
  return rows;
}

// The argument words of `zz WORDS...` inside a profile, or an empty list
// (with the diagnostics as a failure) when the text does not parse.
std::vector<ast::Word> Words(const std::string& words) {
  auto source = std::make_shared<const Source>("t.cocoon", "profile p {\n  zz " + words + "\n}\n");
  Diagnostics diagnostics;
  auto file = ParsePolicy(source, ParseOptions{}, diagnostics);
  if (!file) {
    ADD_FAILURE() << diagnostics.Render();
    return {};
  }
  return file->profiles.at(0).body.at(0).args;
}

void ExpectWords(const std::vector<WordRow>& rows) {
  std::string text;
  for (const WordRow& row : rows) text += row.text + " ";
  std::vector<ast::Word> words = Words(text);
  ASSERT_EQ(words.size(), rows.size()) << text;
  for (size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(words[i].kind, rows[i].kind) << rows[i].text;
    EXPECT_EQ(words[i].text, rows[i].word) << rows[i].text;
  }
}

TEST(Lexer, EachWordAlone) {
  for (const WordRow& row : WordRows()) ExpectWords({row});
}

TEST(Lexer, AllWordsInOneFile) {
  std::vector<WordRow> rows = WordRows();
  ExpectWords(rows);
  std::reverse(rows.begin(), rows.end());
  ExpectWords(rows);
}

// Keywords are names spelled exactly like a keyword; profile names may be
// either.
TEST(Lexer, KeywordsAreExactSpellings) {
  const std::vector<std::pair<std::string, WordKind>> names = {
      {"include", WordKind::kKeyword},  {"includes", WordKind::kIdent}, {"include.d", WordKind::kIdent},
      {"unset", WordKind::kKeyword},    {"Unset", WordKind::kIdent},    {"arch", WordKind::kKeyword},
      {"archive", WordKind::kIdent},    {"in", WordKind::kKeyword},     {"i", WordKind::kIdent}};
  for (const auto& [name, kind] : names) {
    auto source = std::make_shared<const Source>("t.cocoon", "profile " + name + " {}\n");
    Diagnostics diagnostics;
    auto file = ParsePolicy(source, ParseOptions{}, diagnostics);
    ASSERT_TRUE(file.has_value()) << diagnostics.Render();
    EXPECT_EQ(file->profiles.at(0).name.kind, kind) << name;
    EXPECT_EQ(file->profiles.at(0).name.text, name);
  }
}

// One line of every character class the lexer knows, lexed with a DFA that
// an earlier file already filled (DfaReuse::kProcessWide) and with a cold one:
// the same words either way.
TEST(Lexer, WarmAndColdDfaAgree) {
  std::string text;
  for (const WordRow& row : WordRows()) text += row.text + " ";
  auto parse = [&](DfaReuse reuse) {
    auto source = std::make_shared<const Source>("t.cocoon", "profile p {\n  zz " + text + "\n}\n");
    Diagnostics diagnostics;
    ParseOptions options;
    options.dfa_reuse = reuse;
    auto file = ParsePolicy(source, options, diagnostics);
    EXPECT_TRUE(file.has_value()) << diagnostics.Render();
    std::vector<std::pair<WordKind, std::string>> out;
    if (file) {
      for (const ast::Word& word : file->profiles.at(0).body.at(0).args) out.emplace_back(word.kind, word.text);
    }
    return out;
  };
  auto warm_first = parse(DfaReuse::kProcessWide);
  EXPECT_EQ(parse(DfaReuse::kProcessWide), warm_first);
  EXPECT_EQ(parse(DfaReuse::kPerParse), warm_first);
}

}  // namespace
}  // namespace cocoon::frontend
