// `cocoon audit verify`: checks that a log (or a rotated series of logs, in
// order) is canonical, hash-chained, signed by trusted keys, and sealed.
//
// Work is split so every core helps: scanning and hashing lines and checking
// Ed25519 signatures run in parallel; only the cheap chain comparisons are
// sequential. The first failure (lowest file/line) is reported.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "audit/keys.h"
#include "compiler/common/status.h"

namespace cocoon::audit {

struct VerifyOptions {
  std::vector<PublicKey> trusted;
  bool ignore_extra_keys = false;  // drop top-level keys Cocoon never writes (added by shippers)
  unsigned threads = 0;            // 0: every core
  // An anchor: the head (last line's seq and hash) an earlier verify printed
  // and the operator kept somewhere the log's writers cannot reach. A hash
  // chain alone cannot tell a log cut right after a seal from a complete one
  // (every finished writer session, every cocoon mcp tool call, is such a
  // cut point); with an anchor, verify fails unless the lines still hold
  // that head (and extend it). Either or both may be given.
  std::optional<uint64_t> expect_seq;
  std::optional<Digest> expect_head;
};

// Also `cocoon audit verify`'s exit code (3 is its usage error).
enum class VerifyVerdict {
  kSealed = 0,     // intact and sealed (or ends in a rotation record)
  kTampered = 1,   // the first failure is in file/line/reason
  kUnsealed = 2,   // intact, but the end may be missing
  kRecovered = 4,  // chain intact, but a writer had to recover from a tail it could not vouch
                   // for (a torn or appended fragment, an unsigned line): reason names the line
};

struct VerifyReport {
  VerifyVerdict verdict = VerifyVerdict::kTampered;
  std::string file;         // first failure (kTampered)
  uint64_t line = 0;        // 1-based
  std::string reason;
  uint64_t lines = 0;       // complete lines read
  uint64_t signatures = 0;  // signatures checked
  std::string chain_id;
  // The last intact line (not set for kTampered): what to record as the
  // anchor for a later verify (VerifyOptions::expect_seq/expect_head).
  bool has_head = false;
  uint64_t head_seq = 0;
  std::string head_hash;  // 64 hex digits
  std::vector<std::string> notices;  // key rotations, unsigned tail, recoveries...
  // --ignore-extra-keys: the top-level keys dropped before checking (in
  // all), the lines they were on, and the first few distinct names (at most
  // 8, each cut to 64 bytes). Also a notice.
  uint64_t extra_keys_dropped = 0;
  uint64_t lines_with_extra_keys = 0;
  std::vector<std::string> extra_key_names;
};

struct LogInput {
  std::string name;
  std::string_view bytes;
};

VerifyReport VerifyLogs(const std::vector<LogInput>& inputs, const VerifyOptions& options);
Result<VerifyReport> VerifyFiles(const std::vector<std::string>& paths, const VerifyOptions& options);

// The path of the log VerifyFiles has mapped at `address`, or null. Async-
// signal-safe: for a SIGBUS handler, since a log that another program
// truncates while it is mapped raises SIGBUS where its lost pages are read
// (cli/audit_command.cc reports that and exits).
const char* MappedLogAt(const void* address);

// Human-readable summary, e.g. "audit.log:17: TAMPERED: hash mismatch (line edited)".
std::string FormatReport(const VerifyReport& report);

}  // namespace cocoon::audit
