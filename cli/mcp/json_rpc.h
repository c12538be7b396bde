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

enum class MessageKind {
  kRequest,       // method + id
  kNotification,  // method, no id
  kResponse,      // result or error (the client answering us; we never ask)
  kInvalid,       // parsed JSON that is not a valid message: `error` says why
};

struct Message {
  MessageKind kind = MessageKind::kInvalid;
  nlohmann::json id;        // null for notifications and unreadable ids
  std::string method;
  nlohmann::json params = nlohmann::json::object();  // always an object once valid
  // For kInvalid (and parse failures): the error to send back, if any.
  int error_code = 0;
  std::string error_message;
  // A notification (a method without an "id") that is invalid all the same:
  // JSON-RPC 2.0 section 4.1 says a notification is never answered, not
  // even with an error, so it is dropped.
  bool unanswerable = false;
};

struct ParseOptions {
  size_t max_depth = 64;  // nesting deeper than this is refused before parsing
};

// Parses one line. A line that is not JSON gives kInvalid with kParseError;
// valid JSON that is not a JSON-RPC 2.0 message gives kInvalid with
// kInvalidRequest (and the id when it could be read). Arrays (2025-03-26
// batches) are split by ParseLine, not here.
Message ParseMessage(const nlohmann::json& value);
// The parsed values of one line: one for an object, the elements for a
// non-empty array (a batch, answered with one array). An empty array is not
// a batch but one invalid request (JSON-RPC 2.0 section 6).
struct ParsedLine {
  std::vector<nlohmann::json> values;
  bool batch = false;
};
// nullopt and sets *error on a parse failure.
std::optional<ParsedLine> ParseLine(std::string_view line, const ParseOptions& options, std::string* error);

// The start of a line too long to parse whole: its top-level "id" and
// "method", read with a SAX parser that stops at the end of `prefix` (or
// as soon as both are known), so that the refusal can answer the request
// it refuses. A client matches answers by id: an error with id null leaves
// its call waiting until its own timeout. kInvalid with `error_message`
// set; `id` null when the prefix does not show one.
Message PeekOversizedMessage(std::string_view prefix, std::string error_message);

// True for a string id or an integer id (MCP forbids null; JSON-RPC
// discourages fractions).
bool IsValidId(const nlohmann::json& id);
// A stable map key for an id: ids 1 and "1" are different requests.
std::string IdKey(const nlohmann::json& id);

// Serialised, single-line responses and notifications. Invalid UTF-8 in any
// string is replaced (U+FFFD) so that dump() cannot throw.
std::string ResultLine(const nlohmann::json& id, const nlohmann::json& result);
std::string ErrorLine(const nlohmann::json& id, int code, std::string_view message,
                      const nlohmann::json& data = nullptr);
std::string NotificationLine(std::string_view method, const nlohmann::json& params);

// Replaces every invalid UTF-8 sequence with U+FFFD.
std::string SanitizeUtf8(std::string_view bytes);
// A client's text quoted back in an error (a method or tool name, an
// argument key): sanitized and cut to `max` bytes, so that a request with a
// megabyte-long name does not get a megabyte-long answer.
std::string EchoOfClientText(std::string_view text, size_t max = 200);
bool IsValidUtf8(std::string_view bytes);

}  // namespace cocoon::mcp
