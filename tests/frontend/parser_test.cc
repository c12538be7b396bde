// The AST the parser builds, spans included. The parser builds no parse
// tree: compiler/frontend/parser.cc makes the AST from the parser's rule
// entry and exit events and the tokens it consumes, and groups a
// condition's predicates into `and` groups itself (the grammar's condition
// rule is `predicate ((AND | OR) predicate)*`). Each row is a condition and
// its tree, printed with the source text of every node's span.
#include <gtest/gtest.h>

#include <string>

#include "compiler/frontend/parser.h"

namespace cocoon::frontend {
namespace {

std::string TextOf(const std::string& text, Span span) { return text.substr(span.begin, span.size()); }

// or[...] / and[...] / cmp / in, each followed by its span's text in <>;
// a parenthesized node is marked with ().
std::string Print(const std::string& text, const ast::Condition& c) {
  std::string out;
  switch (c.kind) {
    case ast::Condition::Kind::kOr: out = "or"; break;
    case ast::Condition::Kind::kAnd: out = "and"; break;
    case ast::Condition::Kind::kCompare: out = "cmp " + c.arg.text + " " + c.op; break;
    case ast::Condition::Kind::kIn: out = "in " + c.arg.text; break;
  }
  if (c.masked) out += " mask<" + TextOf(text, c.mask.span) + ">";
  for (const ast::ValueExpr& v : c.values) out += " value<" + TextOf(text, v.span) + ">";
  if (c.parenthesized) out += " ()";
  out += " <" + TextOf(text, c.span) + ">";
  if (!c.children.empty()) {
    out += "[";
    for (size_t i = 0; i < c.children.size(); ++i) out += (i ? ", " : "") + Print(text, c.children[i]);
    out += "]";
  }
  return out;
}

struct ConditionRow {
  const char* condition;
  const char* tree;
};

const ConditionRow kConditionRows[] = {
    {"arg0 == 1", "cmp arg0 == value<1> <arg0 == 1>"},
    {"arg0 == 1 and arg1 != 2 or arg2 < 3",
     "or <arg0 == 1 and arg1 != 2 or arg2 < 3>[and <arg0 == 1 and arg1 != 2>[cmp arg0 == value<1> <arg0 == 1>, "
     "cmp arg1 != value<2> <arg1 != 2>], cmp arg2 < value<3> <arg2 < 3>]"},
    {"arg0 == 1 or arg1 == 2 and arg2 == 3 and arg3 == 4",
     "or <arg0 == 1 or arg1 == 2 and arg2 == 3 and arg3 == 4>[cmp arg0 == value<1> <arg0 == 1>, "
     "and <arg1 == 2 and arg2 == 3 and arg3 == 4>[cmp arg1 == value<2> <arg1 == 2>, cmp arg2 == value<3> <arg2 == 3>, "
     "cmp arg3 == value<4> <arg3 == 4>]]"},
    {"(arg0 == 1 or arg0 == 2) and arg1 in { 1, 2 | 4, }",
     "and <(arg0 == 1 or arg0 == 2) and arg1 in { 1, 2 | 4, }>[or () <(arg0 == 1 or arg0 == 2)>[cmp arg0 == "
     "value<1> <arg0 == 1>, cmp arg0 == value<2> <arg0 == 2>], in arg1 value<1> value<2 | 4> <arg1 in { 1, 2 | 4, }>]"},
    {"((arg0 & 0xff) != 3)", "cmp arg0 != mask<0xff> value<3> () <((arg0 & 0xff) != 3)>"},
    {"(arg0 >= 1) or ((arg1 <= 2 and arg2 > CLONE_NEWNS | 1))",
     "or <(arg0 >= 1) or ((arg1 <= 2 and arg2 > CLONE_NEWNS | 1))>[cmp arg0 >= value<1> () <(arg0 >= 1)>, "
     "and () <((arg1 <= 2 and arg2 > CLONE_NEWNS | 1))>[cmp arg1 <= value<2> <arg1 <= 2>, cmp arg2 > "
     "value<CLONE_NEWNS | 1> <arg2 > CLONE_NEWNS | 1>]]"},
};

class ConditionTree : public ::testing::TestWithParam<ConditionRow> {};

TEST_P(ConditionTree, MatchesTheSource) {
  const std::string text = std::string("profile p {\n  syscalls {\n    deny clone if ") + GetParam().condition +
                           " errno EPERM\n  }\n}\n";
  auto source = std::make_shared<const Source>("t.cocoon", text);
  Diagnostics diagnostics;
  auto file = ParsePolicy(source, ParseOptions{}, diagnostics);
  ASSERT_TRUE(file.has_value()) << diagnostics.Render();
  const ast::Statement& rule = file->profiles.at(0).body.at(0).block.at(0);
  ASSERT_NE(rule.condition, nullptr);
  EXPECT_EQ(Print(text, *rule.condition), GetParam().tree);
  // The statement around it: its words, and the errno after the condition.
  EXPECT_EQ(rule.keyword.text, "deny");
  ASSERT_EQ(rule.args.size(), 3u);
  EXPECT_EQ(rule.condition_index, 1u);
  EXPECT_EQ(rule.args[1].text, "errno");
  EXPECT_EQ(TextOf(text, rule.span), std::string("deny clone if ") + GetParam().condition + " errno EPERM");
}

INSTANTIATE_TEST_SUITE_P(Parser, ConditionTree, ::testing::ValuesIn(kConditionRows));

// Statements, blocks, directives and profile names, with their spans.
TEST(Parser, StatementShapes) {
  const std::string text =
      "import \"strict\"\n"
      "profile p extends strict {\n"
      "  network allow { api.example.com:443 \"h:1\" }\n"
      "  filesystem { readonly optional /a as /b \"/c\" devices { gpu off } }\n"
      "  runtime python { flags \"-I\" \"-S\" }\n"
      "}\n";
  auto source = std::make_shared<const Source>("t.cocoon", text);
  Diagnostics diagnostics;
  auto file = ParsePolicy(source, ParseOptions{}, diagnostics);
  ASSERT_TRUE(file.has_value()) << diagnostics.Render();
  ASSERT_EQ(file->directives.size(), 1u);
  EXPECT_EQ(TextOf(text, file->directives[0].span), "import \"strict\"");
  EXPECT_EQ(file->directives[0].target.text, "strict");
  const ast::Profile& p = file->profiles.at(0);
  EXPECT_EQ(p.name.text, "p");
  EXPECT_TRUE(p.has_parent);
  EXPECT_EQ(p.parent.text, "strict");
  ASSERT_EQ(p.body.size(), 3u);

  const ast::Statement& network = p.body[0];
  EXPECT_EQ(TextOf(text, network.span), "network allow { api.example.com:443 \"h:1\" }");
  EXPECT_TRUE(network.has_block);
  EXPECT_EQ(TextOf(text, network.block_open), "{");
  ASSERT_EQ(network.block.size(), 2u);  // each endpoint is a one-word statement
  EXPECT_EQ(network.block[1].keyword.text, "h:1");
  EXPECT_EQ(TextOf(text, network.block[1].span), "\"h:1\"");

  const ast::Statement& fs = p.body[1];
  ASSERT_EQ(fs.block.size(), 2u);
  const ast::Statement& bind = fs.block[0];
  EXPECT_EQ(TextOf(text, bind.span), "readonly optional /a as /b \"/c\"");
  ASSERT_EQ(bind.args.size(), 5u);
  EXPECT_EQ(bind.args[4].kind, ast::WordKind::kString);
  EXPECT_EQ(bind.args[4].text, "/c");
  ASSERT_EQ(fs.block[1].block.size(), 1u);
  EXPECT_EQ(TextOf(text, fs.block[1].block[0].span), "gpu off");

  const ast::Statement& runtime = p.body[2];
  EXPECT_EQ(runtime.keyword.text, "runtime");
  ASSERT_EQ(runtime.args.size(), 1u);
  EXPECT_EQ(runtime.args[0].text, "python");
  ASSERT_EQ(runtime.block.size(), 1u);
  EXPECT_EQ(runtime.block[0].args.size(), 2u);
}

}  // namespace
}  // namespace cocoon::frontend
