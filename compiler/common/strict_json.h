// JSON that two readers cannot read differently. nlohmann (like most DOM
// parsers) keeps the last of two equal keys in an object, while another
// reader of the same text may keep the first: a signed audit line a SIEM
// shows with another value, an MCP request whose "method" or "command" the
// server and a logging proxy see differently. RFC 8259 section 4 leaves
// duplicate names' meaning unspecified, so text with them is refused.
#pragma once

#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace cocoon {

struct StrictJson {
  enum class Error { kNone, kInvalid, kDuplicateKey };
  Error error = Error::kNone;
  nlohmann::json value;       // discarded unless error is kNone
  std::string duplicate_key;  // kDuplicateKey: the first key seen twice in one object (at most 64 bytes)
};

// Parses `text` without exceptions, refusing a key that appears twice in any
// one object, at any depth. Callers bound the nesting depth first (the
// parser recurses).
StrictJson ParseJsonRejectingDuplicateKeys(std::string_view text);

}  // namespace cocoon
