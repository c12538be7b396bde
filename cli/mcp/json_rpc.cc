#include "cli/mcp/json_rpc.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "compiler/common/strict_json.h"

namespace cocoon::mcp {
namespace {

using nlohmann::json;

// Walks `text` outside JSON strings, giving each character with the
// [ / { nesting depth after it; stops when `visit` returns false.
template <typename Visit>
void WalkOutsideStrings(std::string_view text, Visit visit) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      continue;
    }
    if (c == '[' || c == '{') ++depth;
    else if ((c == ']' || c == '}') && depth > 0) --depth;
    if (!visit(c, depth)) return;
  }
}

// Deepest [ / { nesting outside strings. nlohmann's recursive parser would
// otherwise recurse once per level of a hostile "[[[[...": refuse before parsing.
size_t NestingDepth(std::string_view text) {
  size_t max_depth = 0;
  WalkOutsideStrings(text, [&](char, size_t depth) {
    max_depth = std::max(max_depth, depth);
    return true;
  });
  return max_depth;
}

// Whether `text` is an array of more than `limit` elements, counted as the
// commas at its top level outside strings (valid JSON is checked apart).
bool ArrayHasMoreThan(std::string_view text, size_t limit) {
  const size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos || text[start] != '[') return false;
  size_t commas = 0;
  bool more = false;
  WalkOutsideStrings(text.substr(start), [&](char c, size_t depth) {
    more = c == ',' && depth == 1 && ++commas >= limit;  // commas + 1 elements
    return !more;
  });
  return more;
}

Message Invalid(RequestId id, int code, std::string message) {
  Message m;
  m.kind = MessageKind::kInvalid;
  m.id = IsValidId(id.value()) ? std::move(id) : RequestId();
  m.error_code = code;
  m.error_message = std::move(message);
  return m;
}

// Past the string literal that opens at text[begin] (a '"'), in valid JSON.
size_t StringEnd(std::string_view text, size_t begin) {
  size_t i = begin + 1;
  while (i < text.size() && text[i] != '"') i += text[i] == '\\' ? 2 : 1;
  return i + 1;
}

// Whether the string literal `lexeme` is the key "id" (escapes decoded:
// "i\u0064" is one too, as nlohmann reads it).
bool IsIdKey(std::string_view lexeme) {
  if (lexeme == "\"id\"") return true;
  if (lexeme.find('\\') == std::string_view::npos) return false;
  const json key = json::parse(lexeme, nullptr, /*allow_exceptions=*/false);
  return key.is_string() && key.get_ref<const std::string&>() == "id";
}

// The text of each message's top-level "id" when it is a number, by the
// message's index in ParsedLine::values: the line's object is 0, a batch's
// elements 0, 1, ... (non-objects counted). Scans `line`, which nlohmann has
// already parsed: the DOM keeps a number's value, not its digits, and
// nlohmann's SAX gives no text for an integer (-0 is read as 0). With a key
// repeated the last one wins, as in the DOM.
std::map<size_t, std::string> NumberIdTokens(std::string_view line, bool batch) {
  const int message_depth = batch ? 2 : 1;
  std::map<size_t, std::string> tokens;
  int depth = 0;
  size_t element = 0;
  bool id_value = false;  // the next value is a message's "id"
  for (size_t i = 0; i < line.size();) {
    const char c = line[i];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ':') {
      ++i;
      continue;
    }
    const bool number = c == '-' || (c >= '0' && c <= '9');
    size_t end = i + 1;
    if (c == '"') {
      end = StringEnd(line, i);
      const size_t next = line.find_first_not_of(" \t\n\r", end);
      if (depth == message_depth && next != std::string_view::npos && line[next] == ':') {
        id_value = IsIdKey(line.substr(i, end - i));
        i = next + 1;
        continue;
      }
    } else if (number) {
      end = line.find_first_not_of("+-.eE0123456789", i);
      if (end == std::string_view::npos) end = line.size();
    } else if (c >= 'a' && c <= 'z') {  // true, false, null
      end = line.find_first_not_of("abcdefghijklmnopqrstuvwxyz", i);
      if (end == std::string_view::npos) end = line.size();
    }
    if (id_value && depth == message_depth) {
      if (number) tokens[element] = std::string(line.substr(i, end - i));
      else tokens.erase(element);
    }
    id_value = false;
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    if (c == ',' && batch && depth == 1) ++element;
    i = end;
  }
  return tokens;
}

// Whether the DOM's "id" may have been written other than nlohmann would
// write it: a double (1.0, 1e2, 2^64), or a signed 0 (the client's -0). Any
// other integer's JSON text is its decimal digits.
bool IdTextMayDiffer(const json& value) {
  if (!value.is_object() || !value.contains("id")) return false;
  const json& id = value["id"];
  return id.is_number_float() || (id.type() == json::value_t::number_integer && id.get<int64_t>() == 0);
}

// Counts what nlohmann's serializer writes (the interface its own dump()
// writes a string through; json_fd_writer.cc writes an fd through it).
class CountingAdapter final : public nlohmann::detail::output_adapter_protocol<char> {
 public:
  void write_character(char) override { ++count_; }
  void write_characters(const char*, std::size_t length) override { count_ += length; }
  size_t count() const { return count_; }

 private:
  size_t count_ = 0;
};

using Sink = nlohmann::detail::output_adapter_t<char>;

// Writes `value`'s text to `sink`. replace: a stray invalid byte must not
// turn a response into an exception.
void Serialize(const Sink& sink, const json& value) {
  nlohmann::detail::serializer<json> serializer(sink, ' ', json::error_handler_t::replace);
  serializer.dump(value, /*pretty_print=*/false, /*ensure_ascii=*/false, 0);
}

void AppendDump(std::string& out, const json& value) {
  Serialize(nlohmann::detail::output_adapter<char, std::string>(out), value);
}

// Writes what it is given as the inside of a JSON string. What it is given
// is serialised JSON text on one line, where control characters are already
// escaped: only '"' and '\\' need a backslash, as dump() would write them.
class StringEscapingAdapter final : public nlohmann::detail::output_adapter_protocol<char> {
 public:
  explicit StringEscapingAdapter(Sink inner) : inner_(std::move(inner)) {}
  void write_character(char c) override {
    if (c == '"' || c == '\\') inner_->write_character('\\');
    inner_->write_character(c);
  }
  void write_characters(const char* s, std::size_t length) override {
    size_t start = 0;
    for (size_t i = 0; i < length; ++i) {
      if (s[i] != '"' && s[i] != '\\') continue;
      inner_->write_characters(s + start, i - start);
      inner_->write_character('\\');
      start = i;
    }
    inner_->write_characters(s + start, length - start);
  }

 private:
  Sink inner_;
};

// `result`, a CallToolResult whose first content block is the text copy of
// its structuredContent without its "text": the copy is written here, from
// structuredContent, escaped as it is serialised. Members in dump()'s order.
void SerializeToolResult(const Sink& sink, const json& result) {
  static const std::string kTextBlockHead = R"([{"text":")";
  static const std::string kTextBlockTail = R"(","type":"text"}])";
  sink->write_character('{');
  bool first = true;
  for (auto it = result.begin(); it != result.end(); ++it) {
    if (!first) sink->write_character(',');
    first = false;
    Serialize(sink, json(it.key()));
    sink->write_character(':');
    if (it.key() != "content") {
      Serialize(sink, it.value());
      continue;
    }
    sink->write_characters(kTextBlockHead.data(), kTextBlockHead.size());
    Serialize(std::make_shared<StringEscapingAdapter>(sink), result.at("structuredContent"));
    sink->write_characters(kTextBlockTail.data(), kTextBlockTail.size());
  }
  sink->write_character('}');
}

std::string ResultLineHead(const RequestId& id) { return R"({"id":)" + id.text() + R"(,"jsonrpc":"2.0","result":)"; }

// A response line: `write` writes the result's text to the sink it is given,
// once to count it and once into a string of that size.
template <typename Write>
std::string ResultLineWith(const RequestId& id, const Write& write) {
  const std::string head = ResultLineHead(id);
  auto counter = std::make_shared<CountingAdapter>();
  write(counter);
  std::string line;
  line.reserve(head.size() + counter->count() + 1);
  line += head;
  write(nlohmann::detail::output_adapter<char, std::string>(line));
  line += '}';
  return line;
}

std::string Dump(const json& value) { return DumpJson(value); }

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

// Bytes the escaped form of the ASCII character `c` takes inside a JSON
// string, as nlohmann writes it without ensure_ascii.
size_t EscapedAsciiSize(unsigned char c) {
  switch (c) {
    case '"': case '\\': case '\b': case '\f': case '\n': case '\r': case '\t': return 2;
    default: return c < 0x20 ? 6 : 1;
  }
}

}  // namespace

size_t DumpedSize(const json& value) {
  auto counter = std::make_shared<CountingAdapter>();
  Serialize(counter, value);
  return counter->count();
}

std::string DumpJson(const json& value) {
  std::string text;
  text.reserve(DumpedSize(value));
  AppendDump(text, value);
  return text;
}

size_t PrefixWithinEscapedSize(std::string_view text, size_t budget) {
  size_t used = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t length = Utf8SequenceLength(text, i);
    const size_t cost = length == 0 ? 3 : length == 1 ? EscapedAsciiSize(static_cast<unsigned char>(text[i])) : length;
    if (used + cost > budget) return i;
    used += cost;
    i += length == 0 ? 1 : length;
  }
  return text.size();
}

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
  if (ArrayHasMoreThan(line, options.max_batch_elements)) {
    // Checked without a DOM: a line that is not JSON is a parse error still.
    if (!json::accept(line)) {
      *error = "not valid JSON";
      return std::nullopt;
    }
    ParsedLine oversized;
    oversized.batch = true;
    oversized.oversized_batch = true;
    return oversized;
  }
  // A key twice in one object (`{"method":"ping","method":"tools/call"}`, a
  // second "command" in the arguments, a second "id") would be read here as
  // its last value, and as its first by a proxy or a log that reads the same
  // line: the line is refused (the audit verifier's rule, same code).
  StrictJson strict = ParseJsonRejectingDuplicateKeys(line);
  if (strict.error == StrictJson::Error::kDuplicateKey) {
    *error = "duplicate key \"" + strict.key +
             "\" in one JSON object (readers disagree on which value counts): send each key once";
    return std::nullopt;
  }
  // A reader that cuts keys at a NUL reads "method\u0000" as "method".
  if (strict.error == StrictJson::Error::kNulInKey) {
    *error = "object key \"" + strict.key +
             "\" holds U+0000 (a reader that ends keys at a NUL reads another key): remove it";
    return std::nullopt;
  }
  json value = std::move(strict.value);
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
  if (std::any_of(parsed.values.begin(), parsed.values.end(), IdTextMayDiffer)) {
    // Read once more, for the ids' own text (the DOM keeps only the value).
    for (auto& [index, token] : NumberIdTokens(line, parsed.batch)) {
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
  return ResultLineWith(id, [&](const Sink& sink) { Serialize(sink, result); });
}

namespace {

bool IsTextCopyResult(const json& result) {
  return result.is_object() && result.contains("structuredContent") && result.contains("content");
}

}  // namespace

std::string ToolResultLine(const RequestId& id, const json& result) {
  if (!IsTextCopyResult(result)) return ResultLine(id, result);
  return ResultLineWith(id, [&](const Sink& sink) { SerializeToolResult(sink, result); });
}

size_t ToolResultLineSize(const RequestId& id, const json& result) {
  auto counter = std::make_shared<CountingAdapter>();
  if (IsTextCopyResult(result)) SerializeToolResult(counter, result);
  else Serialize(counter, result);
  return ResultLineHead(id).size() + counter->count() + 1;
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
