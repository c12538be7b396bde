// The canonical-line scanner: accepts exactly the bytes Canonicalize() would
// produce for an object with ASCII keys and integer numbers, in one pass and
// without building a DOM. See jcs.h.
#include <cstdint>
#include <cstring>
#include <string>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "audit/jcs.h"

namespace cocoon::audit {
namespace {

enum class Where { kOther, kTop, kCocoon, kIntegrity };

// Plain bytes are the ones a JCS string holds literally with no further
// check: printable ASCII other than '"' and '\\' (keys: not DEL either).
// SkipPlain returns the index of the first byte at or after i that is not
// plain (or `size`), 16 bytes at a time with SSE2 (x86-64 baseline; a SWAR
// word loop elsewhere). One signed compare flags both controls (< 0x20) and
// non-ASCII (>= 0x80, negative as int8), so the first special byte is found
// with one count-trailing-zeros instead of a byte loop after each word.
enum class Plain { kString, kKey };

#if defined(__SSE2__)
template <Plain kind>
inline size_t SkipPlain(const unsigned char* p, size_t i, size_t size) {
  const __m128i quote = _mm_set1_epi8('"');
  const __m128i backslash = _mm_set1_epi8('\\');
  const __m128i space = _mm_set1_epi8(0x20);
  const __m128i del = _mm_set1_epi8(0x7F);
  for (; i + 16 <= size; i += 16) {
    __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    __m128i special = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                                   _mm_cmplt_epi8(v, space));
    if constexpr (kind == Plain::kKey) special = _mm_or_si128(special, _mm_cmpeq_epi8(v, del));
    unsigned mask = static_cast<unsigned>(_mm_movemask_epi8(special));
    if (mask != 0) return i + static_cast<size_t>(__builtin_ctz(mask));
  }
  for (; i < size; ++i) {
    unsigned char c = p[i];
    if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || (kind == Plain::kKey && c == 0x7F)) return i;
  }
  return size;
}
#else
// SWAR (Hacker's Delight 6-1): (x - 0x01..) & ~x & 0x80.. flags the bytes of
// x that are zero; borrows only run upwards from a true hit, so the lowest
// flagged byte is exact. x ^ c is zero where x holds c; "< 0x20" subtracts 0x20.
template <Plain kind>
inline size_t SkipPlain(const unsigned char* p, size_t i, size_t size) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHigh = 0x8080808080808080ULL;
  for (; i + 8 <= size; i += 8) {
    uint64_t x;
    std::memcpy(&x, p + i, sizeof x);
    uint64_t quote = x ^ (kOnes * '"');
    uint64_t backslash = x ^ (kOnes * '\\');
    uint64_t special = ((x - kOnes * 0x20) & ~x) | ((quote - kOnes) & ~quote) | ((backslash - kOnes) & ~backslash) | x;
    if constexpr (kind == Plain::kKey) {
      uint64_t d = x ^ (kOnes * 0x7F);
      special |= (d - kOnes) & ~d;
    }
    special &= kHigh;
    if (special != 0) {
      // Little-endian lane order; on big-endian, fall back to the byte loop.
      if constexpr (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__) return i + static_cast<size_t>(__builtin_ctzll(special)) / 8;
      break;
    }
  }
  for (; i < size; ++i) {
    unsigned char c = p[i];
    if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || (kind == Plain::kKey && c == 0x7F)) return i;
  }
  return size;
}
#endif

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
    size_t begin = pos_ + 1;
    size_t i = SkipPlain<Plain::kKey>(p, begin, size);
    pos_ = i;
    if (i >= size) return Fail("unterminated key");
    if (p[i] != '"') return Fail("keys must be plain printable ASCII");
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
    std::string_view literal = c == 't' ? "true" : c == 'f' ? "false" : c == 'n' ? "null" : "";
    if (!literal.empty() && s_.substr(pos_, literal.size()) == literal) {
      pos_ += literal.size();
      return true;
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
      // Fast path: the bulk of every line is plain printable ASCII, skipped
      // up to the first byte that needs one of the rules below.
      pos_ = SkipPlain<Plain::kString>(p, pos_, size);
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
