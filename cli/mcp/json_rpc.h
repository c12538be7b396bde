// JSON-RPC 2.0 framing for MCP's stdio transport: one message per line, no
// embedded newlines (https://www.jsonrpc.org/specification and the MCP
// "Base Protocol" page). This file only classifies and validates messages and
// builds responses; what a method does lives in server.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace cocoon::mcp {

// Standard JSON-RPC codes, plus the MCP-reserved ones this server emits
// (2026-07-28 schema: -32020..-32099 are reserved for the MCP specification).
enum ErrorCodeRpc : int {
  kParseError = -32700,
  kInvalidRequest = -32600,
  kMethodNotFound = -32601,
  kInvalidParams = -32602,
  kInternalError = -32603,
  kUnsupportedProtocolVersion = -32022,
};

// A request's id. MCP's RequestId is `string | number` and JSON-RPC 2.0
// (section 4) allows any number, fractions discouraged but valid. A number
// is echoed in the client's own digits: nlohmann reads a number with a
// fraction or an exponent, or an integer past 64 bits, as a double and
// writes it back in its own form (1e2 as 100.0, 18446744073709551616 as
// 1.8446744073709552e+19), which a client holding the integer it sent
// (Python, Go's json.Number, serde's arbitrary_precision) does not match to
// its request.
class RequestId {
 public:
  RequestId() = default;  // null: none, or not a usable id
  // `token`: the number's text in the message, when `value` was read from one.
  explicit RequestId(nlohmann::json value, std::string_view token = {});
  const nlohmann::json& value() const { return value_; }
  const std::string& text() const { return text_; }  // JSON, as the response carries it
  bool is_null() const { return value_.is_null(); }

 private:
  nlohmann::json value_;
  std::string text_ = "null";
};

enum class MessageKind {
  kRequest,       // method + id
  kNotification,  // method, no id
  kResponse,      // result or error (the client answering us; we never ask)
  kInvalid,       // parsed JSON that is not a valid message: `error` says why
};

struct Message {
  MessageKind kind = MessageKind::kInvalid;
  RequestId id;             // null for notifications and unreadable ids
  std::string method;
  nlohmann::json params = nlohmann::json::object();  // always an object once valid
  // For kInvalid (and parse failures): the error to send back, if any.
  int error_code = 0;
  std::string error_message;
  // Not answered on its own: a notification (a method without an "id")
  // that is invalid all the same (JSON-RPC 2.0 section 4.1: a notification
  // is never answered, not even with an error) or over the size limit, a
  // response over it (OversizedLine), or an element of a refused batch (the
  // whole line gets one error).
  bool unanswerable = false;
};

struct ParseOptions {
  size_t max_depth = 64;  // nesting deeper than this is refused before parsing
  // A batch of more elements is not parsed into values (ParsedLine::
  // oversized_batch): one 8 MiB line of `{},` holds 2.8 million messages,
  // and their DOM and their answers took the server past 1 GiB.
  size_t max_batch_elements = 64;
};

// Parses one line. A line that is not JSON gives kInvalid with kParseError;
// valid JSON that is not a JSON-RPC 2.0 message gives kInvalid with
// kInvalidRequest (and the id when it could be read). Arrays (2025-03-26
// batches) are split by ParseLine, not here. `id_token`: the text of the
// message's "id" when it is a number (ParsedLine::id_tokens).
Message ParseMessage(const nlohmann::json& value, std::string_view id_token = {});
// The parsed values of one line: one for an object, the elements for a
// non-empty array (a batch, answered with one array). An empty array is not
// a batch but one invalid request (JSON-RPC 2.0 section 6).
struct ParsedLine {
  std::vector<nlohmann::json> values;
  // Per value: the text of its "id" when nlohmann read that as a double or
  // as a signed 0 (`-0`), which it would write otherwise (RequestId); else
  // empty.
  std::vector<std::string> id_tokens;
  bool batch = false;
  // A valid JSON array of more than max_batch_elements elements: `values`
  // is empty, nothing in it was read.
  bool oversized_batch = false;
};
// nullopt and sets *error on a parse failure.
std::optional<ParsedLine> ParseLine(std::string_view line, const ParseOptions& options, std::string* error);

// True for a string or a number: a request id, a cancellation's requestId,
// a progress token (MCP forbids null ids).
bool IsValidId(const nlohmann::json& id);
// A stable map key for an id: ids 1 and "1" are different requests; a
// number is keyed by its value, so 1, 1.0 and 1e0 are one request (as they
// are to a client in JavaScript or Python).
std::string IdKey(const nlohmann::json& id);

// Serialised, single-line responses and notifications. Invalid UTF-8 in any
// string is replaced (U+FFFD) so that dump() cannot throw. Each line is
// written once into a string of its exact size (DumpedSize): a tool's answer
// can be megabytes, and a string grown by doubling, then copied into the
// line, held it two or three times over.
std::string ResultLine(const RequestId& id, const nlohmann::json& result);
// A tools/call result (CallToolResult) whose content is one text block, the
// JSON text of its structuredContent, given as {"type": "text"} without its
// "text" (TextCopyResult, tools.h): the copy is written into the line from
// structuredContent, escaped as it is serialised, instead of being held as a
// string of its own beside the line. Another result is written as is.
std::string ToolResultLine(const RequestId& id, const nlohmann::json& result);
// Its size, counted without writing it.
size_t ToolResultLineSize(const RequestId& id, const nlohmann::json& result);
std::string ErrorLine(const RequestId& id, int code, std::string_view message,
                      const nlohmann::json& data = nullptr);
std::string NotificationLine(std::string_view method, const nlohmann::json& params);

// `value` as one line (dump(-1, ' ', false, replace)), in a string of its
// exact size, and that size alone, counted without building the text.
std::string DumpJson(const nlohmann::json& value);
size_t DumpedSize(const nlohmann::json& value);
// How many bytes of `text` to keep (a prefix ending between two UTF-8
// sequences) so that its JSON-escaped form, as DumpJson writes it inside a
// string's quotes, takes at most `budget` bytes: a control character costs
// 6 ("\u0000") or 2 ("\n"), '"' and '\\' 2, an invalid byte at most 3
// (U+FFFD), anything else its own size.
size_t PrefixWithinEscapedSize(std::string_view text, size_t budget);

// Replaces every invalid UTF-8 sequence with U+FFFD.
std::string SanitizeUtf8(std::string_view bytes);
// A client's text quoted back in an error (a method or tool name, an
// argument key): sanitized and cut to `max` bytes, so that a request with a
// megabyte-long name does not get a megabyte-long answer.
std::string EchoOfClientText(std::string_view text, size_t max = 200);
bool IsValidUtf8(std::string_view bytes);

}  // namespace cocoon::mcp
