// The canonical-line scanner: accepts exactly the bytes Canonicalize() would
// produce for an object with ASCII keys and integer numbers, in one pass and
// without building a DOM. See jcs.h.
#include <cstdint>
#include <cstring>
#include <string>

#include "audit/jcs.h"

namespace cocoon::audit {
namespace {

enum class Where { kOther, kTop, kCocoon, kIntegrity };

// True when none of the 8 bytes at p is a control (< 0x20), non-ASCII
// (>= 0x80), '"' or '\\': the bytes a JCS string holds literally with no
// further check. SWAR zero-byte test (Hacker's Delight 6-1): for bytes below
// 0x80, (x - 0x01..) & ~x & 0x80.. is non-zero iff some byte of x is zero, and
// x ^ c has a zero byte iff x holds c; "some byte < 0x20" is the same test
// with 0x20 subtracted. It can only answer "no plain word" too often when a
// byte >= 0x80 is present, and such words are rejected here anyway.
inline bool PlainAsciiWord(const unsigned char* p) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHigh = 0x8080808080808080ULL;
  uint64_t x;
  std::memcpy(&x, p, sizeof x);
  if ((x & kHigh) != 0) return false;
  uint64_t quote = x ^ (kOnes * '"');
  uint64_t backslash = x ^ (kOnes * '\\');
  uint64_t special = ((x - kOnes * 0x20) & ~x) | ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash);
  return (special & kHigh) == 0;
}

// PlainAsciiWord without DEL (0x7F) either: the bytes a key may hold.
inline bool PlainKeyWord(const unsigned char* p) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  uint64_t x;
  std::memcpy(&x, p, sizeof x);
  uint64_t del = x ^ (kOnes * 0x7F);
  return PlainAsciiWord(p) && (((del - kOnes) & ~del & (kOnes * 0x80)) == 0);
}

// Byte order of two short keys, inline (keys are a few bytes; a memcmp call
// per member showed in the verifier's profile).
inline bool KeyLess(std::string_view a, std::string_view b) {
  size_t n = a.size() < b.size() ? a.size() : b.size();
  for (size_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[i]);
  }
  return a.size() < b.size();
}

class Scanner {
 public:
  Scanner(std::string_view text, ScanLimits limits, ScannedLine& result)
      : s_(text), limits_(limits), result_(result) {}

  Status Run() {
    result_.integrity.clear();  // keeps its capacity: a reused ScannedLine allocates nothing
    result_.has_integrity = false;
    if (s_.empty() || s_[0] != '{') return DataLossError("not canonical JCS at byte 0: a line must be one JSON object");
    result_.integrity.reserve(12);  // at most one allocation per line, not one per growth step
    if (!Object(0, Where::kTop)) return std::move(error_);
    if (pos_ != s_.size()) {
      Fail("trailing bytes after the object (not canonical)");
      return std::move(error_);
    }
    return Status::Ok();
  }

 private:
  // The scanning functions return false after Fail() recorded why: a Status
  // built and destroyed per value was a visible share of the scan.
  bool Fail(std::string_view why) {
    error_ = DataLossError("not canonical JCS at byte " + std::to_string(pos_) + ": " + std::string(why));
    return false;
  }
  bool At(char c) const { return pos_ < s_.size() && s_[pos_] == c; }

  // Keys: printable ASCII without escapes, strictly increasing (which is the
  // UTF-16 order JCS wants, for ASCII).
  bool Key(std::string_view* key) {
    if (!At('"')) return Fail("expected a key string");
    // A local index (not pos_) so the loop keeps it in a register.
    const auto* p = reinterpret_cast<const unsigned char*>(s_.data());
    const size_t size = s_.size();
    size_t begin = pos_ + 1, i = begin;
    while (i + 8 <= size && PlainKeyWord(p + i)) i += 8;
    while (i < size && p[i] != '"') {
      unsigned char c = p[i];
      if (c < 0x20 || c > 0x7E || c == '\\') {
        pos_ = i;
        return Fail("keys must be plain printable ASCII");
      }
      ++i;
    }
    pos_ = i;
    if (pos_ >= size) return Fail("unterminated key");
    *key = s_.substr(begin, pos_ - begin);
    ++pos_;
    return true;
  }

  bool Object(size_t depth, Where where) {
    if (depth >= limits_.max_depth) return Fail("nesting too deep");
    ++pos_;  // '{'
    if (At('}')) { ++pos_; return true; }
    std::string_view previous;
    bool first = true;
    while (true) {
      size_t member_begin = pos_;
      std::string_view key;
      if (!Key(&key)) return false;
      if (!first && !KeyLess(previous, key)) return Fail("object keys not in sorted order or duplicated");
      first = false;
      previous = key;
      if (!At(':')) return Fail("expected ':'");
      ++pos_;
      Where child = Where::kOther;
      if (where == Where::kTop && key == "cocoon") child = Where::kCocoon;
      if (where == Where::kCocoon && key == "integrity") child = Where::kIntegrity;
      size_t value_begin = pos_;
      if (child == Where::kIntegrity) {
        if (!At('{')) return Fail("cocoon.integrity must be an object");
        result_.has_integrity = true;
      }
      if (where == Where::kIntegrity && At('{')) return Fail("cocoon.integrity holds flat scalars only");
      if (where == Where::kIntegrity && At('[')) return Fail("cocoon.integrity holds flat scalars only");
      if (!Value(depth + 1, child)) return false;
      if (where == Where::kIntegrity) {
        result_.integrity.push_back(IntegrityMember{key, s_.substr(value_begin, pos_ - value_begin),
                                                    member_begin, pos_, false});
      }
      if (At(',')) {
        ++pos_;
        if (where == Where::kIntegrity) {
          result_.integrity.back().member_end = pos_;
          result_.integrity.back().followed_by_comma = true;
        }
        continue;
      }
      if (At('}')) { ++pos_; return true; }
      return Fail("expected ',' or '}'");
    }
  }

  bool Array(size_t depth) {
    if (depth >= limits_.max_depth) return Fail("nesting too deep");
    ++pos_;  // '['
    if (At(']')) { ++pos_; return true; }
    while (true) {
      if (!Value(depth + 1, Where::kOther)) return false;
      if (At(',')) { ++pos_; continue; }
      if (At(']')) { ++pos_; return true; }
      return Fail("expected ',' or ']'");
    }
  }

  bool Value(size_t depth, Where where) {
    if (pos_ >= s_.size()) return Fail("unexpected end of line");
    char c = s_[pos_];
    if (c == '{') return Object(depth, where);
    if (c == '[') return Array(depth);
    if (c == '"') return String();
    if (c == '-' || (c >= '0' && c <= '9')) return Integer();
    for (std::string_view literal : {"true", "false", "null"}) {
      if (s_.compare(pos_, literal.size(), literal) == 0) {
        pos_ += literal.size();
        return true;
      }
    }
    return Fail("unexpected character (whitespace is not canonical)");
  }

  // -?(0|[1-9][0-9]*) within +-(2^53-1); no fraction, exponent or "-0".
  bool Integer() {
    bool negative = At('-');
    if (negative) ++pos_;
    size_t begin = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') ++pos_;
    size_t digits = pos_ - begin;
    if (digits == 0) return Fail("bad number");
    if (s_[begin] == '0' && (digits > 1 || negative)) return Fail("leading zero or -0 (not canonical)");
    if (At('.') || At('e') || At('E')) return Fail("floating-point number (integers only)");
    if (digits > 16) return Fail("integer beyond 2^53-1");
    uint64_t value = 0;
    for (size_t i = begin; i < pos_; ++i) value = value * 10 + static_cast<uint64_t>(s_[i] - '0');
    if (value > 9007199254740991ULL) return Fail("integer beyond 2^53-1");
    return true;
  }

  // JCS string rules: literal UTF-8 for everything but '"', '\\' and controls;
  // controls use \b \f \n \r \t or \u00xx (lower-case hex).
  bool String() {
    ++pos_;  // '"'
    const auto* p = reinterpret_cast<const unsigned char*>(s_.data());
    const size_t size = s_.size();
    while (pos_ < size) {
      // Fast path: the bulk of every line is plain printable ASCII. Eight
      // bytes are skipped at once only when none of them needs a rule below
      // (PlainAsciiWord is exact); any other byte goes through the byte loop.
      size_t i = pos_;  // local: a member index is stored back on every byte
      while (i + 8 <= size && PlainAsciiWord(p + i)) i += 8;
      while (i < size && p[i] >= 0x20 && p[i] < 0x80 && p[i] != '"' && p[i] != '\\') ++i;
      pos_ = i;
      if (pos_ >= size) break;
      unsigned char c = p[pos_];
      if (c == '"') { ++pos_; return true; }
      if (c < 0x20) return Fail("raw control character in a string");
      if (c == '\\') {
        if (!Escape()) return false;
        continue;
      }
      if (c < 0x80) { ++pos_; continue; }
      if (!Utf8(p)) return false;
    }
    return Fail("unterminated string");
  }

  bool Escape() {
    if (pos_ + 1 >= s_.size()) return Fail("unterminated escape");
    char e = s_[pos_ + 1];
    if (std::strchr("\"\\bfnrt", e) != nullptr && e != '\0') { pos_ += 2; return true; }
    if (e != 'u' || pos_ + 6 > s_.size()) return Fail("escape not used by JCS");
    std::string_view hex = s_.substr(pos_ + 2, 4);
    auto is_lower_hex = [](char h) { return (h >= '0' && h <= '9') || (h >= 'a' && h <= 'f'); };
    if (hex[0] != '0' || hex[1] != '0' || !is_lower_hex(hex[2]) || !is_lower_hex(hex[3]))
      return Fail("\\u escape of a non-control character (JCS writes it literally)");
    int value = std::stoi(std::string(hex.substr(2)), nullptr, 16);
    if (value >= 0x20 || value == '\b' || value == '\f' || value == '\n' || value == '\r' || value == '\t')
      return Fail("\\u escape where JCS uses a literal or a short escape");
    pos_ += 6;
    return true;
  }

  bool Utf8(const unsigned char* p) {
    unsigned char c = p[pos_];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
    else return Fail("invalid UTF-8");
    if (pos_ + len > s_.size() || p[pos_ + 1] < lo || p[pos_ + 1] > hi) return Fail("invalid UTF-8");
    for (size_t i = 2; i < len; ++i)
      if ((p[pos_ + i] & 0xC0) != 0x80) return Fail("invalid UTF-8");
    pos_ += len;
    return true;
  }

  std::string_view s_;
  ScanLimits limits_;
  size_t pos_ = 0;
  ScannedLine& result_;
  Status error_;
};

}  // namespace

Result<ScannedLine> ScanCanonicalLine(std::string_view line, ScanLimits limits) {
  ScannedLine result;
  Scanner scanner(line, limits, result);
  COCOON_RETURN_IF_ERROR(scanner.Run());
  return result;
}

Status ScanCanonicalLine(std::string_view line, ScannedLine& result, ScanLimits limits) {
  Scanner scanner(line, limits, result);
  return scanner.Run();
}

Result<size_t> SkipJsonValue(std::string_view text, size_t pos) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = pos; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') {
        in_string = false;
        if (depth == 0) return i + 1;
      }
      continue;
    }
    if (depth == 0 && (c == ',' || c == '}' || c == ']')) return i;  // end of a scalar
    if (c == '"') in_string = true;
    else if (c == '{' || c == '[') ++depth;
    else if (c == '}' || c == ']') {
      if (depth == 0) return DataLossError("unbalanced JSON");
      if (--depth == 0) return i + 1;
    }
  }
  return DataLossError("unterminated JSON value");
}

}  // namespace cocoon::audit
