// `cocoon fmt`: prints the AST in canonical form. Two-space indentation, one
// statement per line, one space between words, blocks opened on the
// statement's line. Comments are kept: a comment on its own line stays before
// the next statement (at that statement's indentation), a comment after a
// statement on the same line stays trailing, and single blank lines between
// statements are kept. The output parses to the same AST, and formatting it
// again changes nothing.
#include <algorithm>

#include "compiler/frontend/frontend.h"
#include "compiler/frontend/parser.h"

namespace cocoon::frontend {
namespace {

class Formatter {
 public:
  explicit Formatter(const ast::File& file) : file_(file), text_(file.source->text()) {}

  std::string Run() {
    struct Item {
      uint32_t begin;
      const ast::Directive* directive;
      const ast::Profile* profile;
    };
    std::vector<Item> items;
    for (const auto& d : file_.directives) items.push_back({d.span.begin, &d, nullptr});
    for (const auto& p : file_.profiles) items.push_back({p.span.begin, nullptr, &p});
    std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.begin < b.begin; });
    bool previous_profile = false;
    for (const Item& item : items) {
      if (item.profile) {
        if (!out_.empty()) Blank();
        Profile(*item.profile);
      } else {
        if (previous_profile) Blank();
        CommentsBefore(item.begin, 0);
        BlankIfSource(item.begin);
        Indent(0);
        out_ += item.directive->keyword.text + " " + Word(item.directive->target);
        Trailing(item.directive->span.end);
        last_end_ = item.directive->span.end;
      }
      previous_profile = item.profile != nullptr;
    }
    CommentsBefore(static_cast<uint32_t>(text_.size()) + 1, 0);
    return out_;
  }

 private:
  void Profile(const ast::Profile& p) {
    CommentsBefore(p.span.begin, 0);
    BlankIfSource(p.span.begin);
    out_ += "profile " + Word(p.name);
    if (p.has_parent) out_ += " extends " + Word(p.parent);
    out_ += " {";
    uint32_t after_name = p.has_parent ? p.parent.span.end : p.name.span.end;
    uint32_t open = static_cast<uint32_t>(std::min(text_.find('{', after_name), text_.size())) + 1;
    Trailing(open);  // a comment after the `{`
    last_end_ = open;
    Block(p.body, p.span.end - 1, 1);
    out_ += "}";
    Trailing(p.span.end);
    last_end_ = p.span.end;
  }

  void Block(const std::vector<ast::Statement>& body, uint32_t close, int indent) {
    bool first = true;
    for (const ast::Statement& s : body) {
      const size_t comments_before = next_comment_;
      CommentsBefore(s.span.begin, indent, first);
      if (!first) BlankIfSource(s.span.begin);
      const bool at_top = first && next_comment_ == comments_before;  // nothing written in the block yet
      Statement(s, indent, at_top ? Position::kFirstInBlock : Position::kAfterAnother);
      first = false;
    }
    CommentsBefore(close, indent, first);
    Indent(indent - 1);
  }

  enum class Position { kFirstInBlock, kAfterAnother };

  void Statement(const ast::Statement& s, int indent, Position position) {
    // Comments written inside a one-line statement's words move before it,
    // as the comments before it go: with no blank line at the top of a
    // block (else the next pass, finding them before the statement, drops
    // the blank line this one kept).
    if (!s.has_block) CommentsBefore(s.span.end, indent, position == Position::kFirstInBlock);
    Indent(indent);
    std::vector<std::string> words{Word(s.keyword)};
    for (const ast::Word& w : s.args) words.push_back(Word(w));
    if (s.condition) words.insert(words.begin() + 1 + s.condition_index, "if " + Condition(*s.condition, false));
    for (size_t i = 0; i < words.size(); ++i) out_ += (i ? " " : "") + words[i];
    if (!s.has_block) {
      Trailing(s.span.end);
      last_end_ = s.span.end;
      return;
    }
    uint32_t close = s.span.end - 1;
    if (s.block.empty() && !CommentBefore(close)) {
      out_ += " {}";
      Trailing(s.span.end);
      last_end_ = s.span.end;
      return;
    }
    out_ += " {";
    Trailing(s.block_open.end);
    last_end_ = s.block_open.end;
    Block(s.block, close, indent + 1);
    out_ += "}";
    Trailing(s.span.end);
    last_end_ = s.span.end;
  }

  std::string Condition(const ast::Condition& c, bool needs_parens) {
    using Kind = ast::Condition::Kind;
    std::string text;
    if (c.kind == Kind::kOr || c.kind == Kind::kAnd) {
      const char* joiner = c.kind == Kind::kOr ? " or " : " and ";
      for (size_t i = 0; i < c.children.size(); ++i) {
        const ast::Condition& child = c.children[i];
        text += (i ? joiner : "") + Condition(child, child.kind == Kind::kOr && c.kind == Kind::kAnd);
      }
    } else {
      text = c.masked ? "(" + Word(c.arg) + " & " + Value(c.mask) + ")" : Word(c.arg);
      if (c.kind == Kind::kCompare) {
        text += " " + c.op + " " + Value(c.values[0]);
      } else {
        text += " in {";
        for (size_t i = 0; i < c.values.size(); ++i) text += (i ? ", " : "") + Value(c.values[i]);
        text += "}";
      }
    }
    return needs_parens || (c.parenthesized && c.kind != Kind::kCompare && c.kind != Kind::kIn)
               ? "(" + text + ")"
               : text;
  }

  std::string Value(const ast::ValueExpr& v) {
    std::string text;
    for (size_t i = 0; i < v.terms.size(); ++i) text += (i ? " | " : "") + Word(v.terms[i]);
    return text;
  }

  static std::string Word(const ast::Word& w) {
    if (w.kind != ast::WordKind::kString) return w.text;
    std::string out = "\"";
    for (char c : w.text) {
      if (c == '"' || c == '\\') out += '\\';
      if (c == '\n') {
        out += "\\n";
        continue;
      }
      if (c == '\t') {
        out += "\\t";
        continue;
      }
      out += c;
    }
    return out + "\"";
  }

  bool CommentBefore(uint32_t offset) const {
    return next_comment_ < file_.comments.size() && file_.comments[next_comment_].span.begin < offset;
  }

  // Emits, on their own lines, the comments that start before `offset`.
  void CommentsBefore(uint32_t offset, int indent, bool first_in_block = false) {
    while (CommentBefore(offset)) {
      const ast::Comment& c = file_.comments[next_comment_++];
      if (!first_in_block) BlankIfSource(c.span.begin);
      first_in_block = false;
      Indent(indent);
      out_ += CommentText(c) + "\n";
      last_end_ = c.span.end;
    }
  }

  // Appends the comment that directly follows `end` on the same source line
  // (only blanks between), then ends the line. A comment after further
  // words (`limits { memory 1GiB # about memory`) trails those words' own
  // statement, not the `{` before them.
  void Trailing(uint32_t end) {
    if (next_comment_ < file_.comments.size()) {
      const ast::Comment& c = file_.comments[next_comment_];
      const bool directly_after =
          c.span.begin >= end &&
          text_.find_first_not_of(" \t", end) == static_cast<size_t>(c.span.begin);
      if (directly_after) {
        out_ += "  " + CommentText(c);
        ++next_comment_;
      }
    }
    out_ += "\n";
  }

  std::string CommentText(const ast::Comment& c) const {
    std::string text = text_.substr(c.span.begin, c.span.size());
    while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.pop_back();
    return text;
  }

  // One blank line if the source had at least one between the last output and `begin`.
  void BlankIfSource(uint32_t begin) {
    if (begin <= last_end_ || out_.empty()) return;
    size_t newlines = std::count(text_.begin() + last_end_, text_.begin() + begin, '\n');
    if (newlines >= 2) Blank();
  }

  void Blank() {
    if (out_.size() >= 2 && out_.compare(out_.size() - 2, 2, "\n\n") == 0) return;
    if (out_.size() >= 2 && out_.compare(out_.size() - 2, 2, "{\n") == 0) return;
    if (!out_.empty()) out_ += "\n";
  }

  void Indent(int indent) { out_ += std::string(2 * std::max(indent, 0), ' '); }

  const ast::File& file_;
  const std::string& text_;
  std::string out_;
  size_t next_comment_ = 0;
  uint32_t last_end_ = 0;
};

}  // namespace

std::optional<std::string> FormatPolicy(const std::string& display_name, const std::string& text,
                                        Diagnostics& diagnostics) {
  auto source = std::make_shared<const Source>(display_name, text);
  std::optional<ast::File> file = ParsePolicy(source, ParseOptions{}, diagnostics);
  if (!file) return std::nullopt;
  return Formatter(*file).Run();
}

}  // namespace cocoon::frontend
