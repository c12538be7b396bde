// AuditLog: the signed, hash-chained NDJSON audit log (issue 5).
//
// Every line is one OCSF 1.8.0 + ECS event in RFC 8785 (JCS) canonical form.
// Integrity data lives as flat scalars under `cocoon.integrity`:
//   chain  chain id (random, fixed for the life of the chain, across rotation)
//   seq    sequence number, +1 exactly per line
//   prev   hash of the previous line (64 zero hex digits for the first line)
//   hash   SHA-256("cocoon-audit-v1\n" || canonical line without hash and sig)
//   key    key id of the signer (derived from the Ed25519 public key)
//   sig    Ed25519 signature over the hash (every line by default; only
//          checkpoints and lifecycle records when sign_every > 1)
//   kind   "event", "start", "checkpoint", "seal", "rotate", "continue",
//          "key-rotate", "recovery"
//
// One serialised writer computes the chain. Each append takes flock(LOCK_EX)
// on the file, re-reads the tail when another process wrote since, and emits
// the whole batch with a single write(2) on an O_APPEND descriptor, so several
// cocoon processes may share one log and lines never interleave.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "audit/events.h"
#include "compiler/common/status.h"

namespace cocoon::audit {

// Where lines go. Only kFile keeps a chain that later appenders (other
// processes) can continue; the other sinks chain within one AuditLog.
enum class SinkKind {
  kFile,            // append to `path` (the default)
  kStdout,          // NDJSON on stdout (`--audit-log -`)
  kSyslog,          // RFC 5424, the JSON line as MSG; see syslog_address
  kSplunkHecFile,   // {"time","host","source","sourcetype","event":{...}} per line, to `path` ("-" = stdout)
};

enum class FsyncPolicy {
  kNone,       // leave it to the page cache (fastest; lost on power failure)
  kPerBatch,   // fdatasync after every Append/AppendBatch call (the default)
  kPerEvent,   // fdatasync after every line (a batch is then written line by line)
};

enum class AuditRequirement {
  kRequired,   // failure to write the log is an error; a run must be refused
  kBestEffort, // failures are reported by Append but the caller may continue
};

struct AuditLogOptions {
  SinkKind sink = SinkKind::kFile;
  std::string path;              // file path; "-" means stdout
  // kSyslog: "unix:/dev/log" (datagram), "tcp:127.0.0.1:5514", "udp:127.0.0.1:5514".
  std::string syslog_address = "unix:/dev/log";
  std::string syslog_app_name = "cocoon";

  std::string key_path;          // Ed25519 private key PEM from `cocoon audit keygen`
  uint32_t sign_every = 1;       // 1: sign every line; N > 1: checkpoints every N lines are signed
  uint64_t checkpoint_every_lines = 1000;  // 0: never by count
  uint64_t checkpoint_every_seconds = 60;  // 0: never by time
  FsyncPolicy fsync = FsyncPolicy::kPerBatch;
  AuditRequirement requirement = AuditRequirement::kRequired;
  uint64_t rotate_bytes = 0;     // 0: never rotate; else rotate when the file exceeds this
  // Threads (including the caller) that canonicalise and sign a batch in
  // parallel; order is preserved. 0: one per core.
  unsigned signer_threads = 0;

  // Filled in automatically when empty: hostname, "cocoon", COCOON_VERSION.
  std::string host_name;
  std::string product_name = "Cocoon";
};

// What an appended line became.
struct EventRef {
  uint64_t sequence = 0;
  std::string event_id;  // metadata.uid (chain id + sequence)
  std::string hash;      // hex SHA-256 of the line (cocoon.integrity.hash)
};

class AuditLog {
 public:
  // Opens (or creates, 0600) the log, loads the key, continues an existing
  // chain from its tail (writing a recovery record when the last line is
  // partial) and writes a "log started" record. Fails with a clear message on
  // a missing key, read-only path, full disk...
  static Result<std::unique_ptr<AuditLog>> Open(const AuditLogOptions& options);

  ~AuditLog();  // Close()s if the caller did not; errors are then logged
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  // Appends one event; it is on the sink (and fsynced per the policy) on return.
  Result<EventRef> Append(Event event);
  // Appends many events with one lock, parallel signing and one write(2).
  Result<std::vector<EventRef>> AppendBatch(std::vector<Event> events);
  // Writes a signed checkpoint record now.
  Result<EventRef> Checkpoint();
  // Announces `new_key_path`'s public key in a line signed with the current
  // key; later lines are signed with the new key.
  Status RotateKey(const std::string& new_key_path);
  // Writes a seal record and closes the sink. Idempotent.
  Status Close();

  const AuditLogOptions& options() const;
  std::string chain_id() const;

  class Impl;

 private:
  explicit AuditLog(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Parses "file", "-", "syslog", "hec" (kind names used by CLI flags).
Result<SinkKind> ParseSinkKind(std::string_view name);
Result<FsyncPolicy> ParseFsyncPolicy(std::string_view name);  // "none", "batch", "event"

}  // namespace cocoon::audit
