// The fast lexer (see lexer.h). At each position every lexer rule of
// grammar/Cocoon.g4 is measured for the longest prefix it matches; the longest
// wins, and a tie goes to the rule written first in the grammar, as in ANTLR:
//   keywords, punctuation, ARG, NUMBER, QUANTITY, HOSTPORT, GROUP, IDENT,
//   PATH, STRING, COMMENT, WS (skipped), ERROR_CHAR.
// Three rules can scan far and then fail (HOSTPORT without its ':', the
// relative PATH form without a '/', an unterminated STRING); the runs they
// scan are remembered, so hostile input stays linear (ANTLR's lexer rescans
// them from every position, which is quadratic).
#include "compiler/frontend/lexer.h"

#include <algorithm>

namespace cocoon::frontend {
namespace {

bool IsDigit(unsigned char c) { return c >= '0' && c <= '9'; }
bool IsLetter(unsigned char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsAlnum(unsigned char c) { return IsDigit(c) || IsLetter(c); }
bool IsHex(unsigned char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
// fragment HOSTCHAR : [a-zA-Z0-9_\-.]   (also IDENT's tail)
bool IsHostChar(unsigned char c) { return IsAlnum(c) || c == '_' || c == '-' || c == '.'; }
// fragment PATHCHAR : [a-zA-Z0-9_\-.+@%=,~:/]
bool IsPathChar(unsigned char c) {
  return IsHostChar(c) || c == '+' || c == '@' || c == '%' || c == '=' || c == ',' || c == '~' || c == ':' ||
         c == '/';
}
bool IsSpace(unsigned char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// A maximal run of one character class, remembered so that every position
// inside it finds the run's end in O(1).
struct Run {
  size_t begin = 0, end = 0;
  size_t last_slash = 0;  // PATHCHAR runs: one past the last '/', or 0
};

class Lexer {
 public:
  explicit Lexer(std::string_view text) : s_(text) {}

  std::vector<LexToken> Lex() {
    std::vector<LexToken> out;
    out.reserve(s_.size() / 5 + 16);
    size_t i = 0;
    while (i < s_.size()) {
      if (IsSpace(At(i))) {  // WS -> skip (no other rule starts with a space)
        while (i < s_.size() && IsSpace(At(i))) ++i;
        continue;
      }
      auto [kind, length] = Longest(i);
      out.push_back({kind, static_cast<uint32_t>(i), static_cast<uint32_t>(i + length)});
      i += length;
    }
    return out;
  }

 private:
  unsigned char At(size_t i) const { return i < s_.size() ? static_cast<unsigned char>(s_[i]) : 0; }

  template <typename Pred>
  size_t Count(size_t i, Pred pred) const {
    size_t j = i;
    while (j < s_.size() && pred(At(j))) ++j;
    return j - i;
  }

  std::pair<LexKind, size_t> Longest(size_t i) {
    // In grammar order; a later rule must be strictly longer to win.
    LexKind kind = LexKind::kErrorChar;
    size_t best = 0;
    auto offer = [&](LexKind k, size_t length) {
      if (length > best) {
        best = length;
        kind = k;
      }
    };
    Punctuation(i, offer);
    offer(LexKind::kArg, Arg(i));
    offer(LexKind::kNumber, Number(i));
    offer(LexKind::kQuantity, Quantity(i));
    offer(LexKind::kHostPort, HostPort(i));
    offer(LexKind::kGroup, Group(i));
    offer(LexKind::kIdent, IsLetter(At(i)) || At(i) == '_' ? Count(i + 1, IsHostChar) + 1 : 0);
    offer(LexKind::kPath, Path(i));
    offer(LexKind::kString, String(i));
    offer(LexKind::kComment, At(i) == '#' ? Count(i, [](unsigned char c) { return c != '\r' && c != '\n'; }) : 0);
    if (best == 0) return {LexKind::kErrorChar, CodePointLength(i)};
    return {kind, best};
  }

  template <typename Offer>
  void Punctuation(size_t i, Offer& offer) const {
    unsigned char c = At(i), n = At(i + 1);
    switch (c) {
      case '{': return offer(LexKind::kLBrace, 1);
      case '}': return offer(LexKind::kRBrace, 1);
      case '(': return offer(LexKind::kLParen, 1);
      case ')': return offer(LexKind::kRParen, 1);
      case ',': return offer(LexKind::kComma, 1);
      case '&': return offer(LexKind::kAmp, 1);
      case '|': return offer(LexKind::kPipe, 1);
      case '=': return n == '=' ? offer(LexKind::kEq, 2) : void();
      case '!': return n == '=' ? offer(LexKind::kNe, 2) : void();
      case '<': return n == '=' ? offer(LexKind::kLe, 2) : offer(LexKind::kLt, 1);
      case '>': return n == '=' ? offer(LexKind::kGe, 2) : offer(LexKind::kGt, 1);
      default: return;
    }
  }

  // ARG : 'arg' [0-9]+
  size_t Arg(size_t i) const {
    if (s_.compare(i, 3, "arg") != 0) return 0;
    size_t digits = Count(i + 3, IsDigit);
    return digits ? 3 + digits : 0;
  }

  // NUMBER : [0-9]+ | '0' [xX] [0-9a-fA-F]+
  size_t Number(size_t i) const {
    size_t digits = Count(i, IsDigit);
    size_t hex = 0;
    if (At(i) == '0' && (At(i + 1) == 'x' || At(i + 1) == 'X')) {
      size_t h = Count(i + 2, IsHex);
      hex = h ? 2 + h : 0;
    }
    return std::max(digits, hex);
  }

  // QUANTITY : [0-9]+ ('.' [0-9]+)? [a-zA-Z%]+
  size_t Quantity(size_t i) const {
    size_t digits = Count(i, IsDigit);
    if (digits == 0) return 0;
    auto unit = [&](size_t at) { return Count(at, [](unsigned char c) { return IsLetter(c) || c == '%'; }); };
    size_t j = i + digits;
    if (At(j) == '.') {
      size_t fraction = Count(j + 1, IsDigit);
      if (fraction > 0) {
        size_t u = unit(j + 1 + fraction);
        if (u > 0) return digits + 1 + fraction + u;
      }
    }
    size_t u = unit(j);
    return u ? digits + u : 0;
  }

  // GROUP : '@' [a-zA-Z0-9_\-]+
  size_t Group(size_t i) const {
    if (At(i) != '@') return 0;
    size_t name = Count(i + 1, [](unsigned char c) { return IsAlnum(c) || c == '_' || c == '-'; });
    return name ? 1 + name : 0;
  }

  // HOSTPORT : (HOSTCHAR+ | '[' [0-9a-fA-F:.]+ ']') ':' [0-9a-zA-Z]+
  size_t HostPort(size_t i) {
    size_t host_end = 0;
    if (IsHostChar(At(i))) {
      host_end = RunEnd(host_run_, i, IsHostChar, false);
    } else if (At(i) == '[') {
      size_t inside = Count(i + 1, [](unsigned char c) { return IsHex(c) || c == ':' || c == '.'; });
      if (inside == 0 || At(i + 1 + inside) != ']') return 0;
      host_end = i + 2 + inside;
    } else {
      return 0;
    }
    if (At(host_end) != ':') return 0;
    size_t port = Count(host_end + 1, IsAlnum);
    return port ? host_end + 1 + port - i : 0;
  }

  // PATH : '/' PATHCHAR* | ('.' | '~') PATHCHAR* | [a-zA-Z0-9_] PATHCHAR* '/' PATHCHAR*
  size_t Path(size_t i) {
    unsigned char c = At(i);
    bool leading = c == '/' || c == '.' || c == '~';
    bool relative = IsAlnum(c) || c == '_';
    if (!leading && !relative) return 0;
    size_t end = RunEnd(path_run_, i + 1, IsPathChar, true);
    if (leading) return end - i;
    // The relative form needs a '/' after its first character.
    return path_run_.last_slash > i + 1 ? end - i : 0;
  }

  // STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* '"'
  size_t String(size_t i) {
    if (At(i) != '"') return 0;
    // A '"' inside a failed scan fails the same way: from there the scan
    // follows the same escapes to the same line end (see the file comment).
    if (i < string_fail_end_) return 0;
    size_t j = i + 1;
    while (j < s_.size()) {
      unsigned char c = At(j);
      if (c == '"') return j + 1 - i;
      if (c == '\r' || c == '\n') break;
      if (c == '\\') {
        if (j + 1 >= s_.size() || At(j + 1) == '\r' || At(j + 1) == '\n') break;
        j += 2;
      } else {
        ++j;
      }
    }
    string_fail_end_ = j;
    return 0;
  }

  // The end of the maximal run of `pred` characters starting at `i`.
  template <typename Pred>
  size_t RunEnd(Run& run, size_t i, Pred pred, bool track_slash) {
    if (i >= run.begin && i < run.end) return run.end;
    run = Run{i, i, 0};
    while (run.end < s_.size() && pred(At(run.end))) {
      if (track_slash && At(run.end) == '/') run.last_slash = run.end + 1;
      ++run.end;
    }
    return run.end;
  }

  // ERROR_CHAR : .   (one code point; the text is valid UTF-8)
  size_t CodePointLength(size_t i) const {
    unsigned char c = At(i);
    size_t length = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : 4;
    return std::min(length, s_.size() - i);
  }

  std::string_view s_;
  Run host_run_, path_run_;
  size_t string_fail_end_ = 0;
};

}  // namespace

std::vector<LexToken> LexPolicy(std::string_view text) { return Lexer(text).Lex(); }

}  // namespace cocoon::frontend
