#include "audit/verifier.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "audit/event_common.h"
#include "audit/jcs.h"
#include "audit/record.h"
#include "audit/sink.h"
#include "audit/worker_pool.h"
#include "compiler/common/strict_json.h"

namespace cocoon::audit {
namespace {

// integrity.kind, named once per line by the parallel pass: the sequential
// chain walk then compares bytes held in the Line, not string_views into a
// line that left the cache long ago (those compares were its main cost).
enum class Kind : uint8_t { kOther, kEvent, kStart, kContinue, kRotate, kSeal, kKeyRotate, kRecovery };

Kind KindOf(std::string_view kind) {
  static constexpr std::pair<std::string_view, Kind> kKinds[] = {
      {"event", Kind::kEvent},   {"start", Kind::kStart}, {"continue", Kind::kContinue},
      {"rotate", Kind::kRotate}, {"seal", Kind::kSeal},   {"key-rotate", Kind::kKeyRotate},
      {"recovery", Kind::kRecovery}};
  for (const auto& [name, value] : kKinds)
    if (kind == name) return value;
  return Kind::kOther;
}

struct Line {
  size_t file = 0;
  uint64_t number = 0;  // 1-based within its file
  std::string_view text;
  std::string normalized;  // --ignore-extra-keys: the re-canonicalised line
  std::vector<std::string> dropped_keys;  // --ignore-extra-keys: the keys it dropped from this line
  std::string error;       // scan/parse failure
  ParsedIntegrity integrity;
  Digest computed{};
  Kind kind = Kind::kOther;
  // start and seal records: the writer session they open or close (see
  // SessionOf).
  std::string session;
  // A copy of integrity.chain when it fits (Cocoon writes 32 hex digits).
  uint8_t chain_size = 0;  // 0: no copy, compare integrity.chain itself
  std::array<char, 40> chain_copy{};
  bool SameChain(const std::string& chain) const {
    if (chain_size == 0) return integrity.chain == chain;
    return chain.size() == chain_size && std::memcmp(chain.data(), chain_copy.data(), chain_size) == 0;
  }
};

struct Failure {
  size_t index = SIZE_MAX;  // into lines; lines.size() means "after the last line"
  std::string reason;
  void Offer(size_t at, std::string why) {
    if (at < index) { index = at; reason = std::move(why); }
  }
};

// True when `text` nests objects/arrays deeper than `limit` (strings skipped).
// Checked before nlohmann parses anything: 100,000 nested '[' inside a Cocoon
// object overflowed the stack of `verify --ignore-extra-keys` (Canonicalize
// walks the DOM recursively).
bool NestsDeeperThan(std::string_view text, size_t limit) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > limit) return true;
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
  }
  return false;
}

// Parses `text`, refusing a duplicate key in any object: nlohmann keeps the
// last of two equal keys, a SIEM may keep the first, so the line the hash
// covers and the line the SIEM shows could differ.
Result<nlohmann::json> ParseWithoutDuplicateKeys(std::string_view text) {
  StrictJson parsed = ParseJsonRejectingDuplicateKeys(text);
  if (parsed.error == StrictJson::Error::kDuplicateKey)
    return DataLossError("duplicate object key (a SIEM may read a different value than the one signed)");
  if (parsed.error == StrictJson::Error::kNulInKey)
    return DataLossError("an object key holds U+0000 (a reader that ends keys at a NUL reads another key)");
  if (!parsed.value.is_object()) return DataLossError("not a JSON object");
  return std::move(parsed.value);
}

// The namespace a dotted `key` ("event.outcome") falls in, when it is one of
// Cocoon's: its first segment is a top-level key Cocoon writes (the only
// keys a signed line keeps here; any other is a shipper's). Elasticsearch, Splunk and Wazuh read the dotted key as
// that path, so it would override a signed field ("event.outcome",
// "severity.x" through the signed string) or add an unsigned one beside them
// ("cocoon.breakout.verdict", "event.severity"), which an analyst cannot
// tell from the signed fields. Only keys outside those namespaces are a
// shipper's own ("host.name", "log.offset").
std::optional<std::string_view> SignedNamespaceOf(std::string_view key) {
  const size_t dot = key.find('.');
  if (dot == std::string_view::npos || !IsCocoonTopLevelKey(key.substr(0, dot))) return std::nullopt;
  return key.substr(0, dot);
}

// Drops top-level keys Cocoon never writes, then re-canonicalises.
// `dropped` gets the top-level keys it removed (--ignore-extra-keys reports
// how many and which).
Result<std::string> Normalize(std::string_view text, std::vector<std::string>& dropped) {
  // The same depth the canonical scanner allows: no Cocoon line nests deeper.
  if (NestsDeeperThan(text, ScanLimits{}.max_depth)) return DataLossError("nesting too deep");
  COCOON_ASSIGN_OR_RETURN(nlohmann::json parsed, ParseWithoutDuplicateKeys(text));
  for (auto it = parsed.begin(); it != parsed.end();) {
    if (IsCocoonTopLevelKey(it.key())) {
      ++it;
      continue;
    }
    // Elasticsearch, Splunk and Wazuh read "event.outcome" as the same field
    // as the signed {"event":{"outcome":...}}: such a key is not a shipper's
    // addition but an edit of a signed object in the SIEM.
    const std::string& key = it.key();
    if (auto space = SignedNamespaceOf(key)) {
      return DataLossError("extra key \"" + key.substr(0, 64) + "\" is in Cocoon's signed namespace \"" +
                           std::string(*space) +
                           "\": a SIEM that reads dotted keys would show it as a field of the signed event "
                           "(overriding or added to it); only keys outside Cocoon's namespaces may be added");
    }
    dropped.push_back(key);
    it = parsed.erase(it);
  }
  return Canonicalize(parsed);
}

// "cocoon pid P on host H", from a lifecycle record's actor and device
// (every writer's lifecycle records carry its own), or "" when they are absent.
std::string DescribeWriter(std::string_view text) {
  nlohmann::json line = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!line.is_object()) return "";
  const nlohmann::json* pid = nullptr;
  const nlohmann::json* host = nullptr;
  if (auto actor = line.find("actor"); actor != line.end() && actor->is_object()) {
    if (auto process = actor->find("process"); process != actor->end() && process->is_object()) {
      if (auto it = process->find("pid"); it != process->end() && it->is_number_integer()) pid = &*it;
    }
  }
  if (auto device = line.find("device"); device != line.end() && device->is_object()) {
    if (auto it = device->find("hostname"); it != device->end() && it->is_string()) host = &*it;
  }
  if (pid == nullptr) return "";
  std::string out = "cocoon pid " + std::to_string(pid->get<int64_t>());
  if (host != nullptr) out += " on host " + host->get<std::string>().substr(0, 64);
  return out;
}

// The writer session a start or seal record belongs to. Each AuditLog (one
// `cocoon run`/`enforce` process, one `cocoon mcp` call) writes its own start
// ... seal into the shared chain, and concurrent writers' sessions
// interleave, so "the last line is a seal" says nothing about the others.
// Since log_session, every lifecycle record names its writer's random
// session id; records of an older cocoon are matched by the writer's pid and
// host (each such pair counts its starts and seals).
std::string SessionOf(const ParsedIntegrity& p, std::string_view text) {
  auto it = p.extra.find("log_session");
  if (it != p.extra.end()) {
    if (auto id = RawString(it->second)) return "id:" + std::string(*id);
  }
  return "legacy:" + DescribeWriter(text);
}

// `scanned` is the calling worker's scratch (reused: no allocation per line).
void Analyse(Line& line, bool ignore_extra_keys, ScannedLine& scanned) {
  auto inner = UnwrapLine(line.text);
  if (!inner.ok()) { line.error = inner.status().message(); return; }
  std::string_view text = *inner;
  if (ignore_extra_keys) {
    auto normalized = Normalize(text, line.dropped_keys);
    if (!normalized.ok()) { line.error = normalized.status().message(); return; }
    line.normalized = std::move(*normalized);
    text = line.normalized;
  }
  Status valid = ScanCanonicalLine(text, scanned);
  if (!valid.ok()) { line.error = valid.message(); return; }
  auto parsed = ParseIntegrity(text, scanned, &line.computed);
  if (!parsed.ok()) { line.error = parsed.status().message(); return; }
  line.integrity = std::move(*parsed);
  line.kind = KindOf(line.integrity.kind);
  if (line.kind == Kind::kStart || line.kind == Kind::kSeal) line.session = SessionOf(line.integrity, text);
  std::string_view chain = line.integrity.chain;
  if (!chain.empty() && chain.size() <= line.chain_copy.size()) {
    std::memcpy(line.chain_copy.data(), chain.data(), chain.size());
    line.chain_size = static_cast<uint8_t>(chain.size());
  }
}

std::string Hex(const Digest& d) { return HexEncode(d.data(), d.size()); }

std::optional<uint64_t> ExtraNumber(const ParsedIntegrity& p, std::string_view key) {
  auto it = p.extra.find(key);
  if (it == p.extra.end()) return std::nullopt;
  try { return std::stoull(std::string(it->second)); } catch (...) { return std::nullopt; }
}
std::optional<std::string_view> ExtraString(const ParsedIntegrity& p, std::string_view key) {
  auto it = p.extra.find(key);
  if (it == p.extra.end()) return std::nullopt;
  return RawString(it->second);
}

// A damaged line is a torn write only if the next line is a recovery record
// that names exactly its length and hash.
bool IsRecoveredFragment(const std::vector<Line>& lines, size_t i) {
  if (i + 1 >= lines.size() || !lines[i + 1].error.empty()) return false;
  const ParsedIntegrity& next = lines[i + 1].integrity;
  if (next.kind != "recovery" || lines[i + 1].file != lines[i].file) return false;
  Digest digest = LineHash(lines[i].text);
  return ExtraNumber(next, "partial_bytes") == lines[i].text.size() &&
         ExtraString(next, "partial_sha256") == Hex(digest);
}

struct SignatureCheck {
  size_t index;
  const PublicKey* key;
};

class ChainWalker {
 public:
  ChainWalker(std::vector<Line>& lines, const std::vector<LogInput>& inputs, const VerifyOptions& options,
              VerifyReport& report)
      : lines_(lines), inputs_(inputs), report_(report) {
    for (const auto& key : options.trusted) trusted_.emplace(key.key_id(), key);
  }

  void Walk(Failure& failure, std::vector<SignatureCheck>& checks);
  std::string last_kind;
  std::string last_next_file;  // a rotate record's next_file
  size_t last_signed = SIZE_MAX;
  size_t last_valid = SIZE_MAX;
  std::vector<std::string> recoveries;  // one description per recovery record
  // "" when every writer session whose start record was read was sealed.
  std::string DescribeUnsealedSessions() const;

 private:
  std::string Where(size_t i) const {
    return inputs_[lines_[i].file].name + ":" + std::to_string(lines_[i].number);
  }
  std::optional<std::string> Link(size_t i, bool first);
  std::optional<std::string> CheckUnsigned(size_t i) const;
  void NoteSigningDeclaration(size_t i);
  std::string DescribeRecovery(size_t i) const;
  void TrackSession(size_t i);
  void NoteEarlierRetirements(size_t i);

  std::vector<Line>& lines_;
  const std::vector<LogInput>& inputs_;
  VerifyReport& report_;
  std::map<std::string, PublicKey, std::less<>> trusted_;
  std::vector<std::unique_ptr<PublicKey>> announced_;
  // Key ids whose writer declared, in a signed start/continue record, that
  // it signs fewer than every line (lines_per_sig > 1).
  std::set<std::string, std::less<>> may_leave_unsigned_;
  // Writer sessions opened (start record read) and not yet sealed: the
  // indices of their start records, by Line::session (a stack: an older
  // cocoon's pid can be reused by a later writer).
  std::map<std::string, std::vector<size_t>, std::less<>> open_sessions_;
  bool from_genesis_ = false;  // the lines begin with the chain's first record
  // Keys a key-rotate record retired: which record, and the key it announced.
  std::map<std::string, std::string, std::less<>> retired_;
  std::string chain_;
  Kind last_kind_ = Kind::kOther;  // last_kind, named
  uint64_t next_seq_ = 0;
  Digest prev_hash_{};
};

// How line i attaches to what came before; nullopt when it does.
std::optional<std::string> ChainWalker::Link(size_t i, bool first) {
  const ParsedIntegrity& p = lines_[i].integrity;
  const Kind kind = lines_[i].kind;
  if (lines_[i].computed != p.hash) return "hash mismatch: the line was edited after it was written";
  if (first) {
    bool genesis = kind == Kind::kStart && p.sequence == 0 && p.prev == Digest{};
    if (!genesis && kind != Kind::kContinue)
      return "the log does not begin with its first record (start, seq 0): lines removed from the head";
    if (!genesis)
      report_.notices.push_back(Where(i) + ": chain " + std::string(p.chain) + " continues from seq " +
                                std::to_string(p.sequence - 1) + " in an earlier file that was not given");
    return std::nullopt;
  }
  if (!lines_[i].SameChain(chain_))
    return "chain id " + std::string(p.chain) + " differs from " + chain_ + ": line replayed from another log";
  if (p.sequence != next_seq_) {
    return "sequence " + std::to_string(p.sequence) + " where " + std::to_string(next_seq_) + " was expected: " +
           (p.sequence > next_seq_ ? "line(s) deleted" : "line inserted, replayed or reordered");
  }
  if (p.prev != prev_hash_) return "prev hash does not match the previous line: line inserted or reordered";
  bool file_start = lines_[i].number == 1 || lines_[i - 1].file != lines_[i].file;
  if (lines_[i].file != lines_[last_valid].file && !(last_kind_ == Kind::kRotate && kind == Kind::kContinue))
    return "file does not continue the previous file (expected a rotation record, then a continue record)";
  if (kind == Kind::kContinue && !(last_kind_ == Kind::kRotate && file_start))
    return "continue record that does not follow a rotation";
  return std::nullopt;
}

// An unsigned line is protected only by the chain, i.e. by whoever signs a
// later line. Lifecycle records are always signed; an event line may be
// unsigned only when the writer that holds its key said it would leave some
// lines unsigned (sign_every > 1). Otherwise it was forged or stripped.
std::optional<std::string> ChainWalker::CheckUnsigned(size_t i) const {
  const ParsedIntegrity& p = lines_[i].integrity;
  if (p.has_signature) return std::nullopt;
  if (lines_[i].kind != Kind::kEvent) return "unsigned " + std::string(p.kind) + " record";
  if (may_leave_unsigned_.find(p.key_id) == may_leave_unsigned_.end())
    return "unsigned event line, but no signed start record of key " + std::string(p.key_id) +
           " declares lines_per_sig > 1 (its writers sign every line): line forged or its signature stripped";
  return std::nullopt;
}

void ChainWalker::NoteSigningDeclaration(size_t i) {
  const ParsedIntegrity& p = lines_[i].integrity;
  if (lines_[i].kind != Kind::kStart && lines_[i].kind != Kind::kContinue) return;
  auto lines_per_sig = ExtraNumber(p, "lines_per_sig");
  if (lines_per_sig && *lines_per_sig > 1) may_leave_unsigned_.emplace(p.key_id);
}

std::string ChainWalker::DescribeRecovery(size_t i) const {
  const ParsedIntegrity& p = lines_[i].integrity;
  std::string what;
  if (auto bytes = ExtraNumber(p, "partial_bytes")) {
    bool kept_as_line = i > 0 && !lines_[i - 1].error.empty();  // written by an older cocoon
    what = std::to_string(*bytes) + " bytes without a newline " +
           (kept_as_line ? "left in the log as line " + std::to_string(lines_[i - 1].number)
                         : std::string("cut from the end of the log (kept in integrity.partial_base64)"));
  }
  if (p.extra.count("last_unverified") != 0) {
    if (!what.empty()) what += "; ";
    what += "the line before it had no signature its writer could check";
  }
  if (what.empty()) what = "a recovery record";
  return Where(i) + ": " + what;
}

void ChainWalker::NoteEarlierRetirements(size_t i) {
  auto old_keys = ExtraString(lines_[i].integrity, "old_keys");
  if (!old_keys) return;
  for (auto& [key_id, retired] : RetiredKeys(*old_keys)) {
    retired_.emplace(key_id, "the key-rotate record at seq " + std::to_string(retired.sequence) +
                                 " (in an earlier file, named by " + Where(i) + ") retired in favour of " +
                                 retired.new_key_id);
  }
}

void ChainWalker::TrackSession(size_t i) {
  const Line& line = lines_[i];
  if (line.kind == Kind::kStart) {
    open_sessions_[line.session].push_back(i);
    return;
  }
  if (line.kind != Kind::kSeal) return;
  auto open = open_sessions_.find(line.session);
  if (open != open_sessions_.end()) {
    open->second.pop_back();
    if (open->second.empty()) open_sessions_.erase(open);
  } else if (from_genesis_) {
    report_.notices.push_back(Where(i) + ": seal of a writer session whose start record is not in the log");
  }
}

std::string ChainWalker::DescribeUnsealedSessions() const {
  std::vector<size_t> starts;
  for (const auto& [session, indices] : open_sessions_) starts.insert(starts.end(), indices.begin(), indices.end());
  if (starts.empty()) return "";
  std::sort(starts.begin(), starts.end());
  auto describe = [this](size_t i) {
    const Line& start = lines_[i];
    auto inner = UnwrapLine(start.text);
    std::string writer = DescribeWriter(!start.normalized.empty() ? std::string_view(start.normalized)
                                        : inner.ok()                ? *inner
                                                                    : start.text);
    const std::string& session = start.session;
    std::string id = session.rfind("id:", 0) == 0 ? "session " + session.substr(3) : "";
    std::string who = writer + (writer.empty() || id.empty() ? "" : ", ") + id;
    return Where(i) + (who.empty() ? "" : " (" + who + ")");
  };
  std::string out = "not sealed: the writer session started at " + describe(starts[0]) +
                    " was never sealed: its writer died or the log was cut (or the writer is still running), so "
                    "its record may be incomplete";
  if (starts.size() > 1) {
    constexpr size_t kListed = 8;
    out += "; " + std::to_string(starts.size() - 1) + " more session(s) never sealed, started at ";
    for (size_t k = 1; k < starts.size() && k <= kListed; ++k) out += (k == 1 ? "" : ", ") + describe(starts[k]);
    if (starts.size() - 1 > kListed) out += ", ...";
  }
  return out;
}

void ChainWalker::Walk(Failure& failure, std::vector<SignatureCheck>& checks) {
  for (size_t i = 0; i < lines_.size(); ++i) {
    Line& line = lines_[i];
    if (!line.error.empty()) {
      if (IsRecoveredFragment(lines_, i)) {
        report_.notices.push_back(Where(i) + ": partial line (" + std::to_string(line.text.size()) +
                                  " bytes) left by a crashed writer; recovered by the next line");
        continue;
      }
      return failure.Offer(i, line.error);
    }
    const ParsedIntegrity& p = line.integrity;
    const bool first = last_valid == SIZE_MAX;
    if (auto broken = Link(i, first)) return failure.Offer(i, *broken);
    if (first) {
      from_genesis_ = line.kind == Kind::kStart && p.sequence == 0;
      // A series given from a later file on: the key-rotate records of the
      // files not given are out of sight, but the first line (a signed
      // continue record) carries their retirements.
      if (!from_genesis_) NoteEarlierRetirements(i);
    }
    if (auto retired = retired_.find(p.key_id); retired != retired_.end()) {
      return failure.Offer(i, "claims key " + std::string(p.key_id) + ", which " + retired->second +
                                  ": after a key rotation only the new key may sign (a writer kept the old key, "
                                  "or whoever holds it appended this)");
    }
    if (auto unsigned_line = CheckUnsigned(i)) return failure.Offer(i, *unsigned_line);
    NoteSigningDeclaration(i);
    if (p.has_signature) {
      auto key = trusted_.find(p.key_id);
      if (key == trusted_.end())
        return failure.Offer(i, "signed by key " + std::string(p.key_id) + ", which is not trusted");
      checks.push_back(SignatureCheck{i, &key->second});
      last_signed = i;
    }
    if (line.kind == Kind::kKeyRotate) {
      std::string raw;
      auto text = ExtraString(p, "new_key");
      auto key = text && Base64Decode(*text, &raw) ? PublicKey::FromRaw(raw) : Result<PublicKey>(DataLossError(""));
      if (!key.ok()) return failure.Offer(i, "key rotation record without a valid new_key");
      if (key->key_id() == p.key_id || retired_.count(key->key_id()) != 0)
        return failure.Offer(i, "key rotation back to " + key->key_id() + ", a key already retired");
      report_.notices.push_back(Where(i) + ": signing key " + std::string(p.key_id) + " retired, rotated to " +
                                key->key_id());
      // The retired key signs nothing after this record, whatever --trust says.
      retired_.emplace(std::string(p.key_id), "the key-rotate record at " + Where(i) + " retired in favour of " +
                                                  key->key_id());
      trusted_.emplace(key->key_id(), *key);
      if (may_leave_unsigned_.count(p.key_id) != 0) may_leave_unsigned_.emplace(key->key_id());
    }
    if (line.kind == Kind::kRecovery) recoveries.push_back(DescribeRecovery(i));
    TrackSession(i);
    if (line.kind == Kind::kRotate) last_next_file = std::string(ExtraString(p, "next_file").value_or("?"));
    if (!line.SameChain(chain_)) {  // once per chain, not per line (no copy on the hot path)
      chain_ = std::string(p.chain);
      report_.chain_id = chain_;
    }
    next_seq_ = p.sequence + 1;
    prev_hash_ = p.hash;
    if (line.kind != last_kind_ || line.kind == Kind::kOther) {  // the name only when it changes
      last_kind_ = line.kind;
      last_kind = std::string(p.kind);
    }
    last_valid = i;
  }
}

// No line Cocoon writes is this short (the chain id, hash and prev alone are
// over 160 bytes of hex; the shortest line, a checkpoint, is about 900). A
// verifier keeps a few hundred bytes per line, so a file of bare newlines
// appended to a log would cost it hundreds of times its size. The lines are
// cut only up to the second of two short lines in a row, which is tampered
// (neither can be a Cocoon line), and nothing after it matters. One short
// line alone is still split and followed: an older cocoon left a torn
// fragment as a line of its own, and the recovery record after it explains it.
constexpr size_t kShortestLine = 256;

// Offsets of the '\n's in `bytes`, in order, up to and including the one
// that ends the second of two short lines in a row (`*cut` is then set):
// memchr over 1 MiB blocks on every core (this first pass also takes the
// page faults of the mapping). One pass: the lines are then cut from these
// offsets, also in parallel. (A line that starts in an earlier block is not
// judged short: at most one line per MiB.)
std::vector<size_t> FindNewlines(std::string_view bytes, WorkerPool& pool, bool* cut) {
  constexpr size_t kBlock = 1 << 20;
  std::vector<std::vector<size_t>> found((bytes.size() + kBlock - 1) / kBlock);
  // Per block, written by one worker each: bytes, not vector<bool>'s shared words.
  std::vector<uint8_t> ends_short(found.size(), 0);
  pool.ParallelFor(found.size(), 1, [&](size_t begin, size_t end) {
    for (size_t block = begin; block < end; ++block) {
      const char* base = bytes.data();
      const char* p = base + block * kBlock;
      const char* stop = base + std::min(bytes.size(), (block + 1) * kBlock);
      bool previous_short = false;
      while (p < stop) {
        const void* nl = std::memchr(p, '\n', static_cast<size_t>(stop - p));
        if (nl == nullptr) break;
        p = static_cast<const char*>(nl);
        const size_t offset = static_cast<size_t>(p - base);
        const bool known_start = !found[block].empty() || block == 0;
        const size_t start = found[block].empty() ? 0 : found[block].back() + 1;
        found[block].push_back(offset);
        const bool is_short = known_start && offset - start < kShortestLine;
        if (is_short && previous_short) {
          ends_short[block] = 1;
          break;
        }
        previous_short = is_short;
        ++p;
      }
    }
  });
  size_t total = 0;
  for (const auto& block : found) total += block.size();
  std::vector<size_t> all;
  all.reserve(total);
  *cut = false;
  for (size_t block = 0; block < found.size(); ++block) {
    all.insert(all.end(), found[block].begin(), found[block].end());
    if (ends_short[block] != 0) {
      *cut = true;
      break;
    }
  }
  return all;
}

std::vector<Line> SplitLines(const std::vector<LogInput>& inputs, WorkerPool& pool, size_t& partial_file) {
  std::vector<std::vector<size_t>> newlines;
  size_t expected = 0;
  bool cut = false;
  for (const auto& input : inputs) {
    newlines.push_back(FindNewlines(input.bytes, pool, &cut));
    expected += newlines.back().size() + 1;
    if (cut) break;  // a line too short to be Cocoon's: nothing after it is looked at
  }
  std::vector<Line> lines;
  lines.reserve(expected);  // once: moving 300,000 Lines on each growth step is not free
  for (size_t f = 0; f < newlines.size(); ++f) {
    std::string_view bytes = inputs[f].bytes;
    const std::vector<size_t>& ends = newlines[f];
    size_t first = lines.size();
    lines.resize(first + ends.size());
    pool.ParallelFor(ends.size(), 4096, [&](size_t begin, size_t end) {
      for (size_t j = begin; j < end; ++j) {
        Line& line = lines[first + j];
        size_t start = j == 0 ? 0 : ends[j - 1] + 1;
        line.file = f;
        line.number = j + 1;
        line.text = bytes.substr(start, ends[j] - start);
      }
    });
    size_t tail = ends.empty() ? 0 : ends.back() + 1;
    if (cut && f + 1 == newlines.size()) break;  // the short line ends the lines looked at
    if (tail < bytes.size()) {  // no newline: a partial last line
      if (partial_file == SIZE_MAX) partial_file = f;
      Line line;
      line.file = f;
      line.number = ends.size() + 1;
      line.text = bytes.substr(tail);
      line.error = "partial last line (" + std::to_string(line.text.size()) +
                   " bytes, no newline): the writer crashed mid-line or the file was cut";
      lines.push_back(std::move(line));
    }
  }
  return lines;
}

// The recorded anchor (options.expect_seq/expect_head) against the intact
// lines: nullopt when the lines hold it. A log cut at a seal boundary, or a
// series whose newest files were dropped, ends before the anchor; a log
// rewritten from some line on (or another log) has a different hash there.
struct AnchorFailure {
  VerifyVerdict verdict;
  size_t index = SIZE_MAX;  // the line at the anchor's seq, for kTampered
  std::string reason;
};

std::optional<AnchorFailure> CheckAnchor(const std::vector<Line>& lines, size_t first_valid, size_t last_valid,
                                         const VerifyOptions& options) {
  if (!options.expect_seq && !options.expect_head) return std::nullopt;
  const uint64_t first_seq = lines[first_valid].integrity.sequence;
  const uint64_t last_seq = lines[last_valid].integrity.sequence;
  const std::string head = "seq " + std::to_string(last_seq) + ", hash " + Hex(lines[last_valid].integrity.hash);
  const std::string wanted =
      "the recorded head (" +
      (options.expect_seq ? "seq " + std::to_string(*options.expect_seq) + (options.expect_head ? ", " : "") : "") +
      (options.expect_head ? "hash " + Hex(*options.expect_head) : std::string()) + ")";
  auto holds = [&](size_t i) {
    const ParsedIntegrity& p = lines[i].integrity;
    return lines[i].error.empty() && (!options.expect_seq || p.sequence == *options.expect_seq) &&
           (!options.expect_head || p.hash == *options.expect_head);
  };
  if (options.expect_seq) {
    const uint64_t seq = *options.expect_seq;
    if (seq > last_seq) {
      return AnchorFailure{VerifyVerdict::kUnsealed, SIZE_MAX,
                           "the log ends at " + head + ", but " + wanted + " is " +
                               std::to_string(seq - last_seq) +
                               " line(s) further on: those lines are missing, cut from the end (at a seal, which the chain "
                               "alone cannot show), or the newest rotated file(s) were not given"};
    }
    if (seq < first_seq) {
      return AnchorFailure{VerifyVerdict::kUnsealed, SIZE_MAX,
                           wanted + " is before the first line given (seq " + std::to_string(first_seq) +
                               "): give the older rotated file(s) that hold it, oldest first (were they deleted?)"};
    }
    for (size_t i = first_valid; i <= last_valid; ++i) {
      if (!lines[i].error.empty() || lines[i].integrity.sequence != seq) continue;
      if (holds(i)) return std::nullopt;
      return AnchorFailure{VerifyVerdict::kTampered, i,
                           "the line at seq " + std::to_string(seq) + " has hash " + Hex(lines[i].integrity.hash) +
                               ", not that of " + wanted +
                               ": the log was rewritten from this line on, or it is not the log the head was "
                               "recorded from"};
    }
  } else {
    for (size_t i = first_valid; i <= last_valid; ++i)
      if (holds(i)) return std::nullopt;
  }
  return AnchorFailure{VerifyVerdict::kUnsealed, SIZE_MAX,
                       wanted + " is not in the log, which holds seq " + std::to_string(first_seq) +
                           " to " + std::to_string(last_seq) + " (" + head +
                           "): lines were cut from the end (at a seal, which the chain alone cannot show), the "
                           "rotated file(s) holding it were not given, or it is another log"};
}

// --ignore-extra-keys: how many keys were dropped from how many lines, and
// the first kMaxExtraKeyNames distinct names (each cut to kMaxExtraKeyNameBytes,
// printed JSON-escaped: a shipper's key may hold anything), as a notice and
// in the report. Dropping was silent: a key someone added to every line
// went unseen.
constexpr size_t kMaxExtraKeyNames = 8;
constexpr size_t kMaxExtraKeyNameBytes = 64;
void NoteDroppedKeys(const std::vector<Line>& lines, VerifyReport& report) {
  for (const Line& line : lines) {
    if (line.dropped_keys.empty()) continue;
    ++report.lines_with_extra_keys;
    report.extra_keys_dropped += line.dropped_keys.size();
    for (const std::string& key : line.dropped_keys) {
      if (report.extra_key_names.size() >= kMaxExtraKeyNames) break;
      std::string name = key.substr(0, kMaxExtraKeyNameBytes);
      if (std::find(report.extra_key_names.begin(), report.extra_key_names.end(), name) == report.extra_key_names.end()) {
        report.extra_key_names.push_back(std::move(name));
      }
    }
  }
  if (report.extra_keys_dropped == 0) return;
  std::string names;
  for (const std::string& name : report.extra_key_names) {
    names += (names.empty() ? "" : ", ") +
             nlohmann::json(name).dump(-1, ' ', /*ensure_ascii=*/true, nlohmann::json::error_handler_t::replace);
  }
  report.notices.push_back("--ignore-extra-keys dropped " + std::to_string(report.extra_keys_dropped) +
                           (report.extra_keys_dropped == 1 ? " key" : " keys") + " from " +
                           std::to_string(report.lines_with_extra_keys) +
                           (report.lines_with_extra_keys == 1 ? " line" : " lines") + " before checking (" +
                           (report.extra_key_names.size() < kMaxExtraKeyNames ? "" : "the first names: ") + names +
                           "): they are not signed, and nothing vouches for them");
}

}  // namespace

VerifyReport VerifyLogs(const std::vector<LogInput>& inputs, const VerifyOptions& options) {
  VerifyReport report;
  if (!PrepareVerification()) {  // before the workers start; fails closed
    report.reason = "cannot check Ed25519 signatures: libsodium failed to initialise (sodium_init)";
    report.file = inputs.empty() ? "" : inputs[0].name;
    return report;
  }
  Failure failure;
  size_t partial_file = SIZE_MAX;
  WorkerPool pool(options.threads);
  std::vector<Line> lines = SplitLines(inputs, pool, partial_file);
  report.lines = lines.size();
  if (lines.empty()) {
    report.reason = "empty log";
    report.file = inputs.empty() ? "" : inputs[0].name;
    return report;
  }
  pool.ParallelFor(lines.size(), 256, [&](size_t begin, size_t end) {
    ScannedLine scanned;
    for (size_t i = begin; i < end; ++i)
      if (lines[i].error.empty()) Analyse(lines[i], options.ignore_extra_keys, scanned);
  });
  if (options.ignore_extra_keys) NoteDroppedKeys(lines, report);
  ChainWalker walker(lines, inputs, options, report);
  std::vector<SignatureCheck> checks;
  walker.Walk(failure, checks);
  std::vector<uint8_t> bad(checks.size(), 0);
  pool.ParallelFor(checks.size(), 8, [&](size_t begin, size_t end) {
    for (size_t k = begin; k < end; ++k) {
      const Line& line = lines[checks[k].index];
      bad[k] = !checks[k].key->Verify(line.integrity.hash, line.integrity.signature);
    }
  });
  report.signatures = checks.size();
  for (size_t k = 0; k < checks.size(); ++k) {
    if (bad[k]) {
      failure.Offer(checks[k].index, "bad Ed25519 signature (line forged or re-signed)");
      break;
    }
  }
  if (failure.index != SIZE_MAX) {
    report.verdict = VerifyVerdict::kTampered;
    report.file = inputs[lines[failure.index].file].name;
    report.line = lines[failure.index].number;
    report.reason = failure.reason;
    return report;
  }
  if (walker.last_signed != walker.last_valid) {
    // Every write ends with a signed line (with sign_every > 1 too), so
    // unsigned lines at the end were appended by someone without the key, or
    // are what a writer killed in the middle of a write left; either way
    // nothing vouches for them. The next writer records them in a signed
    // recovery record (exit 4), as it does for a torn fragment.
    size_t first_unsigned = walker.last_signed == SIZE_MAX ? 0 : walker.last_signed + 1;
    report.verdict = VerifyVerdict::kTampered;
    report.file = inputs[lines[first_unsigned].file].name;
    report.line = lines[first_unsigned].number;
    report.reason = "the last " + std::to_string(walker.last_valid + 1 - first_unsigned) +
                    " line(s) are covered by no signature, and every write ends with a signed line: appended "
                    "without the key, or left by a writer killed mid-write (the next writer records a recovery)";
    return report;
  }
  if (walker.last_valid != SIZE_MAX) {
    report.has_head = true;
    report.head_seq = lines[walker.last_valid].integrity.sequence;
    report.head_hash = Hex(lines[walker.last_valid].integrity.hash);
  }
  const std::string unsealed_sessions = walker.DescribeUnsealedSessions();
  if (walker.last_kind == "rotate") {
    // A rotation is a clean place to cut the series: without the file it
    // continues in, the end of the chain is not here.
    report.verdict = VerifyVerdict::kUnsealed;
    report.reason = "not sealed: the log ends with a rotate record; the chain continues in the next file (" +
                    walker.last_next_file + "), which was not given";
  } else if (!unsealed_sessions.empty()) {
    // Sealed only when every writer's session is: a cut just after one
    // writer's seal, or a writer killed before its seal, leaves the other
    // sessions open, and their end may be what is missing.
    report.verdict = VerifyVerdict::kUnsealed;
    report.reason = unsealed_sessions;
  } else if (walker.last_kind == "seal") {
    report.verdict = VerifyVerdict::kSealed;
  } else {
    report.verdict = VerifyVerdict::kUnsealed;
    report.reason = "not sealed: the log ends with a " + walker.last_kind + " record, so its end may be missing";
  }
  // A recovery outranks sealed/unsealed: a writer found bytes at the end of
  // the log that nothing vouched for. A crash leaves them, and so does anyone
  // who appends to the file; only a person can tell which, so it is never 0.
  if (!walker.recoveries.empty()) {
    report.notices.push_back(report.verdict == VerifyVerdict::kSealed ? std::string("the log is sealed")
                                                                      : report.reason);
    report.verdict = VerifyVerdict::kRecovered;
    report.reason.clear();
    for (const auto& recovery : walker.recoveries) report.reason += (report.reason.empty() ? "" : "; ") + recovery;
  }
  // Last: whatever the log says about its own end, an anchor kept elsewhere
  // says where it must at least reach.
  size_t first_valid = 0;
  while (first_valid < lines.size() && !lines[first_valid].error.empty()) ++first_valid;
  if (walker.last_valid == SIZE_MAX) return report;
  if (auto anchor = CheckAnchor(lines, first_valid, walker.last_valid, options)) {
    if (report.verdict != VerifyVerdict::kSealed) report.notices.push_back(report.reason);
    report.verdict = anchor->verdict;
    report.reason = anchor->reason;
    report.has_head = false;  // not a head to record: it falls short of the one recorded
    if (anchor->verdict == VerifyVerdict::kTampered) {
      report.file = inputs[lines[anchor->index].file].name;
      report.line = lines[anchor->index].number;
    }
  }
  return report;
}

namespace {

// The logs mapped right now, for MappedLogAt (a SIGBUS handler's question):
// plain atomics, so the handler reads them without a lock. A log mapped
// while every slot is taken is simply not named there.
struct MappedRange {
  std::atomic<const char*> begin{nullptr};
  std::atomic<size_t> size{0};
  std::atomic<const char*> name{nullptr};
};
constexpr size_t kMappedSlots = 64;
MappedRange g_mapped[kMappedSlots];

MappedRange* RegisterMapping(const char* begin, size_t size, const char* name) {
  for (MappedRange& slot : g_mapped) {
    const char* empty = nullptr;
    if (!slot.begin.compare_exchange_strong(empty, begin)) continue;
    slot.name.store(name);
    slot.size.store(size);
    return &slot;
  }
  return nullptr;
}

// A read-only mapping of a whole file (no copy of multi-gigabyte logs).
// Another program can still shrink the file while it is mapped (a writer's
// crash recovery cuts a torn fragment, logrotate's copytruncate empties
// it): touching the lost pages then raises SIGBUS, which `cocoon audit
// verify` turns into a message (MappedLogAt).
class MappedFile {
 public:
  static Result<std::unique_ptr<MappedFile>> Open(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoError("opening " + path);
    // Writers hold LOCK_EX for each whole write(2) of a batch, and a reader
    // can see a large write half done (the size grows page by page): the
    // shared lock makes the size we map end at a batch boundary, so a live
    // log is not reported torn or unsigned at its end.
    // Bounded: a writer stopped while it holds the lock (Ctrl-Z, a hung
    // fdatasync on NFS), or anyone who can read the log and holds a lock on
    // it, must not hang a verification; after 10 s it reads without.
    for (int attempt = 0; attempt < 1000 && flock(fd, LOCK_SH | LOCK_NB) != 0 &&
                          (errno == EWOULDBLOCK || errno == EINTR);
         ++attempt) {
      usleep(10000);
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
      int err = errno;
      close(fd);
      return ErrnoError("stat " + path, err);
    }
    auto file = std::make_unique<MappedFile>();
    file->size_ = static_cast<size_t>(st.st_size);
    if (file->size_ > 0) {
      void* p = mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        int err = errno;
        close(fd);
        return ErrnoError("mapping " + path, err);
      }
      file->data_ = static_cast<const char*>(p);
      file->path_ = path;
      file->registered_ = RegisterMapping(file->data_, file->size_, file->path_.c_str());
    }
    // Explicitly: the mapping keeps the open file, and with it the lock, alive.
    flock(fd, LOCK_UN);
    close(fd);
    return file;
  }
  ~MappedFile() {
    if (registered_ != nullptr) {
      registered_->size.store(0);
      registered_->name.store(nullptr);
      registered_->begin.store(nullptr);
    }
    if (data_ != nullptr) munmap(const_cast<char*>(data_), size_);
  }
  std::string_view bytes() const { return std::string_view(data_ == nullptr ? "" : data_, size_); }

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
  MappedRange* registered_ = nullptr;
};

}  // namespace

Result<VerifyReport> VerifyFiles(const std::vector<std::string>& paths, const VerifyOptions& options) {
  std::vector<std::unique_ptr<MappedFile>> files;
  std::vector<LogInput> inputs;
  for (const auto& path : paths) {
    COCOON_ASSIGN_OR_RETURN(auto file, MappedFile::Open(path));
    inputs.push_back(LogInput{path, file->bytes()});
    files.push_back(std::move(file));
  }
  return VerifyLogs(inputs, options);
}

const char* MappedLogAt(const void* address) {
  const auto at = reinterpret_cast<uintptr_t>(address);
  for (const MappedRange& slot : g_mapped) {
    const auto begin = reinterpret_cast<uintptr_t>(slot.begin.load());
    const size_t size = slot.size.load();
    if (begin != 0 && at >= begin && at - begin < size) return slot.name.load();
  }
  return nullptr;
}

std::string FormatReport(const VerifyReport& report) {
  std::string out;
  for (const auto& notice : report.notices) out += "note: " + notice + "\n";
  switch (report.verdict) {
    case VerifyVerdict::kSealed:
      out += "OK: " + std::to_string(report.lines) + " lines intact and sealed (chain " + report.chain_id + ", " +
             std::to_string(report.signatures) + " signatures checked)\n";
      break;
    case VerifyVerdict::kUnsealed:
      out += "UNSEALED: " + std::to_string(report.lines) + " lines intact; " + report.reason + "\n";
      break;
    case VerifyVerdict::kTampered:
      out += report.file + ":" + std::to_string(report.line) + ": TAMPERED: " + report.reason + "\n";
      break;
    case VerifyVerdict::kRecovered:
      out += "RECOVERED: " + std::to_string(report.lines) + " lines chained and signed, but a writer recovered " +
             "from bytes at the end of the log that nothing vouched for (" + report.reason + "). A crashed " +
             "writer leaves these, and so does anyone who can append to the log: inspect the recovery " +
             "record(s), then start a new log\n";
      break;
  }
  if (report.has_head && report.verdict != VerifyVerdict::kTampered) {
    out += "head: seq " + std::to_string(report.head_seq) + " hash " + report.head_hash +
           " (a cut right after a seal leaves an intact, sealed log: keep this head where the log's writers "
           "cannot reach it, and a later verify with --expect-seq " + std::to_string(report.head_seq) +
           " --expect-head " + report.head_hash + " fails if the log no longer reaches it)\n";
  }
  return out;
}

}  // namespace cocoon::audit
