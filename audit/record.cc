#include "audit/record.h"

#include <charconv>
#include <cstring>
#include <ctime>

namespace cocoon::audit {

using nlohmann::json;

std::string IsoTimestamp(int64_t time_ms) {
  time_t seconds = static_cast<time_t>(time_ms / 1000);
  struct tm utc;
  gmtime_r(&seconds, &utc);
  char buffer[40];
  size_t n = strftime(buffer, sizeof buffer, "%Y-%m-%dT%H:%M:%S", &utc);
  snprintf(buffer + n, sizeof buffer - n, ".%03dZ", static_cast<int>(time_ms % 1000));
  return buffer;
}

Status RenderIdentity(Identity& identity) {
  json actor = {{"process", {{"pid", identity.pid}, {"name", "cocoon"}}},
                {"user", {{"uid", std::to_string(identity.uid)}, {"name", identity.user_name}}}};
  json device = {{"hostname", identity.host_name}, {"type_id", 0}, {"type", "Unknown"},
                 {"os", {{"name", "Linux"}, {"type_id", 100}, {"type", "Linux"}}}};
  COCOON_ASSIGN_OR_RETURN(identity.actor_text, Canonicalize(actor));
  COCOON_ASSIGN_OR_RETURN(identity.device_text, Canonicalize(device));
  return Status::Ok();
}

namespace {

constexpr char kHexDigits[] = "0123456789abcdef";

char* WriteHex(const uint8_t* data, size_t size, char* out) {
  for (size_t i = 0; i < size; ++i) {
    *out++ = kHexDigits[data[i] >> 4];
    *out++ = kHexDigits[data[i] & 0xF];
  }
  return out;
}

}  // namespace

void ChainLine(PreparedLine& line, const Digest& prev) {
  WriteHex(prev.data(), prev.size(), line.preimage.data() + line.prev_at);
  line.hash = LineHash(line.preimage);
}

void StartChainHash(const PreparedLine& line, LineHasher& hasher) {
  hasher.Start();
  hasher.Update(std::string_view(line.preimage).substr(0, line.prev_at));
}

void ChainLine(PreparedLine& line, const Digest& prev, LineHasher& hasher) {
  WriteHex(prev.data(), prev.size(), line.preimage.data() + line.prev_at);
  hasher.Update(std::string_view(line.preimage).substr(line.prev_at));
  line.hash = hasher.Finish();
}

namespace {

constexpr std::string_view kIntegrityHead = "{\"chain\":\"";
constexpr std::string_view kVersionTail = "\"v\":1}";
static_assert(kFormatVersion == 1, "kVersionTail spells the format version");

const json* Member(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_object() ? &*it : nullptr;
}

void AppendUnsigned(uint64_t value, std::string& out) {
  char buffer[24];
  auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
  out.append(buffer, result.ptr);
}

// {"chain":C,"key":K,"kind":k,<extra...>,"prev":P,"seq":N,"v":1} without
// hash/sig, appended to `out`; records where hash, sig and prev go.
Status AppendIntegrity(const LineContext& context, std::string& out, PreparedLine& line) {
  // chain_id and key_id are checked once per batch by the caller.
  if (context.kind.find_first_of("\"\\") != std::string_view::npos)
    return InternalError("integrity kind must be plain ASCII");
  out += kIntegrityHead;
  out += context.chain_id;
  out += "\",";
  line.hash_at = out.size();
  out += "\"key\":\"";
  out += context.key_id;
  out += "\",\"kind\":\"";
  out += context.kind;
  out += '"';
  if (context.extra != nullptr) {
    for (const auto& [key, value] : *context.extra) {
      if (value.is_object() || value.is_array()) return InternalError("integrity fields must be scalars");
      // hash_at/sig_at rely on "chain" first and "prev","seq","v" last.
      if (!(key > "kind" && key < "prev")) return InternalError("integrity field name out of range: " + key);
      out += ",\"";
      out += key;
      out += "\":";
      COCOON_RETURN_IF_ERROR(CanonicalizeTo(value, NumberPolicy::kIntegersOnly, out));
    }
  }
  out += ",\"prev\":\"";
  line.prev_at = out.size();
  if (context.prev == Digest{}) out.append(64, '0');  // deferred: ChainLine patches it in
  else out += HexEncode(context.prev.data(), context.prev.size());
  out += "\",\"seq\":";
  AppendUnsigned(context.sequence, out);
  out += ',';
  line.sig_at = out.size();
  out += kVersionTail;
  return Status::Ok();
}

// An overlay member that cuts a per-line value out of the rendered body.
OverlayMember Cut(std::string_view key, Splice splice, std::string_view text = {}, size_t offset = 0) {
  return OverlayMember{key, text, static_cast<int>(splice), offset};
}

}  // namespace

Result<std::shared_ptr<const RenderedEvent>> RenderEvent(const json& event) {
  if (!event.is_object()) return InvalidArgumentError("an audit event must be a JSON object");
  const json* metadata = Member(event, "metadata");
  if (metadata == nullptr) {  // every builder sets metadata; a hand-made event gets an empty one
    json with_metadata = event;
    with_metadata["metadata"] = json::object();
    return RenderEvent(with_metadata);
  }
  const json* ecs_event = Member(event, "event");
  const json* cocoon = Member(event, "cocoon");
  if (cocoon != nullptr && cocoon->contains("integrity"))
    return InvalidArgumentError("audit events may not set cocoon.integrity");
  constexpr std::string_view kCocoon = "{\"integrity\":}";
  constexpr std::string_view kSequenceOnly = "{\"sequence\":}";
  std::vector<Overlay> overlays(1);
  overlays[0].node = &event;
  auto& top = overlays[0].members;
  top.push_back(Cut("@timestamp", Splice::kTimestamp));
  if (!event.contains("actor")) top.push_back(Cut("actor", Splice::kActor));
  if (!cocoon) top.push_back(Cut("cocoon", Splice::kIntegrity, kCocoon, kCocoon.size() - 1));
  if (!event.contains("device")) top.push_back(Cut("device", Splice::kDevice));
  if (!ecs_event) top.push_back(Cut("event", Splice::kSequence, kSequenceOnly, kSequenceOnly.size() - 1));
  top.push_back(Cut("time", Splice::kTime));
  overlays.push_back({metadata, {Cut("sequence", Splice::kSequence), Cut("uid", Splice::kUid)}});
  if (ecs_event) overlays.push_back({ecs_event, {Cut("sequence", Splice::kSequence)}});
  if (cocoon) overlays.push_back({cocoon, {Cut("integrity", Splice::kIntegrity)}});
  auto rendered = std::make_shared<RenderedEvent>();
  rendered->body.reserve(2048);
  COCOON_RETURN_IF_ERROR(CanonicalizeWithOverlays(event, overlays, rendered->body, &rendered->splices));
  auto severity = event.find("severity_id");
  if (severity != event.end() && severity->is_number_integer()) rendered->severity_id = severity->get<int>();
  return std::shared_ptr<const RenderedEvent>(std::move(rendered));
}

Result<PreparedLine> PrepareLine(const json& event, const LineContext& context, const Identity& identity) {
  COCOON_ASSIGN_OR_RETURN(auto rendered, RenderEvent(event));
  return PrepareLine(*rendered, context, identity, HashMode::kNow);
}

Result<PreparedLine> PrepareLine(const RenderedEvent& event, const LineContext& context, const Identity& identity) {
  return PrepareLine(event, context, identity, HashMode::kNow);
}

// Copies the rendered body and appends each per-line value at its splice
// point: no DOM, one allocation (the reserved preimage).
Result<PreparedLine> PrepareLine(const RenderedEvent& event, const LineContext& context, const Identity& identity,
                                 HashMode mode) {
  PreparedLine line;
  COCOON_RETURN_IF_ERROR(PrepareLineInto(event, context, identity, mode, line));
  return line;
}

Status PrepareLineInto(const RenderedEvent& event, const LineContext& context, const Identity& identity,
                       HashMode mode, PreparedLine& line) {
  std::string& out = line.preimage;
  out.clear();
  line.hash_at = line.sig_at = line.prev_at = 0;
  line.hash = Digest{};
  out.reserve(event.body.size() + identity.actor_text.size() + identity.device_text.size() + 512);
  size_t at = 0;
  for (const SplicePoint& point : event.splices) {
    out.append(event.body, at, point.offset - at);
    at = point.offset;
    switch (static_cast<Splice>(point.id)) {
      case Splice::kTimestamp: out += '"'; out += context.timestamp; out += '"'; break;
      case Splice::kActor: out += identity.actor_text; break;
      case Splice::kDevice: out += identity.device_text; break;
      case Splice::kIntegrity: COCOON_RETURN_IF_ERROR(AppendIntegrity(context, out, line)); break;
      case Splice::kSequence: AppendUnsigned(context.sequence, out); break;
      case Splice::kUid:
        out += '"';
        out += context.chain_id;
        out += ':';
        AppendUnsigned(context.sequence, out);
        out += '"';
        break;
      case Splice::kTime:
        if (context.time_ms < 0) return InvalidArgumentError("audit time before 1970");
        AppendUnsigned(static_cast<uint64_t>(context.time_ms), out);
        break;
    }
  }
  out.append(event.body, at, std::string::npos);
  if (line.sig_at == 0) return InternalError("rendered audit event lost its integrity splice");
  if (mode == HashMode::kNow) line.hash = LineHash(out);
  line.signed_line = context.signed_line;
  line.sequence = context.sequence;
  return Status::Ok();
}

size_t FinishedSize(const PreparedLine& line) {
  constexpr size_t kHashMember = std::string_view("\"hash\":\"\",").size() + 64;
  constexpr size_t kSigMember = std::string_view("\"sig\":\"\",").size() + 88;  // base64 of 64 bytes
  return line.preimage.size() + kHashMember + (line.signed_line ? kSigMember : 0) + 1;
}

char* WriteFinishedLine(const PreparedLine& line, const Signature* signature, char* out) {
  constexpr std::string_view kHashKey = "\"hash\":\"";
  constexpr std::string_view kSigKey = "\"sig\":\"";
  const char* p = line.preimage.data();
  auto put = [&out](const char* data, size_t size) {
    std::memcpy(out, data, size);
    out += size;
  };
  put(p, line.hash_at);
  put(kHashKey.data(), kHashKey.size());
  out = WriteHex(line.hash.data(), line.hash.size(), out);
  put("\",", 2);
  put(p + line.hash_at, line.sig_at - line.hash_at);
  if (signature != nullptr) {
    std::string base64 = Base64Encode(signature->data(), signature->size());
    put(kSigKey.data(), kSigKey.size());
    put(base64.data(), base64.size());
    put("\",", 2);
  }
  put(p + line.sig_at, line.preimage.size() - line.sig_at);
  *out++ = '\n';
  return out;
}

void AppendFinishedLine(const PreparedLine& line, const Signature* signature, std::string& out) {
  size_t at = out.size();
  out.resize(at + FinishedSize(line));
  char* end = WriteFinishedLine(line, signature, out.data() + at);
  out.resize(static_cast<size_t>(end - out.data()));
}

std::string FinishLine(const PreparedLine& line, const Signature* signature) {
  std::string out;
  out.reserve(FinishedSize(line));
  AppendFinishedLine(line, signature, out);
  return out;
}

json EventFields(const Event& event) {
  if (!event.rendered) return event.fields;
  const RenderedEvent& r = *event.rendered;
  std::string text;
  size_t at = 0;
  bool cut_actor = false, cut_device = false;
  for (const SplicePoint& point : r.splices) {
    text.append(r.body, at, point.offset - at);
    at = point.offset;
    auto splice = static_cast<Splice>(point.id);
    cut_actor |= splice == Splice::kActor;
    cut_device |= splice == Splice::kDevice;
    bool number = splice == Splice::kSequence || splice == Splice::kTime;
    text += number ? "0" : (splice == Splice::kTimestamp || splice == Splice::kUid) ? "\"\"" : "{}";
  }
  text.append(r.body, at, std::string::npos);
  json fields = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!fields.is_object()) return json::object();
  fields.erase("@timestamp");
  fields.erase("time");
  if (cut_actor) fields.erase("actor");
  if (cut_device) fields.erase("device");
  for (const char* object : {"metadata", "event", "cocoon"}) {
    auto it = fields.find(object);
    if (it == fields.end()) continue;
    it->erase("sequence");
    it->erase("uid");
    it->erase("integrity");
    if (it->empty() && std::string_view(object) != "metadata") fields.erase(it);
  }
  return fields;
}

std::optional<std::string_view> RawString(std::string_view raw) {
  if (raw.size() < 2 || raw.front() != '"' || raw.back() != '"') return std::nullopt;
  std::string_view inner = raw.substr(1, raw.size() - 2);
  if (inner.find('\\') != std::string_view::npos) return std::nullopt;
  return inner;
}

namespace {

Status Bad(std::string why) { return DataLossError(std::move(why)); }

// key == name with the length known at compile time, so the compare is
// inlined (a memcmp call per candidate name showed in the verifier profile).
template <size_t N>
bool Is(std::string_view key, const char (&name)[N]) {
  return key.size() == N - 1 && std::memcmp(key.data(), name, N - 1) == 0;
}

bool ParseSequence(std::string_view raw, uint64_t* out) {
  auto [ptr, ec] = std::from_chars(raw.data(), raw.data() + raw.size(), *out);
  return ec == std::errc() && ptr == raw.data() + raw.size();
}

}  // namespace

Result<ParsedIntegrity> ParseIntegrity(std::string_view line, const ScannedLine& scanned, Digest* computed) {
  if (!scanned.has_integrity) return Bad("no cocoon.integrity object");
  ParsedIntegrity out;
  const IntegrityMember* hash = nullptr;
  const IntegrityMember* sig = nullptr;
  bool have_chain = false, have_key = false, have_kind = false, have_prev = false, have_seq = false;
  bool have_v = false;
  for (const auto& m : scanned.integrity) {
    if (Is(m.key, "hash")) hash = &m;
    else if (Is(m.key, "sig")) sig = &m;
    else if (Is(m.key, "chain")) { auto s = RawString(m.raw_value); if (!s) return Bad("integrity.chain is not a string"); out.chain = *s; have_chain = true; }
    else if (Is(m.key, "key")) { auto s = RawString(m.raw_value); if (!s) return Bad("integrity.key is not a string"); out.key_id = *s; have_key = true; }
    else if (Is(m.key, "kind")) { auto s = RawString(m.raw_value); if (!s) return Bad("integrity.kind is not a string"); out.kind = *s; have_kind = true; }
    else if (Is(m.key, "prev")) {
      auto s = RawString(m.raw_value);
      if (!s || !HexDecode(*s, out.prev.data(), out.prev.size())) return Bad("integrity.prev is not a SHA-256 hex digest");
      have_prev = true;
    } else if (Is(m.key, "seq")) {
      if (!ParseSequence(m.raw_value, &out.sequence)) return Bad("integrity.seq is not a non-negative integer");
      have_seq = true;
    } else if (Is(m.key, "v")) {
      if (m.raw_value != "1") return Bad("unsupported integrity format version " + std::string(m.raw_value));
      have_v = true;
    } else {
      out.extra[m.key] = m.raw_value;
    }
  }
  if (!have_chain || !have_key || !have_kind || !have_prev || !have_seq || !have_v || hash == nullptr)
    return Bad("cocoon.integrity lacks one of chain/hash/key/kind/prev/seq/v");
  auto hash_text = RawString(hash->raw_value);
  if (!hash_text || !HexDecode(*hash_text, out.hash.data(), out.hash.size()))
    return Bad("integrity.hash is not a SHA-256 hex digest");
  if (!hash->followed_by_comma || (sig && !sig->followed_by_comma)) return Bad("integrity.v must be last");
  if (sig) {
    auto sig_text = RawString(sig->raw_value);
    if (!sig_text || !Base64DecodeExact(*sig_text, out.signature.data(), out.signature.size()))
      return Bad("integrity.sig is not a base64 Ed25519 signature");
    out.has_signature = true;
  }
  // Pre-image: the line without the hash and sig members (sig comes after hash).
  if (sig) {
    *computed = LineHashParts({line.substr(0, hash->member_begin),
                               line.substr(hash->member_end, sig->member_begin - hash->member_end),
                               line.substr(sig->member_end)});
  } else {
    *computed = LineHashParts({line.substr(0, hash->member_begin), line.substr(hash->member_end)});
  }
  return out;
}

}  // namespace cocoon::audit
