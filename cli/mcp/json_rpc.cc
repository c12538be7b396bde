#include "cli/mcp/json_rpc.h"

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

Message Invalid(json id, int code, std::string message) {
  Message m;
  m.kind = MessageKind::kInvalid;
  m.id = IsValidId(id) ? std::move(id) : json(nullptr);
  m.error_code = code;
  m.error_message = std::move(message);
  return m;
}

// Top-level "id" and "method" of an object, from SAX events; stops (returns
// false) once both are seen. Depth 1 is the message object itself.
class TopLevelFields : public nlohmann::json_sax<json> {
 public:
  json id;
  std::string method;
  bool has_id = false, has_method = false;

  bool null() override { return Scalar(json(nullptr)); }
  bool boolean(bool value) override { return Scalar(json(value)); }
  bool number_integer(number_integer_t value) override { return Scalar(json(value)); }
  bool number_unsigned(number_unsigned_t value) override { return Scalar(json(value)); }
  bool number_float(number_float_t value, const string_t&) override { return Scalar(json(value)); }
  bool string(string_t& value) override { return Scalar(json(value)); }
  bool binary(binary_t&) override { return Scalar(json(nullptr)); }
  bool start_object(std::size_t) override { return Open(); }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override { return Open(); }
  bool end_array() override { return Close(); }
  bool key(string_t& value) override {
    if (depth_ == 1) key_ = value;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool Scalar(json value) {
    if (depth_ == 1 && key_ == "id") {
      id = std::move(value);
      has_id = true;
    } else if (depth_ == 1 && key_ == "method" && value.is_string()) {
      method = value.get<std::string>();
      has_method = true;
    }
    key_.clear();
    return !(has_id && has_method);
  }
  bool Open() {
    key_.clear();
    ++depth_;
    return depth_ <= 64;
  }
  bool Close() {
    --depth_;
    return true;
  }
  int depth_ = 0;
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

Message PeekOversizedMessage(std::string_view prefix, std::string error_message) {
  TopLevelFields fields;
  if (!prefix.empty() && prefix.front() == '{') {
    json::sax_parse(prefix.begin(), prefix.end(), &fields, nlohmann::detail::input_format_t::json, false);
  }
  Message m = Invalid(fields.has_id ? fields.id : json(nullptr), kInvalidRequest, std::move(error_message));
  m.method = fields.method;
  return m;
}

bool IsValidId(const json& id) {
  return id.is_string() || id.is_number_integer() || id.is_number_unsigned();
}

std::string IdKey(const json& id) { return Dump(id); }

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
  return parsed;
}

namespace {

Message ParseMessageFields(const json& value) {
  if (!value.is_object()) return Invalid(nullptr, kInvalidRequest, "a message must be a JSON object");
  json id = value.contains("id") ? value["id"] : json(nullptr);
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
  if (value.contains("id") && !IsValidId(id)) {
    return Invalid(nullptr, kInvalidRequest, "\"id\" must be a string or an integer (not null)");
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

std::string ResultLine(const json& id, const json& result) {
  return Dump(json{{"jsonrpc", "2.0"}, {"id", id}, {"result", result}});
}

std::string ErrorLine(const json& id, int code, std::string_view message, const json& data) {
  json error{{"code", code}, {"message", SanitizeUtf8(message)}};
  if (!data.is_null()) error["data"] = data;
  return Dump(json{{"jsonrpc", "2.0"}, {"id", id}, {"error", std::move(error)}});
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

Message ParseMessage(const json& value) {
  Message m = ParseMessageFields(value);
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
