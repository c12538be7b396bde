// A small S-expression reader for validating generated SBPL: atoms, "strings"
// (with \" and \\ escapes), lists, and ';' comments. Returns an error text
// instead of a tree for anything unbalanced or unterminated.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace cocoon::testing {

struct SExpr {
  enum class Kind { kAtom, kString, kList } kind = Kind::kAtom;
  std::string text;  // atom or decoded string
  std::vector<SExpr> items;
};

class SExprReader {
 public:
  explicit SExprReader(std::string_view in) : in_(in) {}

  // Every top-level form, or an error message in `error`.
  std::vector<SExpr> ReadAll(std::string& error) {
    std::vector<SExpr> out;
    while (true) {
      SkipSpace();
      if (pos_ >= in_.size()) return out;
      SExpr expr;
      if (!Read(expr, error, 0)) return {};
      out.push_back(std::move(expr));
    }
  }

 private:
  void SkipSpace() {
    while (pos_ < in_.size()) {
      if (in_[pos_] == ';') {
        while (pos_ < in_.size() && in_[pos_] != '\n') ++pos_;
      } else if (isspace(static_cast<unsigned char>(in_[pos_]))) {
        ++pos_;
      } else {
        return;
      }
    }
  }

  bool Read(SExpr& out, std::string& error, int depth) {
    if (depth > 64) return Fail(error, "nesting too deep");
    SkipSpace();
    if (pos_ >= in_.size()) return Fail(error, "unexpected end of input");
    char c = in_[pos_];
    if (c == ')') return Fail(error, "unbalanced ')'");
    if (c == '(') {
      ++pos_;
      out.kind = SExpr::Kind::kList;
      while (true) {
        SkipSpace();
        if (pos_ >= in_.size()) return Fail(error, "unbalanced '(': missing ')'");
        if (in_[pos_] == ')') {
          ++pos_;
          return true;
        }
        SExpr item;
        if (!Read(item, error, depth + 1)) return false;
        out.items.push_back(std::move(item));
      }
    }
    if (c == '"') {
      ++pos_;
      out.kind = SExpr::Kind::kString;
      while (pos_ < in_.size() && in_[pos_] != '"') {
        if (in_[pos_] == '\\') {
          if (++pos_ >= in_.size()) break;
        }
        if (in_[pos_] == '\n') return Fail(error, "newline inside a string");
        out.text += in_[pos_++];
      }
      if (pos_ >= in_.size()) return Fail(error, "unterminated string");
      ++pos_;
      return true;
    }
    out.kind = SExpr::Kind::kAtom;
    while (pos_ < in_.size() && !isspace(static_cast<unsigned char>(in_[pos_])) && in_[pos_] != '(' &&
           in_[pos_] != ')' && in_[pos_] != '"' && in_[pos_] != ';') {
      out.text += in_[pos_++];
    }
    return true;
  }

  bool Fail(std::string& error, std::string what) {
    error = what + " at byte " + std::to_string(pos_);
    return false;
  }

  std::string_view in_;
  size_t pos_ = 0;
};

}  // namespace cocoon::testing
