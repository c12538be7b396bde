#include "audit/sink.h"

#include <fcntl.h>
#include <netdb.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstring>

#include "audit/jcs.h"
#include "audit/record.h"
#include "compiler/common/temp_name.h"
#include "enforcer/workdir/host_path.h"

namespace cocoon::audit {
namespace {

constexpr uint64_t kMaxLineBytes = 16ull << 20;

Status ReadAt(int fd, uint64_t offset, size_t size, std::string* out) {
  out->resize(size);
  size_t done = 0;
  while (done < size) {
    ssize_t n = pread(fd, out->data() + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("reading the audit log tail");
    if (n == 0) return DataLossError("audit log shrank while reading its tail");
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("writing audit log");
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

// The log must be ours alone: a regular file (not a FIFO or device another
// user points us at), owned by our euid, and writable by nobody else (anyone
// who can write it can append forged lines or torn fragments).
Status CheckLogFile(int fd, const std::string& path) {
  struct stat st;
  if (fstat(fd, &st) != 0) return ErrnoError("audit log " + path + ": fstat");
  if (!S_ISREG(st.st_mode))
    return InvalidArgumentError("audit log " + path + " is not a regular file; give the path of a log file");
  if (st.st_uid != geteuid())
    return PermissionDeniedError("audit log " + path + " is owned by uid " + std::to_string(st.st_uid) +
                                 ", not by this process (euid " + std::to_string(geteuid()) +
                                 "); move it aside or chown it to the user that writes the log");
  if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return PermissionDeniedError("audit log " + path + " is writable by group or others (mode " + mode +
                                 "); run `chmod go-w " + path + "` (cocoon creates it 0600)");
  }
  // Another name for the log (a hard link in a work dir or a bound
  // directory) would let a sandbox read every run's record or rewrite it,
  // past the launch's path checks. Cocoon never links its logs (rotation
  // renames), so a second link was made by someone else.
  if (st.st_nlink > 1)
    return PermissionDeniedError("audit log " + path + " has " + std::to_string(st.st_nlink) +
                                 " hard links: through another name (in a directory a sandbox is shown) the record "
                                 "could be read or rewritten. Remove the other names (`find / -xdev -samefile " +
                                 path + "`), or move the file aside and start a new log");
  return Status::Ok();
}

// What ssh's StrictModes asks of ~/.ssh, asked of the log's directories:
// whoever can write to a directory on the way can swap the log (or a
// directory below, for a symlink) between two writes, and cocoon, often
// root, would then append to, rotate into or truncate a file of their
// choosing, or leave its record where they can edit it. So each directory
// from / down to the log's must be owned by root or by us and writable by
// nobody else, unless sticky (/tmp: then only the log itself matters, and
// CheckLogFile wants it ours). Symlinks on the way are resolved first as the
// work dir's are (enforcer/workdir/host_path.h: as root, only root's), and
// the log is then opened with no symlink allowed anywhere (openat2
// RESOLVE_NO_SYMLINKS). Returns the resolved path to open.
Result<std::string> CheckLogDirectories(const std::string& path) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..")
    return InvalidArgumentError("audit log " + path + " names a directory; give the path of a log file");
  auto resolved = enforcer::ResolveHostPath(dir);
  if (!resolved.ok()) return resolved.status().WithContext("audit log " + path + ": its directory");
  const uid_t me = geteuid();
  std::string prefix;
  for (size_t at = 0; at != std::string::npos;) {
    const size_t next = resolved->find('/', at + 1);
    prefix = next == std::string::npos ? *resolved : resolved->substr(0, next);
    if (prefix.empty()) prefix = "/";
    at = next;
    struct stat st;
    if (lstat(prefix.c_str(), &st) != 0) return ErrnoError("audit log " + path + ": " + prefix);
    if (!S_ISDIR(st.st_mode))
      return FailedPreconditionError("audit log " + path + ": " + prefix + " is not a directory (it changed)");
    if (st.st_uid != 0 && st.st_uid != me) {
      return PermissionDeniedError(
          "audit log " + path + ": directory " + prefix + " is owned by uid " + std::to_string(st.st_uid) +
          ", who could swap the log (or a directory on its path) for another file; cocoon (euid " +
          std::to_string(me) + ") writes logs only where every directory is owned by root or by itself: "
          "put the log in such a directory (e.g. /var/log/cocoon), or `chown " + std::to_string(me) + " " + prefix +
          "`");
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (st.st_mode & S_ISVTX) == 0) {
      char mode[8];
      snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
      return PermissionDeniedError("audit log " + path + ": directory " + prefix +
                                   " is writable by group or others (mode " + mode +
                                   ") and not sticky: they could swap the log for another file. Run `chmod go-w " +
                                   prefix + "`, or put the log in a directory only its writer can write");
    }
  }
  return (*resolved == "/" ? std::string() : *resolved) + "/" + name;
}

int SyslogSeverity(int ocsf_severity_id) {
  switch (ocsf_severity_id) {
    case 2: return 5;  // Low -> notice
    case 3: return 4;  // Medium -> warning
    case 4: return 3;  // High -> err
    case 5: return 2;  // Critical -> crit
    case 6: return 1;  // Fatal -> alert
    default: return 6; // Informational/Unknown -> info
  }
}

// Chaining onto a line vouches for it: the next signed line covers it
// through `prev`. So the writer checks what it can before it chains:
//  - signed by one of our own keys: the signature must verify, else the line
//    was forged under our key id and we refuse to extend the log;
//  - signed by a key we do not hold (another writer's, or one rotated away
//    in another process): we cannot check it, but neither do we bless it,
//    because `verify` checks every signature itself against its trusted keys;
//  - unsigned: nothing but the chain protects it, and the chain is exactly
//    what we would extend. Honest writers never leave an unsigned last line
//    (every write ends with a signed line), so the caller records it in a
//    signed recovery record, which `verify` reports with its own exit code.
Status CheckTailSignature(const ParsedIntegrity& line, const std::vector<PublicKey>& own_keys, Tail& tail) {
  if (!line.has_signature) {
    tail.last_unverified = true;
    return Status::Ok();
  }
  for (const PublicKey& key : own_keys) {
    if (line.key_id != key.key_id()) continue;
    if (!key.Verify(line.hash, line.signature))
      return DataLossError("audit log's last line claims our key " + key.key_id() +
                           " but its signature does not verify; refusing to extend a forged log (check it with `cocoon audit "
                           "verify`, keep it as evidence and write to a new log)");
    return Status::Ok();
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::pair<std::string, RetiredKey>> RetiredKeys(std::string_view old_keys) {
  std::vector<std::pair<std::string, RetiredKey>> out;
  size_t begin = 0;
  while (begin < old_keys.size()) {
    size_t end = old_keys.find(' ', begin);
    if (end == std::string_view::npos) end = old_keys.size();
    std::string_view entry = old_keys.substr(begin, end - begin);
    begin = end + 1;
    const size_t at = entry.find('@');
    const size_t arrow = entry.find('>');
    if (at == std::string_view::npos || arrow == std::string_view::npos || arrow < at) continue;
    RetiredKey retired;
    std::string_view sequence = entry.substr(at + 1, arrow - at - 1);
    auto [ptr, ec] = std::from_chars(sequence.data(), sequence.data() + sequence.size(), retired.sequence);
    if (ec != std::errc() || ptr != sequence.data() + sequence.size()) continue;
    retired.new_key_id = std::string(entry.substr(arrow + 1));
    out.emplace_back(std::string(entry.substr(0, at)), std::move(retired));
  }
  return out;
}

std::optional<RetiredKey> FindRetiredKey(std::string_view old_keys, std::string_view key_id) {
  for (auto& [key, retired] : RetiredKeys(old_keys))
    if (key == key_id) return std::move(retired);
  return std::nullopt;
}

std::string AddRetiredKey(std::string_view old_keys, std::string_view key_id, uint64_t sequence,
                          std::string_view new_key_id) {
  std::string out(old_keys);
  if (!out.empty()) out += ' ';
  out += key_id;
  out += '@';
  out += std::to_string(sequence);
  out += '>';
  out += new_key_id;
  // Only the newest entries: the line that carries them stays small. An
  // older retired key that drops off is still refused by `verify`.
  size_t entries = static_cast<size_t>(std::count(out.begin(), out.end(), ' ')) + 1;
  while (entries-- > kMaxOldKeys) out.erase(0, out.find(' ') + 1);
  return out;
}

Result<std::string_view> UnwrapLine(std::string_view text) {
  constexpr std::string_view kHecPrefix = "{\"event\":{";
  if (text.substr(0, kHecPrefix.size()) != kHecPrefix) return text;
  size_t begin = kHecPrefix.size() - 1;
  COCOON_ASSIGN_OR_RETURN(size_t end, SkipJsonValue(text, begin));
  // The envelope around the signed event is not covered by the hash, but a
  // SIEM must still be able to ingest the line, so it has to be exactly what
  // WrapHec writes: valid JSON with host, source, sourcetype and time only.
  // (Found by audit_verify_fuzzer: a lax skip accepted a broken envelope.)
  if (end >= text.size() || text[end] != ',')
    return DataLossError("HEC envelope: expected ',' after the event");
  std::string rest = "{";
  rest.append(text.substr(end + 1));
  auto envelope = nlohmann::json::parse(rest, nullptr, /*allow_exceptions=*/false);
  if (!envelope.is_object()) return DataLossError("HEC envelope is not the JSON object cocoon writes");
  // Every member is type-checked before it is read: json::value(key, default)
  // throws when the key holds another type (found by audit_verify_fuzzer:
  // "source": 0 escaped the verifier as an uncaught type_error).
  auto string_member = [&](const char* key) -> const std::string* {
    auto it = envelope.find(key);
    return it != envelope.end() && it->is_string() ? it->get_ptr<const std::string*>() : nullptr;
  };
  const std::string* source = string_member("source");
  const std::string* sourcetype = string_member("sourcetype");
  bool well_formed = envelope.size() == 4 && string_member("host") != nullptr &&
                     source != nullptr && *source == "cocoon" && sourcetype != nullptr &&
                     *sourcetype == "cocoon:audit" && string_member("time") != nullptr;
  if (!well_formed) return DataLossError("HEC envelope is not the JSON object cocoon writes");
  return text.substr(begin, end - begin);
}

namespace {

// Whether `head`, a file's first bytes, can begin an audit log: every file
// a writer makes begins with a start or continue record, whose canonical
// text begins with its "@timestamp" (keys sorted), bare or inside the
// Splunk HEC envelope. A torn first write leaves a prefix of that.
bool BeginsLikeAuditLog(std::string_view head) {
  constexpr std::string_view kRecord = "{\"@timestamp\":\"";
  constexpr std::string_view kHecRecord = "{\"event\":{\"@timestamp\":\"";
  for (std::string_view start : {kRecord, kHecRecord}) {
    const size_t n = std::min(head.size(), start.size());
    if (n > 0 && head.substr(0, n) == start.substr(0, n)) return true;
  }
  return false;
}

}  // namespace

Result<Tail> ReadTail(int fd, uint64_t size, const std::vector<PublicKey>& own_keys) {
  Tail tail;
  if (size == 0) return tail;
  // Before anything is cut or appended: another file given as the log (a
  // binary without a newline looked like one torn record, and recovery
  // truncated it to nothing) is left as it is.
  std::string head;
  COCOON_RETURN_IF_ERROR(ReadAt(fd, 0, std::min<uint64_t>(size, 32), &head));
  if (!BeginsLikeAuditLog(head))
    return FailedPreconditionError("not an audit log: the file is not empty and does not begin with a Cocoon "
                                   "record; nothing was written to it. Give the path of an audit log, or of a file "
                                   "that does not exist yet");
  uint64_t window = std::min<uint64_t>(size, 64 * 1024);
  std::string data;
  while (true) {
    COCOON_RETURN_IF_ERROR(ReadAt(fd, size - window, window, &data));
    size_t last_nl = data.rfind('\n');
    bool whole_file = window == size;
    if (last_nl != std::string::npos) {
      size_t prev_nl = last_nl == 0 ? std::string::npos : data.rfind('\n', last_nl - 1);
      if (prev_nl != std::string::npos || whole_file) {
        size_t begin = prev_nl == std::string::npos ? 0 : prev_nl + 1;
        if (last_nl + 1 < data.size()) tail.partial = data.substr(last_nl + 1);
        std::string_view line(data.data() + begin, last_nl - begin);
        COCOON_ASSIGN_OR_RETURN(std::string_view inner, UnwrapLine(line));
        auto scanned = ScanCanonicalLine(inner);
        if (!scanned.ok()) return scanned.status().WithContext("audit log's last line is damaged");
        Digest computed;
        auto parsed = ParseIntegrity(inner, *scanned, &computed);
        if (!parsed.ok()) return parsed.status().WithContext("audit log's last line is damaged");
        if (computed != parsed->hash)
          return DataLossError("audit log's last line does not match its hash; refusing to extend a tampered log");
        COCOON_RETURN_IF_ERROR(CheckTailSignature(*parsed, own_keys, tail));
        tail.empty = false;
        tail.chain_id = std::string(parsed->chain);
        tail.next_sequence = parsed->sequence + 1;
        tail.last_hash = parsed->hash;
        tail.last_kind = std::string(parsed->kind);
        if (auto it = parsed->extra.find("old_keys"); it != parsed->extra.end())
          tail.old_keys = std::string(RawString(it->second).value_or(""));
        if (parsed->kind == "key-rotate") {
          auto it = parsed->extra.find("new_key_id");
          std::string_view new_key_id = it == parsed->extra.end() ? "" : RawString(it->second).value_or("");
          tail.old_keys = AddRetiredKey(tail.old_keys, parsed->key_id, parsed->sequence, new_key_id);
        }
        return tail;
      }
    } else if (whole_file) {
      tail.partial = data;  // not one complete line yet
      return tail;
    }
    if (whole_file || window >= kMaxLineBytes) return DataLossError("audit log's last line is too long");
    window = std::min<uint64_t>(size, window * 4);
  }
}

Result<std::unique_ptr<FileSink>> FileSink::Open(const std::string& path) {
  auto sink = std::unique_ptr<FileSink>(new FileSink());
  sink->path_ = path;
  COCOON_RETURN_IF_ERROR(sink->Reopen());
  return sink;
}

FileSink::~FileSink() {
  if (fd_ >= 0) close(fd_);
}

Status FileSink::Reopen() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  // O_APPEND: every write lands at the current end even with other writers
  // (open(2)); O_RDWR because the next writer must read the tail. O_NOFOLLOW:
  // cocoon often runs as root, and a symlink planted at the log path would
  // otherwise make it append to (and, on recovery, truncate) any file.
  // The directories are checked (and their symlinks resolved) on every
  // open, rotations' included; the open itself follows no symlink at all.
  COCOON_ASSIGN_OR_RETURN(const std::string resolved, CheckLogDirectories(path_));
  auto opened = enforcer::OpenResolvedPath(resolved, O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW, 0600);
  if (!opened.ok()) {
    struct stat st;
    if (lstat(resolved.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
      return InvalidArgumentError("audit log " + path_ + " is a symbolic link; refusing to follow it (give the "
                                  "real path, or remove the link)");
    return opened.status().WithContext("audit log " + path_ + ": cannot open for appending");
  }
  fd_ = *opened;
  Status checked = CheckLogFile(fd_, path_);
  if (!checked.ok()) {
    close(fd_);
    fd_ = -1;
    return checked;
  }
  have_cache_ = false;
  return Status::Ok();
}

Result<Tail> FileSink::Lock(const std::vector<PublicKey>& own_keys) {
  for (int attempt = 0; attempt < 16; ++attempt) {
    while (flock(fd_, LOCK_EX) != 0) {
      if (errno != EINTR) return ErrnoError("audit log " + path_ + ": flock");
    }
    struct stat by_fd, by_path;
    if (fstat(fd_, &by_fd) != 0) return ErrnoError("audit log " + path_ + ": fstat");
    // lstat: a symlink swapped in at the path is "not the same file" too, and
    // Reopen (O_NOFOLLOW) then refuses it.
    bool same = lstat(path_.c_str(), &by_path) == 0 && by_path.st_ino == by_fd.st_ino &&
                by_path.st_dev == by_fd.st_dev;
    if (!same) {  // another writer rotated the file away while we waited
      flock(fd_, LOCK_UN);
      COCOON_RETURN_IF_ERROR(Reopen());
      continue;
    }
    uint64_t size = S_ISREG(by_fd.st_mode) ? static_cast<uint64_t>(by_fd.st_size) : 0;
    if (have_cache_ && size == known_end_) return cached_tail_;
    auto tail = ReadTail(fd_, size, own_keys);
    if (!tail.ok()) {
      flock(fd_, LOCK_UN);
      return tail.status().WithContext("audit log " + path_);
    }
    known_end_ = size;
    return tail;
  }
  return InternalError("audit log " + path_ + " keeps being rotated away");
}

Status FileSink::TruncateTo(uint64_t end) {
  if (ftruncate(fd_, static_cast<off_t>(end)) != 0) return ErrnoError("audit log " + path_ + ": ftruncate");
  known_end_ = end;
  have_cache_ = false;
  return Status::Ok();
}

Status FileSink::Write(std::string_view bytes) {
  ssize_t n;
  do {
    n = write(fd_, bytes.data(), bytes.size());
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(bytes.size())) {
    known_end_ += bytes.size();
    return Status::Ok();
  }
  int err = n < 0 ? errno : ENOSPC;  // a short write to a file means the disk is full
  // Undo the torn batch so the log stays whole (we still hold the lock). If
  // this fails too, the next writer finds a partial line and recovers.
  if (n > 0 && ftruncate(fd_, static_cast<off_t>(known_end_)) != 0) known_end_ += static_cast<uint64_t>(n);
  have_cache_ = false;
  return ErrnoError("audit log " + path_ + ": write failed", err);
}

Status FileSink::Sync() {
  if (fdatasync(fd_) != 0 && errno != EINVAL) return ErrnoError("audit log " + path_ + ": fdatasync");
  return Status::Ok();
}

void FileSink::Unlock(const Tail* written_tail) {
  have_cache_ = written_tail != nullptr;
  if (written_tail) cached_tail_ = *written_tail;
  flock(fd_, LOCK_UN);
}

Status FileSink::Rotate(const std::string& archive, std::string_view first_line) {
  std::string temp = path_ + ".new" + UniqueTempSuffix();
  int fd = open(temp.c_str(), O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 && errno == EEXIST) {
    // No live writer uses this name (temp_name.h), and we hold the log's
    // lock besides: a cocoon killed mid-rotation whose pid we now have left it.
    unlink(temp.c_str());
    fd = open(temp.c_str(), O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  }
  if (fd < 0) return ErrnoError("audit log rotation: creating " + temp);
  Status written = WriteAll(fd, first_line);
  if (written.ok() && fdatasync(fd) != 0) written = ErrnoError("audit log rotation: fdatasync");
  if (written.ok() && flock(fd, LOCK_EX) != 0) written = ErrnoError("audit log rotation: flock");
  // Archive first, then install the new file: a writer that waited on the old
  // file's lock sees its inode gone from the path and reopens (Lock()).
  if (written.ok() && rename(path_.c_str(), archive.c_str()) != 0)
    written = ErrnoError("audit log rotation: renaming to " + archive);
  if (written.ok() && rename(temp.c_str(), path_.c_str()) != 0)
    written = ErrnoError("audit log rotation: installing the new file");
  if (!written.ok()) {
    unlink(temp.c_str());
    close(fd);
    return written;
  }
  flock(fd_, LOCK_UN);
  close(fd_);
  fd_ = fd;
  known_end_ = first_line.size();
  return Status::Ok();
}

std::string Rfc5424Message(std::string_view line, int severity_id, std::string_view host, std::string_view app,
                           int pid) {
  constexpr int kFacilityLogAudit = 13;  // RFC 5424 table 1: "log audit"
  int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch()).count();
  std::string out = "<" + std::to_string(kFacilityLogAudit * 8 + SyslogSeverity(severity_id)) + ">1 ";
  out += IsoTimestamp(now_ms);
  out += ' ';
  out += host.empty() ? std::string_view("-") : host;
  out += ' ';
  out += app.empty() ? std::string_view("-") : app;
  out += ' ' + std::to_string(pid) + " audit - ";
  out += line;
  return out;
}

std::string WrapHec(std::string_view line, int64_t time_ms, std::string_view host) {
  std::string out = "{\"event\":";
  out += line;
  out += ",\"host\":";
  auto host_json = Canonicalize(nlohmann::json(std::string(host)));
  out += host_json.ok() ? *host_json : std::string("\"\"");
  char time_text[48];
  snprintf(time_text, sizeof time_text, "%lld.%03lld", static_cast<long long>(time_ms / 1000),
           static_cast<long long>(time_ms % 1000));
  out += ",\"source\":\"cocoon\",\"sourcetype\":\"cocoon:audit\",\"time\":\"";
  out += time_text;
  out += "\"}";
  return out;
}

}  // namespace cocoon::audit
