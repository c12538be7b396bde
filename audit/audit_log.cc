// AuditLog: one serialised writer per process; flock + tail re-read across
// processes. See audit_log.h for the line format and record.h for hashing.
#include "audit/audit_log.h"

#include <pwd.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>
#include <optional>


#include "audit/event_common.h"
#include "audit/record.h"
#include "audit/sink.h"
#include "audit/worker_pool.h"
#include "compiler/common/log.h"

namespace cocoon::audit {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch()).count();
}

// 128 random bits in hex: a chain id or a writer session id.
Result<std::string> RandomId(std::string_view what) {
  uint8_t bytes[16];
  if (getrandom(bytes, sizeof bytes, 0) != sizeof bytes) return ErrnoError("getrandom for the audit " + std::string(what));
  return HexEncode(bytes, sizeof bytes);
}

Identity CurrentIdentity(const std::string& host_override) {
  Identity id;
  id.pid = getpid();
  id.uid = getuid();
  struct passwd pw, *found = nullptr;
  char buffer[4096];
  if (getpwuid_r(id.uid, &pw, buffer, sizeof buffer, &found) == 0 && found) id.user_name = pw.pw_name;
  if (host_override.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    id.host_name = host;
  } else {
    id.host_name = host_override;
  }
  return id;
}

}  // namespace

// One record to be written: a user event or a lifecycle record.
struct Pending {
  json event;                                     // when not yet rendered
  std::shared_ptr<const RenderedEvent> rendered;  // from the event builders
  std::string kind = "event";
  std::map<std::string, json> extra;
  bool user = true;
};

// The finished lines of one write, in one buffer that is reused from batch to
// batch (a fresh 800 KB string is mmap'd and page-faulted every time).
struct Batch {
  std::string bytes;
  std::vector<size_t> ends;  // line i is bytes[ends[i-1], ends[i]), '\n' included
  std::vector<int> severities;
  std::string_view Line(size_t i) const {
    size_t begin = i == 0 ? 0 : ends[i - 1];
    return std::string_view(bytes).substr(begin, ends[i] - begin);
  }
};

class AuditLog::Impl {
 public:
  AuditLogOptions options;
  SigningKey key;
  // Every key this process has signed with (the current one last): a tail
  // line claiming one of them must carry a signature that verifies.
  std::vector<PublicKey> own_keys;
  Identity identity;
  std::unique_ptr<FileSink> file;
  std::unique_ptr<StreamSink> stream;
  bool hec = false;
  std::unique_ptr<WorkerPool> pool;
  std::mutex mu;
  Tail stream_tail;
  std::string chain_id;
  // This writer's session (random, one per Open): every lifecycle record it
  // writes names it, so `verify` can pair each start with its seal however
  // the sessions of concurrent writers interleave.
  std::string session_id;
  uint64_t lines_since_checkpoint = 0;
  Clock::time_point last_checkpoint = Clock::now();
  bool closed = false;

  Pending Lifecycle(std::string_view kind, std::string message) {
    Pending p;
    p.event = LifecycleEvent(kind, options.path, message);
    p.kind = std::string(kind);
    p.user = false;
    p.extra["log_session"] = session_id;
    // Each writer declares, in its signed start (or continue) record, how
    // often it signs: `verify` accepts an unsigned event line only under a
    // key whose writer declared lines_per_sig > 1.
    if (kind == "start" || kind == "continue") p.extra["lines_per_sig"] = options.sign_every;
    return p;
  }

  Pending Recovery(const Tail& tail);

  uint64_t CheckpointInterval() const {
    return options.sign_every > 1 ? options.sign_every : options.checkpoint_every_lines;
  }

  Result<std::vector<EventRef>> Write(std::vector<Pending> records);

 private:
  std::vector<Pending> Plan(std::vector<Pending> records, const Tail& tail);
  Status Render(std::vector<Pending>& plan, Tail& tail, std::vector<EventRef>& refs, Batch& out);
  Status Emit(const Batch& batch);
  Status MaybeRotate(Tail& tail);
  Status CheckKeyNotRetired(const Tail& tail, const std::vector<Pending>& records) const;
  Batch batch_;
  // Batch slot i's working state, reused from batch to batch like batch_.
  std::vector<std::unique_ptr<LineHasher>> hashers_;  // SHA-256 context
  std::vector<PreparedLine> lines_;                   // its preimage keeps its capacity
};

// The signed record that owns up to a tail this writer could not vouch for.
// A fragment (bytes after the last newline: a torn write, or bytes someone
// appended) is cut from the file by Write(), so no SIEM ingests it as a line;
// its length, SHA-256 and first kMaxKeptFragment bytes live on here. An
// unsigned last line stays (it is chained to) but is named unverified.
// Either way `verify` exits with its own code (kRecovered) so that an
// operator looks at it: a writer cannot tell a crash from a forgery.
Pending AuditLog::Impl::Recovery(const Tail& tail) {
  constexpr size_t kMaxKeptFragment = 4096;
  std::string message;
  Pending recovery = Lifecycle("recovery", "");
  if (tail.partial) {
    const std::string& fragment = *tail.partial;
    size_t kept = std::min(fragment.size(), kMaxKeptFragment);
    message = std::to_string(fragment.size()) + " bytes without a newline at the end of the log (a torn write, " +
              "or bytes appended by someone else) were removed; the first " + std::to_string(kept) +
              " are kept in integrity.partial_base64";
    recovery.extra["partial_bytes"] = fragment.size();
    Digest digest = LineHash(fragment);
    recovery.extra["partial_sha256"] = HexEncode(digest.data(), digest.size());
    recovery.extra["partial_base64"] =
        Base64Encode(reinterpret_cast<const uint8_t*>(fragment.data()), kept);
  }
  if (tail.last_unverified) {
    if (!message.empty()) message += "; ";
    message += "the line before this record (seq " + std::to_string(tail.next_sequence - 1) +
               ") has no signature, so this writer could not vouch for it";
    recovery.extra["last_unverified"] = true;
  }
  recovery.event["message"] = message;
  return recovery;
}

// Adds the records the chain needs around the caller's: a start record on an
// empty log, recovery after a tail this writer cannot vouch for, checkpoints.
std::vector<Pending> AuditLog::Impl::Plan(std::vector<Pending> records, const Tail& tail) {
  std::vector<Pending> plan;
  plan.reserve(records.size() + 3 + records.size() / std::max<uint64_t>(1, CheckpointInterval()));
  size_t first = 0;  // a log's first line must be its start record, even before a recovery
  if (tail.empty) {
    if (!records.empty() && records.front().kind == "start") plan.push_back(std::move(records[first++]));
    else plan.push_back(Lifecycle("start", "audit log started"));
  }
  if (tail.partial || tail.last_unverified) plan.push_back(Recovery(tail));
  uint64_t interval = CheckpointInterval();
  for (size_t r = first; r < records.size(); ++r) {
    plan.push_back(std::move(records[r]));
    ++lines_since_checkpoint;
    if (interval != 0 && lines_since_checkpoint + 1 >= interval && plan.back().kind == "event") {
      Pending checkpoint = Lifecycle("checkpoint", "checkpoint");
      checkpoint.extra["lines"] = lines_since_checkpoint;
      plan.push_back(std::move(checkpoint));
      lines_since_checkpoint = 0;
      last_checkpoint = Clock::now();
    }
  }
  bool timed = options.checkpoint_every_seconds != 0 &&
               Clock::now() - last_checkpoint >= std::chrono::seconds(options.checkpoint_every_seconds);
  if (timed && !plan.empty() && plan.back().kind == "event") {
    Pending checkpoint = Lifecycle("checkpoint", "checkpoint (time)");
    checkpoint.extra["lines"] = lines_since_checkpoint;
    plan.push_back(std::move(checkpoint));
    lines_since_checkpoint = 0;
    last_checkpoint = Clock::now();
  }
  return plan;
}

// Canonicalise and hash each line's chain-independent head in parallel,
// finish the chain hashes sequentially, then sign and lay out in parallel.
Status AuditLog::Impl::Render(std::vector<Pending>& plan, Tail& tail, std::vector<EventRef>& refs, Batch& out) {
  if (tail.empty) {
    COCOON_ASSIGN_OR_RETURN(tail.chain_id, RandomId("chain id"));
    tail.next_sequence = 0;
    tail.last_hash = Digest{};
  }
  int64_t now = NowMs();
  std::string timestamp = IsoTimestamp(now);  // one per batch
  // Checked once per batch, not per line: they are spliced into every line raw.
  for (std::string_view id : {std::string_view(tail.chain_id), std::string_view(key.key_id())}) {
    if (id.find_first_of("\"\\") != std::string_view::npos)
      return InternalError("audit chain and key ids must be plain ASCII");
  }
  // The keys retired so far ride on the batch's last line (the only line the
  // next writer reads); a key-rotate record is itself the retirement of the
  // key that signs it, so the next reader adds it when it is the last line.
  std::string old_keys = tail.old_keys;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (i + 1 == plan.size() && !old_keys.empty()) plan[i].extra["old_keys"] = old_keys;
    if (plan[i].kind != "key-rotate") continue;
    auto new_key_id = plan[i].extra.find("new_key_id");
    old_keys = AddRetiredKey(old_keys, key.key_id(), tail.next_sequence + i,
                             new_key_id != plan[i].extra.end() && new_key_id->second.is_string()
                                 ? new_key_id->second.get<std::string>()
                                 : std::string());
  }
  std::vector<int>& severities = out.severities;
  std::vector<Status> prepare_errors(plan.size());
  if (lines_.size() < plan.size()) lines_.resize(plan.size());
  std::vector<PreparedLine>& prepared = lines_;
  severities.assign(plan.size(), 1);
  while (hashers_.size() < plan.size()) {  // one per line of the largest batch so far
    hashers_.push_back(std::make_unique<LineHasher>());
    if (!hashers_.back()->ok()) {
      hashers_.pop_back();
      return InternalError("OpenSSL could not allocate a SHA-256 context");
    }
  }
  pool->ParallelFor(plan.size(), 64, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      if (!plan[i].rendered) {  // lifecycle records and hand-made events
        auto rendered = RenderEvent(plan[i].event);
        if (!rendered.ok()) {
          prepare_errors[i] = rendered.status();
          continue;
        }
        plan[i].rendered = std::move(*rendered);
        plan[i].event = json();  // free the DOM here, in parallel
      }
      LineContext context;
      context.chain_id = tail.chain_id;
      context.sequence = tail.next_sequence + i;
      context.key_id = key.key_id();
      context.kind = plan[i].kind;
      context.time_ms = now;
      context.timestamp = timestamp;
      // Even with sign_every > 1, the last line of every write is signed (and
      // every line when each is written on its own): the next writer, maybe
      // another process, then never finds an unsigned tail it cannot vouch for.
      context.signed_line = options.sign_every <= 1 || plan[i].kind != "event" || i + 1 == plan.size() ||
                            options.fsync == FsyncPolicy::kPerEvent;
      if (!plan[i].extra.empty()) context.extra = &plan[i].extra;
      prepare_errors[i] = PrepareLineInto(*plan[i].rendered, context, identity, HashMode::kDeferred, prepared[i]);
      severities[i] = plan[i].rendered->severity_id;
      // The bytes before integrity.prev do not depend on the chain: hash them
      // here, on every core, so the sequential pass below hashes only the rest.
      if (prepare_errors[i].ok()) StartChainHash(prepared[i], *hashers_[i]);
    }
  });
  Digest prev = tail.last_hash;
  for (size_t i = 0; i < plan.size(); ++i) {
    if (!prepare_errors[i].ok()) return prepare_errors[i].WithContext("audit event");
    ChainLine(prepared[i], prev, *hashers_[i]);
    prev = prepared[i].hash;
  }
  // Every line's place in the batch buffer is known from its size, so the
  // lines are signed and finished in parallel, each straight into its place
  // (the buffer keeps its capacity from batch to batch).
  out.ends.resize(plan.size());
  std::vector<size_t> ref_at(plan.size(), SIZE_MAX);
  size_t total = 0;
  for (size_t i = 0; i < plan.size(); ++i) {
    total += FinishedSize(prepared[i]);
    out.ends[i] = total;
    if (plan[i].user) {
      ref_at[i] = refs.size();
      refs.emplace_back();
    }
  }
  out.bytes.resize(total);
  std::vector<Status> errors(plan.size());
  pool->ParallelFor(plan.size(), options.sign_every <= 1 ? 4 : 64, [&](size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const PreparedLine& line = prepared[i];
      Signature signature{};
      if (line.signed_line) {
        auto signed_hash = key.Sign(line.hash);
        if (!signed_hash.ok()) {
          errors[i] = signed_hash.status();
          continue;
        }
        signature = *signed_hash;
      }
      char* at = out.bytes.data() + (i == 0 ? 0 : out.ends[i - 1]);
      if (WriteFinishedLine(line, line.signed_line ? &signature : nullptr, at) != out.bytes.data() + out.ends[i])
        errors[i] = InternalError("audit line size differs from its reserved size");
      if (ref_at[i] != SIZE_MAX)
        refs[ref_at[i]] = EventRef{line.sequence, tail.chain_id + ":" + std::to_string(line.sequence),
                                   HexEncode(line.hash.data(), line.hash.size())};
    }
  });
  for (const auto& error : errors) COCOON_RETURN_IF_ERROR(error);
  if (hec) {  // rare sink: wrap each line in the Splunk HEC envelope
    std::string wrapped;
    std::vector<size_t> ends;
    for (size_t i = 0; i < plan.size(); ++i) {
      std::string_view line = out.Line(i);
      wrapped += WrapHec(line.substr(0, line.size() - 1), now, identity.host_name);
      wrapped += '\n';
      ends.push_back(wrapped.size());
    }
    out.bytes = std::move(wrapped);
    out.ends = std::move(ends);
  }
  // Keep working state for ordinary batches only: one huge batch must not
  // pin its memory for the life of the log.
  constexpr size_t kKeptSlots = 4096;
  if (lines_.size() > kKeptSlots) lines_.resize(kKeptSlots);
  if (hashers_.size() > kKeptSlots) hashers_.resize(kKeptSlots);
  tail.empty = false;
  tail.partial.reset();           // cut away and recorded by this batch
  tail.last_unverified = false;   // this batch ends in our own signed line
  tail.next_sequence += plan.size();
  tail.last_hash = prev;
  tail.old_keys = std::move(old_keys);
  if (!plan.empty()) tail.last_kind = plan.back().kind;
  return Status::Ok();
}

Status AuditLog::Impl::Emit(const Batch& batch) {
  if (stream) {
    std::vector<std::string> lines;
    for (size_t i = 0; i < batch.ends.size(); ++i) lines.emplace_back(batch.Line(i));
    return stream->Write(lines, batch.severities);
  }
  if (options.fsync == FsyncPolicy::kPerEvent) {
    for (size_t i = 0; i < batch.ends.size(); ++i) {
      COCOON_RETURN_IF_ERROR(file->Write(batch.Line(i)));
      COCOON_RETURN_IF_ERROR(file->Sync());
    }
    return Status::Ok();
  }
  // One write(2) for the whole batch: never interleaved with other appenders.
  COCOON_RETURN_IF_ERROR(file->Write(batch.bytes));
  if (options.fsync == FsyncPolicy::kPerBatch) COCOON_RETURN_IF_ERROR(file->Sync());
  return Status::Ok();
}

Status AuditLog::Impl::MaybeRotate(Tail& tail) {
  if (!file || options.rotate_bytes == 0 || file->size() < options.rotate_bytes) return Status::Ok();
  std::string archive = options.path + "." + std::to_string(NowMs()) + "-" + std::to_string(tail.next_sequence);
  std::vector<Pending> rotate;
  rotate.push_back(Lifecycle("rotate", "rotated to " + archive + "; the chain continues in " + options.path));
  rotate.back().extra["next_file"] = options.path;
  std::vector<EventRef> refs;
  Batch batch;
  COCOON_RETURN_IF_ERROR(Render(rotate, tail, refs, batch));
  COCOON_RETURN_IF_ERROR(Emit(batch));
  COCOON_RETURN_IF_ERROR(file->Sync());
  std::vector<Pending> first;
  first.push_back(Lifecycle("continue", "continues the chain from " + archive));
  first.back().extra["origin_file"] = archive;
  COCOON_RETURN_IF_ERROR(Render(first, tail, refs, batch));
  return file->Rotate(archive, batch.Line(0));
}

// After a key-rotate record only the key it announced may sign (`verify`
// calls a line signed with the retired key tampered): a writer that still
// holds the old key, or is asked to rotate to a retired one, stops here.
Status AuditLog::Impl::CheckKeyNotRetired(const Tail& tail, const std::vector<Pending>& records) const {
  if (tail.old_keys.empty()) return Status::Ok();
  const std::string where = file ? "audit log " + file->path() : std::string("audit log");
  if (auto retired = FindRetiredKey(tail.old_keys, key.key_id())) {
    return FailedPreconditionError(where + ": its signing key " + key.key_id() +
                                   " was rotated out by the key-rotate record at seq " +
                                   std::to_string(retired->sequence) + " (the new key is " + retired->new_key_id +
                                   "): lines signed with the retired key would verify as tampered. Use the new key "
                                   "(--audit-key / COCOON_AUDIT_KEY), or start a new log");
  }
  for (const Pending& record : records) {
    auto new_key_id = record.extra.find("new_key_id");
    if (record.kind != "key-rotate" || new_key_id == record.extra.end() || !new_key_id->second.is_string()) continue;
    if (auto retired = FindRetiredKey(tail.old_keys, new_key_id->second.get<std::string>())) {
      return FailedPreconditionError(where + ": cannot rotate to key " + new_key_id->second.get<std::string>() +
                                     ", which the key-rotate record at seq " + std::to_string(retired->sequence) +
                                     " retired; generate a new key (cocoon audit keygen)");
    }
  }
  return Status::Ok();
}

Result<std::vector<EventRef>> AuditLog::Impl::Write(std::vector<Pending> records) {
  if (closed) return FailedPreconditionError("audit log is closed");
  Tail tail;
  if (file) {
    COCOON_ASSIGN_OR_RETURN(tail, file->Lock(own_keys));
  } else {
    tail = stream_tail;
  }
  std::optional<size_t> fragment;
  if (tail.partial) fragment = tail.partial->size();
  Status status = CheckKeyNotRetired(tail, records);
  std::vector<EventRef> refs;
  std::vector<Pending> plan;
  if (status.ok()) {
    plan = Plan(std::move(records), tail);
    status = Render(plan, tail, refs, batch_);
  }
  // Still under the lock every appender takes: cut the fragment away, then
  // write its recovery record at once (rendered above, so the window in which
  // a crash would lose the fragment with no record of it is one syscall).
  if (status.ok() && file && fragment) status = file->TruncateTo(file->size() - *fragment);
  if (status.ok()) status = Emit(batch_);
  // Never right after a seal: rotate, continue after it would leave the
  // honestly closed log ending in a continue record, never verified sealed.
  // The file may exceed rotate_bytes by the seal; the next writer rotates it
  // after its first write.
  const bool sealed = !plan.empty() && plan.back().kind == "seal";
  if (status.ok() && !sealed) status = MaybeRotate(tail);
  if (file) {
    file->Unlock(status.ok() ? &tail : nullptr);
  } else if (status.ok()) {
    stream_tail = tail;
  }
  if (!status.ok()) return status;
  chain_id = tail.chain_id;
  return refs;
}

Result<std::unique_ptr<AuditLog>> AuditLog::Open(const AuditLogOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (options.sign_every == 0) return InvalidArgumentError("audit sign_every must be at least 1");
  if (options.key_path.empty())
    return InvalidArgumentError("the audit log needs a signing key (create one with `cocoon audit keygen --out PATH`)");
  COCOON_ASSIGN_OR_RETURN(impl->key, SigningKey::LoadPem(options.key_path));
  COCOON_ASSIGN_OR_RETURN(impl->session_id, RandomId("session id"));
  impl->own_keys.push_back(impl->key.public_key());
  impl->identity = CurrentIdentity(options.host_name);
  COCOON_RETURN_IF_ERROR(RenderIdentity(impl->identity));
  impl->pool = std::make_unique<WorkerPool>(options.signer_threads);
  impl->hec = options.sink == SinkKind::kSplunkHecFile;
  bool to_stdout = options.path == "-";
  if (options.sink == SinkKind::kSyslog) {
    COCOON_ASSIGN_OR_RETURN(impl->stream, StreamSink::Open(options.syslog_address, options.syslog_app_name,
                                                           impl->identity.host_name));
  } else if (options.sink == SinkKind::kStdout || to_stdout) {
    COCOON_ASSIGN_OR_RETURN(impl->stream, StreamSink::Open("-", "", impl->identity.host_name));
  } else {
    if (options.path.empty()) return InvalidArgumentError("audit log path is empty");
    COCOON_ASSIGN_OR_RETURN(impl->file, FileSink::Open(options.path));
  }
  std::vector<Pending> start;
  start.push_back(impl->Lifecycle("start", "audit log opened by cocoon pid " + std::to_string(getpid())));
  COCOON_ASSIGN_OR_RETURN(auto refs, impl->Write(std::move(start)));
  (void)refs;
  return std::unique_ptr<AuditLog>(new AuditLog(std::move(impl)));
}

AuditLog::AuditLog(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

AuditLog::~AuditLog() {
  if (impl_ && !impl_->closed) {
    Status status = Close();
    if (!status.ok()) log::Error("closing audit log: " + status.ToString());
  }
}

Result<EventRef> AuditLog::Append(Event event) {
  std::vector<Event> one;
  one.push_back(std::move(event));
  COCOON_ASSIGN_OR_RETURN(auto refs, AppendBatch(std::move(one)));
  return refs.front();
}

Result<std::vector<EventRef>> AuditLog::AppendBatch(std::vector<Event> events) {
  std::vector<Pending> records(events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].rendered) {
      // The rendered body is what gets written: an edit of `fields` after
      // the builder ran would be silently lost, so it is refused instead.
      if (!events[i].fields.empty())
        return InvalidArgumentError("audit event: fields set on an event a builder already rendered; "
                                    "make a hand-made Event from EventFields(event) instead");
      records[i].rendered = std::move(events[i].rendered);
      continue;
    }
    const json& fields = events[i].fields;
    if (!fields.is_object()) return InvalidArgumentError("audit event must be a JSON object");
    auto cocoon = fields.find("cocoon");
    if (cocoon != fields.end() && cocoon->is_object() && cocoon->contains("integrity"))
      return InvalidArgumentError("audit events may not set cocoon.integrity");
    records[i].event = std::move(events[i].fields);
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->Write(std::move(records));
}

Result<EventRef> AuditLog::Checkpoint() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  std::vector<Pending> records;
  records.push_back(impl_->Lifecycle("checkpoint", "checkpoint (requested)"));
  records.back().extra["lines"] = impl_->lines_since_checkpoint;
  records.back().user = true;
  impl_->lines_since_checkpoint = 0;
  COCOON_ASSIGN_OR_RETURN(auto refs, impl_->Write(std::move(records)));
  return refs.front();
}

Status AuditLog::RotateKey(const std::string& new_key_path) {
  COCOON_ASSIGN_OR_RETURN(SigningKey next, SigningKey::LoadPem(new_key_path));
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (next.key_id() == impl_->key.key_id())
    return InvalidArgumentError("the new audit key " + new_key_path + " is the key the log is signed with already");
  std::vector<Pending> records;
  records.push_back(impl_->Lifecycle("key-rotate", "signing key rotated to " + next.key_id()));
  records.back().extra["new_key"] = next.public_key().Base64();
  records.back().extra["new_key_id"] = next.key_id();
  COCOON_ASSIGN_OR_RETURN(auto refs, impl_->Write(std::move(records)));  // signed by the old key
  (void)refs;
  impl_->own_keys.push_back(next.public_key());
  impl_->key = std::move(next);
  return Status::Ok();
}

Status AuditLog::Close() {
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->closed) return Status::Ok();
  std::vector<Pending> records;
  records.push_back(impl_->Lifecycle("seal", "audit log sealed by cocoon pid " + std::to_string(getpid())));
  auto refs = impl_->Write(std::move(records));
  impl_->closed = true;
  if (impl_->file) {
    Status synced = impl_->file->Sync();
    if (refs.ok() && !synced.ok()) return synced;
  }
  return refs.ok() ? Status::Ok() : refs.status();
}

const AuditLogOptions& AuditLog::options() const { return impl_->options; }
std::string AuditLog::chain_id() const { return impl_->chain_id; }

Result<SinkKind> ParseSinkKind(std::string_view name) {
  if (name == "file") return SinkKind::kFile;
  if (name == "-" || name == "stdout") return SinkKind::kStdout;
  if (name == "syslog") return SinkKind::kSyslog;
  if (name == "hec") return SinkKind::kSplunkHecFile;
  return InvalidArgumentError("unknown audit sink '" + std::string(name) + "' (file, stdout, syslog, hec)");
}

Result<FsyncPolicy> ParseFsyncPolicy(std::string_view name) {
  if (name == "none") return FsyncPolicy::kNone;
  if (name == "batch") return FsyncPolicy::kPerBatch;
  if (name == "event") return FsyncPolicy::kPerEvent;
  return InvalidArgumentError("unknown fsync policy '" + std::string(name) + "' (none, batch, event)");
}

}  // namespace cocoon::audit
