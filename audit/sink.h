// Internal to cocoon_audit: where finished lines go.
//
// FileSink is the shared, multi-process log: flock(LOCK_EX) on the log file
// itself for the whole read-tail/append step (flock(2): the lock belongs to
// the open file description and dies with the process, so a kill -9'd writer
// never leaves it held), O_APPEND writes (each write(2) lands at the end
// atomically with respect to other appenders), and a whole batch in one write.
// StreamSink is stdout or syslog: nothing to continue, one AuditLog per chain.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "audit/keys.h"
#include "compiler/common/status.h"

namespace cocoon::audit {

// The end of an existing log, as the next writer must continue it.
struct Tail {
  bool empty = true;             // no complete line yet
  std::string chain_id;
  uint64_t next_sequence = 0;
  Digest last_hash{};
  std::string last_kind;
  std::optional<std::string> partial;  // bytes after the last '\n' (a torn write)
  // The last complete line has no signature, so nothing vouches for it: the
  // writer must say so in a signed recovery record before chaining onto it.
  bool last_unverified = false;
  // The keys that key-rotate records retired, as the last line carries them
  // in integrity.old_keys (plus the tail itself when it is a key-rotate
  // record): see RetiredKeys below.
  std::string old_keys;
};

// integrity.old_keys: "KEY@SEQ>NEW KEY@SEQ>NEW ...", each key retired by the
// key-rotate record at sequence SEQ, which announced NEW. `verify` finds the
// retirements itself (from the key-rotate records); this copy lets a writer
// that reads only the log's last line refuse to go on signing with a retired
// key. The last line of every write carries it forward (the newest
// kMaxOldKeys entries).
inline constexpr size_t kMaxOldKeys = 16;
struct RetiredKey {
  uint64_t sequence = 0;
  std::string new_key_id;
};
// Each well-formed entry of `old_keys`, as (retired key id, retirement).
std::vector<std::pair<std::string, RetiredKey>> RetiredKeys(std::string_view old_keys);
std::optional<RetiredKey> FindRetiredKey(std::string_view old_keys, std::string_view key_id);
// `old_keys` with the retirement of `key_id` at `sequence` appended.
std::string AddRetiredKey(std::string_view old_keys, std::string_view key_id, uint64_t sequence,
                          std::string_view new_key_id);

// Reads the tail of the log in `fd` (size `size`). A last complete line that
// does not parse, whose hash does not recompute, or that claims one of
// `own_keys` with a signature that does not verify is an error: the writer
// refuses to chain onto a damaged or forged log. An unsigned last line sets
// last_unverified (see AuditLog::Impl::Plan for why that is not an error).
Result<Tail> ReadTail(int fd, uint64_t size, const std::vector<PublicKey>& own_keys);

// Returns the audit line inside `text`: itself, or the "event" member of a
// Splunk HEC envelope {"event":{...},...}.
Result<std::string_view> UnwrapLine(std::string_view text);

class FileSink {
 public:
  // Opens or creates (0600) the log without following a symlink at `path`;
  // refuses a file that is not regular, not owned by our euid, or writable
  // by group or others (see CheckLogFile).
  static Result<std::unique_ptr<FileSink>> Open(const std::string& path);
  ~FileSink();

  // flock + reopen if the path was rotated away + tail (cached when nobody
  // else wrote since our last append). `own_keys`: see ReadTail.
  Result<Tail> Lock(const std::vector<PublicKey>& own_keys);
  // Called locked: cuts the file back to `end` bytes (drops a torn fragment
  // after the last complete line).
  Status TruncateTo(uint64_t end);
  // One write(2) for everything in `bytes`; ENOSPC and short writes are errors.
  Status Write(std::string_view bytes);
  Status Sync();
  // `written_tail`: the chain's tail after an append that fully succeeded,
  // cached for our next Lock; nullptr after any failure, so that the next
  // Lock reads the tail from the file. (A cache kept across a failed append
  // would hand back the tail from before another writer's lines, and our next
  // lines would reuse sequence numbers already on disk.)
  void Unlock(const Tail* written_tail);
  // Called locked: renames the current file to `archive` and installs `first_line`
  // as the first line of a fresh file at the path.
  Status Rotate(const std::string& archive, std::string_view first_line);
  uint64_t size() const { return known_end_; }
  const std::string& path() const { return path_; }

 private:
  Status Reopen();
  std::string path_;
  int fd_ = -1;
  uint64_t known_end_ = 0;       // file size after our last append
  bool have_cache_ = false;
  Tail cached_tail_;
};

enum class StreamKind { kStdout, kSyslogUnix, kSyslogTcp, kSyslogUdp };

class StreamSink {
 public:
  // address: "-" for stdout, or "unix:/dev/log", "tcp:HOST:PORT", "udp:HOST:PORT".
  static Result<std::unique_ptr<StreamSink>> Open(std::string_view address, std::string app_name,
                                                  std::string host_name);
  ~StreamSink();
  // Each element is one line (ending in '\n'); severity_ids per line for PRI.
  Status Write(const std::vector<std::string>& lines, const std::vector<int>& severity_ids);

 private:
  std::string Frame(std::string_view line, int severity_id) const;
  StreamKind kind_ = StreamKind::kStdout;
  int fd_ = -1;
  std::string app_name_;
  std::string host_name_;
};

// RFC 5424 header + the JSON as MSG:
// "<PRI>1 TIMESTAMP HOST APP PROCID audit - {json}".
std::string Rfc5424Message(std::string_view line, int severity_id, std::string_view host,
                           std::string_view app, int pid);

// {"event":<line>,"host":H,"source":"cocoon","sourcetype":"cocoon:audit","time":"S.mmm"}
std::string WrapHec(std::string_view line_without_newline, int64_t time_ms, std::string_view host);

}  // namespace cocoon::audit
