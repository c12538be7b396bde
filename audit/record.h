// Internal to cocoon_audit: turning an Event into a chained, canonical line
// (writer side) and taking a line apart again (verifier side).
//
// Line layout: the canonical JCS object, with cocoon.integrity =
//   {"chain":C,"hash":H,"key":K,"kind":k,[extra scalars...],"prev":P,"seq":N,["sig":S,]"v":1}
// The hash pre-image is that same canonical text without the "hash" and
// "sig" members, which (keys being sorted and "v" always last) is exactly the
// JCS form of the object without those two members.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "audit/events.h"
#include "audit/jcs.h"
#include "audit/keys.h"
#include "compiler/common/status.h"

namespace cocoon::audit {

inline constexpr int kFormatVersion = 1;

struct LineContext {
  std::string chain_id;
  uint64_t sequence = 0;
  Digest prev{};
  std::string key_id;
  std::string kind = "event";
  int64_t time_ms = 0;
  bool signed_line = true;
  // Extra flat scalars for cocoon.integrity (key-rotate, recovery, ...).
  std::map<std::string, nlohmann::json> extra;
};

struct Identity {
  int pid = 0;
  uint32_t uid = 0;
  std::string user_name;
  std::string host_name;
  // Canonical text of the default actor and device, rendered once.
  std::string actor_text;
  std::string device_text;
};

// Fills actor_text/device_text from the other fields.
Status RenderIdentity(Identity& identity);

struct PreparedLine {
  std::string preimage;
  size_t hash_at = 0;  // where `"hash":"...",` is spliced in
  size_t sig_at = 0;   // where `"sig":"...",` is spliced in
  size_t prev_at = 0;  // the 64 hex digits of integrity.prev
  Digest hash{};
  bool signed_line = true;
  uint64_t sequence = 0;
  std::string event_id;
};

// Fills time, @timestamp, metadata.uid/sequence, event.sequence, actor and
// device (when absent) and cocoon.integrity; canonicalises; hashes.
Result<PreparedLine> PrepareLine(const nlohmann::json& event, const LineContext& context, const Identity& identity);

// PrepareLine with hash_now == HashMode::kDeferred leaves prev as zeros and
// the hash unset, so canonicalisation can run in parallel; ChainLine then
// patches prev in and hashes (sequential: each hash feeds the next line).
enum class HashMode { kNow, kDeferred };
Result<PreparedLine> PrepareLine(const nlohmann::json& event, const LineContext& context, const Identity& identity,
                                 HashMode mode);
void ChainLine(PreparedLine& line, const Digest& prev);

// The final line, with '\n'. `signature` is null for unsigned lines.
std::string FinishLine(const PreparedLine& line, const Signature* signature);

// "2024-05-01T12:00:00.123Z"
std::string IsoTimestamp(int64_t time_ms);

// Verifier side: the integrity fields of one scanned line.
struct ParsedIntegrity {
  std::string_view chain;
  std::string_view key_id;
  std::string_view kind;
  Digest hash{};
  Digest prev{};
  uint64_t sequence = 0;
  bool has_signature = false;
  Signature signature{};
  std::map<std::string_view, std::string_view> extra;  // raw JSON values
};

// Checks the integrity members' presence, types and spelling, and recomputes
// the line hash; `error` names the first problem.
Result<ParsedIntegrity> ParseIntegrity(std::string_view line, const ScannedLine& scanned, Digest* computed);

// String value of a raw JSON string token without escapes ("abc" -> abc).
std::optional<std::string_view> RawString(std::string_view raw);

}  // namespace cocoon::audit
