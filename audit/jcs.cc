// RFC 8785 (JCS) serialiser and canonical-line scanner. See jcs.h.
#include "audit/jcs.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "audit/events.h"

namespace cocoon::audit {
namespace {

constexpr int64_t kMaxSafeInteger = 9007199254740991;  // 2^53 - 1: exact in an IEEE double

// Length of the valid UTF-8 sequence at p (1..4), or 0 if invalid. Rejects
// overlongs, surrogates and code points above U+10FFFF (RFC 3629 table 3-7).
size_t Utf8SequenceLength(const unsigned char* p, size_t n, uint32_t* code_point) {
  unsigned char c = p[0];
  if (c < 0x80) { *code_point = c; return 1; }
  size_t len;
  uint32_t cp;
  unsigned char lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
  else if (c >= 0xE0 && c <= 0xEF) {
    len = 3; cp = c & 0x0F;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4; cp = c & 0x07;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (n < len) return 0;
  if (p[1] < lo || p[1] > hi) return 0;
  cp = (cp << 6) | (p[1] & 0x3F);
  for (size_t i = 2; i < len; ++i) {
    if ((p[i] & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (p[i] & 0x3F);
  }
  *code_point = cp;
  return len;
}

constexpr char kHex[] = "0123456789abcdef";

// JCS string form (RFC 8785 3.2.2.2): only '"', '\\' and controls are escaped;
// invalid UTF-8 becomes U+FFFD.
void AppendCanonicalString(std::string_view text, std::string& out) {
  out += '"';
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      size_t run = i + 1;
      while (run < n && p[run] >= 0x20 && p[run] < 0x80 && p[run] != '"' && p[run] != '\\') ++run;
      out.append(text.data() + i, run - i);
      i = run;
      continue;
    }
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 0xF];
      }
      ++i;
      continue;
    }
    uint32_t cp;
    size_t len = Utf8SequenceLength(p + i, n - i, &cp);
    if (len == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD REPLACEMENT CHARACTER
      ++i;
    } else {
      out.append(text.data() + i, len);
      i += len;
    }
  }
  out += '"';
}

// Keys compare by UTF-16 code units (RFC 8785 3.2.3). UTF-8 byte order equals
// code point order, which differs from UTF-16 order only for supplementary
// characters against U+E000..U+FFFF, so convert only when needed.
std::u16string ToUtf16(std::string_view utf8) {
  std::u16string out;
  const auto* p = reinterpret_cast<const unsigned char*>(utf8.data());
  size_t i = 0;
  while (i < utf8.size()) {
    uint32_t cp;
    size_t len = Utf8SequenceLength(p + i, utf8.size() - i, &cp);
    if (len == 0) { cp = 0xFFFD; len = 1; }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      out += static_cast<char16_t>(0xD800 + (cp >> 10));
      out += static_cast<char16_t>(0xDC00 + (cp & 0x3FF));
    } else {
      out += static_cast<char16_t>(cp);
    }
    i += len;
  }
  return out;
}

bool AllAscii(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; });
}

struct Serializer {
  NumberPolicy numbers;
  std::string& out;
  const nlohmann::json* mark;
  size_t* mark_begin;
  size_t* mark_end;
  const std::vector<Overlay>* overlays = nullptr;
  std::vector<SplicePoint>* splices = nullptr;

  Status Merged(const nlohmann::json::object_t& object, const Overlay& overlay);

  Status Value(const nlohmann::json& value);
  Status Object(const nlohmann::json& value);
  Status Number(const nlohmann::json& value);
};

Status Serializer::Object(const nlohmann::json& value) {
  const auto& object = value.get_ref<const nlohmann::json::object_t&>();
  if (overlays != nullptr) {
    for (const auto& overlay : *overlays)
      if (overlay.node == &value) return Merged(object, overlay);
  }
  bool ascii = std::all_of(object.begin(), object.end(), [](const auto& kv) { return AllAscii(kv.first); });
  out += '{';
  bool first = true;
  if (ascii) {  // std::map order is byte order, which is UTF-16 order for ASCII
    for (const auto& [key, member] : object) {
      if (!first) out += ',';
      first = false;
      AppendCanonicalString(key, out);
      out += ':';
      COCOON_RETURN_IF_ERROR(Value(member));
    }
  } else {
    std::vector<std::pair<std::u16string, const std::pair<const std::string, nlohmann::json>*>> sorted;
    for (const auto& kv : object) sorted.emplace_back(ToUtf16(kv.first), &kv);
    std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i + 1 < sorted.size(); ++i) {
      if (sorted[i].first == sorted[i + 1].first)
        return InvalidArgumentError("duplicate object key after UTF-8 sanitisation");
    }
    for (const auto& entry : sorted) {
      if (!first) out += ',';
      first = false;
      AppendCanonicalString(entry.second->first, out);
      out += ':';
      COCOON_RETURN_IF_ERROR(Value(entry.second->second));
    }
  }
  out += '}';
  return Status::Ok();
}

// Sorted merge of the object's members with the overlay's (overlay wins ties).
Status Serializer::Merged(const nlohmann::json::object_t& object, const Overlay& overlay) {
  out += '{';
  bool first = true;
  auto it = object.begin();
  size_t k = 0;
  const auto& extra = overlay.members;
  while (it != object.end() || k < extra.size()) {
    if (it != object.end() && !AllAscii(it->first)) return InternalError("overlay on an object with non-ASCII keys");
    bool take_extra = k < extra.size() && (it == object.end() || extra[k].key <= it->first);
    if (!first) out += ',';
    first = false;
    if (take_extra) {
      if (it != object.end() && extra[k].key == it->first) ++it;  // replaced
      AppendCanonicalString(extra[k].key, out);
      out += ':';
      if (extra[k].splice >= 0 && splices != nullptr)
        splices->push_back(SplicePoint{out.size() + extra[k].splice_offset, extra[k].splice});
      out += extra[k].text;
      ++k;
    } else {
      AppendCanonicalString(it->first, out);
      out += ':';
      COCOON_RETURN_IF_ERROR(Value(it->second));
      ++it;
    }
  }
  out += '}';
  return Status::Ok();
}

Status Serializer::Number(const nlohmann::json& value) {
  char buffer[32];
  if (value.is_number_integer() || value.is_number_unsigned()) {
    bool is_unsigned = value.is_number_unsigned();
    uint64_t u = is_unsigned ? value.get<uint64_t>() : 0;
    int64_t s = is_unsigned ? 0 : value.get<int64_t>();
    bool safe = is_unsigned ? u <= static_cast<uint64_t>(kMaxSafeInteger)
                            : (s <= kMaxSafeInteger && s >= -kMaxSafeInteger);
    if (safe) {
      auto result = is_unsigned ? std::to_chars(buffer, buffer + sizeof buffer, u)
                                : std::to_chars(buffer, buffer + sizeof buffer, s);
      out.append(buffer, result.ptr);
      return Status::Ok();
    }
    if (numbers == NumberPolicy::kIntegersOnly)
      return InvalidArgumentError("integer outside +-(2^53-1) cannot be represented canonically");
    out += FormatEcmaScriptNumber(is_unsigned ? static_cast<double>(u) : static_cast<double>(s));
    return Status::Ok();
  }
  if (numbers == NumberPolicy::kIntegersOnly)
    return InvalidArgumentError("floating-point number in an audit event (integers only)");
  double d = value.get<double>();
  if (!std::isfinite(d)) return InvalidArgumentError("NaN or Infinity has no JSON form");
  out += FormatEcmaScriptNumber(d);
  return Status::Ok();
}

Status Serializer::Value(const nlohmann::json& value) {
  size_t begin = out.size();
  switch (value.type()) {
    case nlohmann::json::value_t::object: COCOON_RETURN_IF_ERROR(Object(value)); break;
    case nlohmann::json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& element : value) {
        if (!first) out += ',';
        first = false;
        COCOON_RETURN_IF_ERROR(Value(element));
      }
      out += ']';
      break;
    }
    case nlohmann::json::value_t::string:
      AppendCanonicalString(value.get_ref<const std::string&>(), out);
      break;
    case nlohmann::json::value_t::boolean: out += value.get<bool>() ? "true" : "false"; break;
    case nlohmann::json::value_t::null: out += "null"; break;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: COCOON_RETURN_IF_ERROR(Number(value)); break;
    default: return InvalidArgumentError("binary or discarded JSON value has no canonical form");
  }
  if (&value == mark) {
    if (mark_begin) *mark_begin = begin;
    if (mark_end) *mark_end = out.size();
  }
  return Status::Ok();
}

}  // namespace

void AppendJcsString(std::string_view text, std::string& out) { AppendCanonicalString(text, out); }

std::string SanitizeUtf8(std::string_view bytes, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(bytes.size(), max_bytes));
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t i = 0;
  while (i < bytes.size()) {
    uint32_t cp;
    size_t len = Utf8SequenceLength(p + i, bytes.size() - i, &cp);
    std::string_view piece = len ? bytes.substr(i, len) : std::string_view("\xEF\xBF\xBD");
    if (out.size() + piece.size() > max_bytes) break;  // never cut a sequence in half
    out += piece;
    i += len ? len : 1;
  }
  return out;
}

std::string FormatEcmaScriptNumber(double value) {
  if (value == 0) return "0";  // also -0 (ES: ToString(-0) is "0")
  if (value < 0) return "-" + FormatEcmaScriptNumber(-value);
  // Shortest round-trip digits, as ES requires ("k is as small as possible").
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value, std::chars_format::scientific);
  std::string_view sci(buffer, result.ptr - buffer);
  size_t e_pos = sci.find('e');
  std::string digits;
  for (char c : sci.substr(0, e_pos)) if (c != '.') digits += c;
  int exponent = 0;
  std::from_chars(sci.data() + e_pos + 1 + (sci[e_pos + 1] == '+'), sci.data() + sci.size(), exponent);
  int k = static_cast<int>(digits.size());
  int n = exponent + 1;  // value = 0.digits * 10^n
  if (k <= n && n <= 21) return digits + std::string(n - k, '0');
  if (0 < n && n <= 21) return digits.substr(0, n) + "." + digits.substr(n);
  if (-6 < n && n <= 0) return "0." + std::string(-n, '0') + digits;
  std::string mantissa = k == 1 ? digits : digits.substr(0, 1) + "." + digits.substr(1);
  int e = n - 1;
  return mantissa + "e" + (e < 0 ? "-" : "+") + std::to_string(std::abs(e));
}

Status CanonicalizeTo(const nlohmann::json& value, NumberPolicy numbers, std::string& out,
                      const nlohmann::json* mark, size_t* mark_begin, size_t* mark_end) {
  Serializer serializer{numbers, out, mark, mark_begin, mark_end};
  return serializer.Value(value);
}

Status CanonicalizeWithOverlays(const nlohmann::json& value, const std::vector<Overlay>& overlays,
                                std::string& out, std::vector<SplicePoint>* splices) {
  Serializer serializer{NumberPolicy::kIntegersOnly, out, nullptr, nullptr, nullptr, &overlays, splices};
  return serializer.Value(value);
}

Result<std::string> Canonicalize(const nlohmann::json& value, NumberPolicy numbers) {
  std::string out;
  COCOON_RETURN_IF_ERROR(CanonicalizeTo(value, numbers, out));
  return out;
}

}  // namespace cocoon::audit
