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
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/events.h"
#include "audit/jcs.h"
#include "audit/keys.h"
#include "compiler/common/status.h"

namespace cocoon::audit {

inline constexpr int kFormatVersion = 1;

// Per-line values. The string_views point at batch-wide text (chain id, key
// id, the batch's timestamp), so filling in a line allocates nothing extra.
struct LineContext {
  std::string_view chain_id;
  uint64_t sequence = 0;
  Digest prev{};
  std::string_view key_id;
  std::string_view kind = "event";
  int64_t time_ms = 0;
  std::string_view timestamp;  // IsoTimestamp(time_ms), rendered once per batch
  bool signed_line = true;
  // Extra flat scalars for cocoon.integrity (key-rotate, recovery, ...).
  const std::map<std::string, nlohmann::json>* extra = nullptr;
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

// Where AppendBatch splices a per-line value into a rendered event body.
enum class Splice : int { kTimestamp, kActor, kDevice, kIntegrity, kSequence, kUid, kTime };

// An event body rendered once to canonical text (when the event is built,
// outside the writer's lock), with the per-line values cut out: the serialised
// writer then only copies bytes around the splice points. This replaced a DOM
// walk per line, whose allocation churn dominated the cost of a line.
struct RenderedEvent {
  std::string body;
  std::vector<SplicePoint> splices;  // ascending offsets into body; ids are Splice
  int severity_id = 1;               // OCSF severity_id (syslog PRI)
};

// Renders `event` (a JSON object without cocoon.integrity); fails on floats,
// unsafe integers and other values that have no canonical audit form.
Result<std::shared_ptr<const RenderedEvent>> RenderEvent(const nlohmann::json& event);

// SyscallDenied's fields as a DOM (the reference its direct text must match).
nlohmann::json SyscallDeniedFields(const SyscallDeniedInfo& info);

struct PreparedLine {
  std::string preimage;
  size_t hash_at = 0;  // where `"hash":"...",` is spliced in
  size_t sig_at = 0;   // where `"sig":"...",` is spliced in
  size_t prev_at = 0;  // the 64 hex digits of integrity.prev
  Digest hash{};
  bool signed_line = true;
  uint64_t sequence = 0;
};

// Fills time, @timestamp, metadata.uid/sequence, event.sequence, actor and
// device (when absent) and cocoon.integrity into the rendered body; hashes.
Result<PreparedLine> PrepareLine(const RenderedEvent& event, const LineContext& context, const Identity& identity);
Result<PreparedLine> PrepareLine(const nlohmann::json& event, const LineContext& context, const Identity& identity);

// PrepareLine with HashMode::kDeferred leaves prev as zeros and the hash
// unset, so lines can be filled in parallel; ChainLine then patches prev in
// and hashes (sequential: each hash feeds the next line).
enum class HashMode { kNow, kDeferred };
Result<PreparedLine> PrepareLine(const RenderedEvent& event, const LineContext& context, const Identity& identity,
                                 HashMode mode);
void ChainLine(PreparedLine& line, const Digest& prev);
// PrepareLine into an existing `line`, whose preimage keeps its capacity (the
// writer reuses one PreparedLine per batch slot: no 2 KB allocation per line).
Status PrepareLineInto(const RenderedEvent& event, const LineContext& context, const Identity& identity,
                       HashMode mode, PreparedLine& line);
// The same split in two: StartChainHash absorbs the bytes before prev (they
// do not depend on the chain, so it runs on any core, ahead of time); then
// ChainLine patches prev in and absorbs the rest into the same hasher.
void StartChainHash(const PreparedLine& line, LineHasher& hasher);
void ChainLine(PreparedLine& line, const Digest& prev, LineHasher& hasher);

// Exact size of AppendFinishedLine's output (signed or not), for one preallocated batch.
size_t FinishedSize(const PreparedLine& line);
// Appends the final line, with '\n', to `out`. `signature` is null for unsigned lines.
void AppendFinishedLine(const PreparedLine& line, const Signature* signature, std::string& out);
// The same bytes written at `out`, which has room for FinishedSize(line)
// (so lines can be finished in parallel into one batch buffer); returns the end.
char* WriteFinishedLine(const PreparedLine& line, const Signature* signature, char* out);

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
