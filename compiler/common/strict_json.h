// JSON that two readers cannot read differently. nlohmann (like most DOM
// parsers) keeps the last of two equal keys in an object, while another
// reader of the same text may keep the first: a signed audit line a SIEM
// shows with another value, an MCP request whose "method" or "command" the
// server and a logging proxy see differently. RFC 8259 section 4 leaves
// duplicate names' meaning unspecified, so text with them is refused. So is
// a key holding U+0000: a reader that keeps keys as C strings cuts
// "method\u0000" to "method", and `{"method":"ping","method\u0000":
// "tools/call"}` is then the duplicate nlohmann does not see.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace cocoon {

struct StrictJson {
  enum class Error { kNone, kInvalid, kDuplicateKey, kNulInKey };
  Error error = Error::kNone;
  nlohmann::json value;  // discarded unless error is kNone
  // kDuplicateKey: the first key seen twice in one object; kNulInKey: the
  // first key holding U+0000, each written as \u0000. At most 64 bytes of
  // the key; it is the sender's text, for the caller to escape.
  std::string key;
};

// Parses `text` without exceptions, refusing a key that appears twice in any
// one object, at any depth, and a key that holds U+0000. Callers bound the
// nesting depth first (the parser recurses).
StrictJson ParseJsonRejectingDuplicateKeys(std::string_view text);

}  // namespace cocoon
