#include "cli/mcp/json_rpc.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>

namespace cocoon::mcp {
namespace {

using nlohmann::json;

// Deepest [ / { nesting outside strings. nlohmann's recursive parser would
// otherwise recurse once per level of a hostile "[[[[...": refuse before parsing.
size_t NestingDepth(std::string_view text) {
  size_t depth = 0, max_depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') max_depth = std::max(max_depth, ++depth);
    else if ((c == ']' || c == '}') && depth > 0) --depth;
  }
  return max_depth;
}

Message Invalid(RequestId id, int code, std::string message) {
  Message m;
  m.kind = MessageKind::kInvalid;
  m.id = IsValidId(id.value()) ? std::move(id) : RequestId();
  m.error_code = code;
  m.error_message = std::move(message);
  return m;
}

// The text of each message's top-level "id" when nlohmann reads it as a
// double (RequestId), by the message's index in ParsedLine::values: the
// line's object is 0, a batch's elements 0, 1, ... (non-objects counted).
class FloatIdTokens : public nlohmann::json_sax<json> {
 public:
  explicit FloatIdTokens(bool batch) : message_depth_(batch ? 2 : 1) {}
  std::map<size_t, std::string> tokens;

  bool null() override { return Scalar(); }
  bool boolean(bool) override { return Scalar(); }
  bool number_integer(number_integer_t) override { return Scalar(); }
  bool number_unsigned(number_unsigned_t) override { return Scalar(); }
  bool number_float(number_float_t, const string_t& token) override {
    if (depth_ == message_depth_ && key_ == "id") tokens[element_] = token;
    return Scalar();
  }
  bool string(string_t&) override { return Scalar(); }
  bool binary(binary_t&) override { return Scalar(); }
  bool start_object(std::size_t) override { return Open(); }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override { return Open(); }
  bool end_array() override { return Close(); }
  bool key(string_t& value) override {
    if (depth_ == message_depth_) key_ = value;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  // A value starts: in a batch, one at depth 1 is the next element.
  void Value() {
    if (message_depth_ == 2 && depth_ == 1) ++element_;
    if (depth_ == message_depth_) key_.clear();
  }
  bool Scalar() {
    Value();
    return true;
  }
  bool Open() {
    Value();
    ++depth_;
    return true;
  }
  bool Close() {
    --depth_;
    return true;
  }
  const int message_depth_;
  int depth_ = 0;
  size_t element_ = message_depth_ == 2 ? SIZE_MAX : 0;  // the first element wraps it to 0
  std::string key_;
};

std::string Dump(const json& value) {
  // replace: a stray invalid byte must not turn a response into an exception.
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Length of the valid UTF-8 sequence at s[i], or 0 when it is invalid
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  uint32_t cp = 0;
  if ((c & 0xE0) == 0xC0) { n = 2; cp = c & 0x1F; }
  else if ((c & 0xF0) == 0xE0) { n = 3; cp = c & 0x0F; }
  else if ((c & 0xF8) == 0xF0) { n = 4; cp = c & 0x07; }
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr uint32_t kMin[] = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

}  // namespace

namespace {

// Whether `token` is exactly one JSON number (RFC 8259 section 6): only such
// text is echoed as the id. A token read some other way (an oversized
// line's scan, where a NUL ends nlohmann's input early) may carry bytes after
// the number that would make the answer invalid JSON.
bool IsJsonNumberToken(std::string_view token) {
  size_t i = 0;
  auto digits = [&] {
    const size_t start = i;
    while (i < token.size() && token[i] >= '0' && token[i] <= '9') ++i;
    return i > start;
  };
  if (i < token.size() && token[i] == '-') ++i;
  if (i < token.size() && token[i] == '0') {
    ++i;
  } else if (!digits()) {
    return false;
  }
  if (i < token.size() && token[i] == '.') {
    ++i;
    if (!digits()) return false;
  }
  if (i < token.size() && (token[i] == 'e' || token[i] == 'E')) {
    ++i;
    if (i < token.size() && (token[i] == '+' || token[i] == '-')) ++i;
    if (!digits()) return false;
  }
  return i == token.size();
}

}  // namespace

RequestId::RequestId(json value, std::string_view token)
    : value_(std::move(value)),
      text_(value_.is_number() && IsJsonNumberToken(token) ? std::string(token) : Dump(value_)) {}

bool IsValidId(const json& id) { return id.is_string() || id.is_number(); }

std::string IdKey(const json& id) {
  if (id.is_number_float()) {
    // A whole double within 64 bits is keyed as the integer it equals. The
    // bounds are 2^63 and 2^64, exact as doubles.
    double value = id.get<double>();
    if (value == std::floor(value) && value >= -9223372036854775808.0 && value < 9223372036854775808.0) {
      return std::to_string(static_cast<int64_t>(value));
    }
    if (value == std::floor(value) && value >= 0 && value < 18446744073709551616.0) {
      return std::to_string(static_cast<uint64_t>(value));
    }
  }
  return Dump(id);
}

std::optional<ParsedLine> ParseLine(std::string_view line, const ParseOptions& options, std::string* error) {
  if (NestingDepth(line) > options.max_depth) {
    *error = "nesting deeper than " + std::to_string(options.max_depth) + " levels";
    return std::nullopt;
  }
  // nlohmann's lexer reads a NUL byte as the end of the input, so
  // `{...}\0garbage` would parse as `{...}`. JSON has no raw NUL anywhere
  // (RFC 8259: control characters only escaped, inside strings).
  if (line.find('\0') != std::string_view::npos) {
    *error = "not valid JSON (a NUL byte)";
    return std::nullopt;
  }
  json value = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) {
    *error = "not valid JSON";
    return std::nullopt;
  }
  ParsedLine parsed;
  if (value.is_array() && !value.empty()) {
    parsed.batch = true;
    for (auto& element : value) parsed.values.push_back(std::move(element));
  } else {
    parsed.values.push_back(std::move(value));
  }
  parsed.id_tokens.resize(parsed.values.size());
  auto float_id = [](const json& v) { return v.is_object() && v.contains("id") && v["id"].is_number_float(); };
  if (std::any_of(parsed.values.begin(), parsed.values.end(), float_id)) {
    // Read once more, for the ids' own text (the DOM keeps only the double).
    FloatIdTokens ids(parsed.batch);
    json::sax_parse(line.begin(), line.end(), &ids);
    for (auto& [index, token] : ids.tokens) {
      if (index < parsed.id_tokens.size()) parsed.id_tokens[index] = std::move(token);
    }
  }
  return parsed;
}

namespace {

Message ParseMessageFields(const json& value, std::string_view id_token) {
  if (!value.is_object()) return Invalid(RequestId(), kInvalidRequest, "a message must be a JSON object");
  RequestId id(value.contains("id") ? value["id"] : json(nullptr), id_token);
  auto version = value.find("jsonrpc");
  if (version == value.end() || *version != "2.0") {
    return Invalid(id, kInvalidRequest, "\"jsonrpc\" must be \"2.0\"");
  }
  if (!value.contains("method")) {
    if (value.contains("result") || value.contains("error")) {
      Message m;
      m.kind = MessageKind::kResponse;
      m.id = id;
      return m;
    }
    return Invalid(id, kInvalidRequest, "missing \"method\"");
  }
  const json& method = value["method"];
  if (!method.is_string()) return Invalid(id, kInvalidRequest, "\"method\" must be a string");
  if (value.contains("id") && !IsValidId(id.value())) {
    return Invalid(RequestId(), kInvalidRequest, "\"id\" must be a string or a number (not null)");
  }
  Message m;
  m.kind = value.contains("id") ? MessageKind::kRequest : MessageKind::kNotification;
  m.id = id;
  m.method = method.get<std::string>();
  if (auto params = value.find("params"); params != value.end()) {
    if (!params->is_object()) {
      // MCP params are always named (objects); positional arrays are invalid.
      Message invalid = Invalid(id, kInvalidParams, "\"params\" must be an object");
      invalid.unanswerable = m.kind == MessageKind::kNotification;
      return invalid;
    }
    m.params = *params;
  }
  return m;
}

}  // namespace

// The id goes in as its text (RequestId), so the lines are put together by
// hand, members in the order json::dump sorts them.
std::string ResultLine(const RequestId& id, const json& result) {
  return R"({"id":)" + id.text() + R"(,"jsonrpc":"2.0","result":)" + Dump(result) + "}";
}

std::string ErrorLine(const RequestId& id, int code, std::string_view message, const json& data) {
  json error{{"code", code}, {"message", SanitizeUtf8(message)}};
  if (!data.is_null()) error["data"] = data;
  return R"({"error":)" + Dump(error) + R"(,"id":)" + id.text() + R"(,"jsonrpc":"2.0"})";
}

std::string NotificationLine(std::string_view method, const json& params) {
  return Dump(json{{"jsonrpc", "2.0"}, {"method", method}, {"params", params}});
}

bool IsValidUtf8(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    size_t n = Utf8SequenceLength(bytes, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string SanitizeUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    size_t n = Utf8SequenceLength(bytes, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

Message ParseMessage(const json& value, std::string_view id_token) {
  Message m = ParseMessageFields(value, id_token);
  // Invalid, but naming a method all the same: a tools/call is then still
  // audited as a refused call (server_tool_calls.cc).
  if (m.kind == MessageKind::kInvalid && m.method.empty() && value.is_object()) {
    if (auto method = value.find("method"); method != value.end() && method->is_string()) m.method = *method;
  }
  return m;
}

std::string EchoOfClientText(std::string_view text, size_t max) {
  if (text.size() <= max) return SanitizeUtf8(text);
  return SanitizeUtf8(text.substr(0, max)) + "... (" + std::to_string(text.size()) + " bytes)";
}

}  // namespace cocoon::mcp
