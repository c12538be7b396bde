#include "audit/record.h"

#include <charconv>
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

Result<PreparedLine> PrepareLine(const json& event, const LineContext& context, const Identity& identity) {
  return PrepareLine(event, context, identity, HashMode::kNow);
}

void ChainLine(PreparedLine& line, const Digest& prev) {
  std::string hex = HexEncode(prev.data(), prev.size());
  line.preimage.replace(line.prev_at, hex.size(), hex);
  line.hash = LineHash(line.preimage);
}

namespace {

// {"chain":C,"key":K,"kind":k,<extra...>,"prev":P,"seq":N,"v":1} without hash/sig.
Result<std::string> IntegrityText(const LineContext& context, const std::string& seq) {
  std::string out = "{\"chain\":\"" + context.chain_id + "\",\"key\":\"" + context.key_id + "\",\"kind\":\"" +
                    context.kind + "\"";
  for (const auto& [key, value] : context.extra) {
    if (value.is_object() || value.is_array()) return InternalError("integrity fields must be scalars");
    // The splice offsets rely on "chain" first and "prev","seq","v" last.
    if (!(key > "kind" && key < "prev")) return InternalError("integrity field name out of range: " + key);
    COCOON_ASSIGN_OR_RETURN(std::string text, Canonicalize(value));
    out += ",\"" + key + "\":" + text;
  }
  out += ",\"prev\":\"" + HexEncode(context.prev.data(), context.prev.size()) + "\",\"seq\":" + seq +
         ",\"v\":" + std::to_string(kFormatVersion) + "}";
  if (context.chain_id.find_first_of("\"\\") != std::string::npos ||
      context.key_id.find_first_of("\"\\") != std::string::npos ||
      context.kind.find_first_of("\"\\") != std::string::npos)
    return InternalError("integrity identifiers must be plain ASCII");
  return out;
}

const json* Member(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && it->is_object() ? &*it : nullptr;
}

}  // namespace

// Per-line fields are merged in as canonical text during serialisation (see
// Overlay in jcs.h): no copy or edit of the event DOM.
Result<PreparedLine> PrepareLine(const json& event, const LineContext& context, const Identity& identity,
                                 HashMode mode) {
  if (!event.is_object()) return InvalidArgumentError("an audit event must be a JSON object");
  std::string event_id = context.chain_id + ":" + std::to_string(context.sequence);
  std::string seq = std::to_string(context.sequence);
  std::string timestamp = "\"" + IsoTimestamp(context.time_ms) + "\"";
  std::string time = std::to_string(context.time_ms);
  std::string uid = "\"" + event_id + "\"";
  COCOON_ASSIGN_OR_RETURN(std::string integrity, IntegrityText(context, seq));
  const json* metadata = Member(event, "metadata");
  const json* ecs_event = Member(event, "event");
  const json* cocoon = Member(event, "cocoon");
  std::string metadata_text = "{\"sequence\":" + seq + ",\"uid\":" + uid + "}";
  std::string event_text = "{\"sequence\":" + seq + "}";
  std::string cocoon_text = "{\"integrity\":" + integrity + "}";

  std::vector<Overlay> overlays(1);
  overlays[0].node = &event;
  auto& top = overlays[0].members;
  top.push_back({"@timestamp", timestamp});
  if (!event.contains("actor")) top.push_back({"actor", identity.actor_text});
  if (!cocoon) top.push_back({"cocoon", cocoon_text, true, std::string_view("{\"integrity\":").size(), integrity.size()});
  if (!event.contains("device")) top.push_back({"device", identity.device_text});
  if (!ecs_event) top.push_back({"event", event_text});
  if (!metadata) top.push_back({"metadata", metadata_text});
  top.push_back({"time", time});
  if (metadata) overlays.push_back({metadata, {{"sequence", seq}, {"uid", uid}}});
  if (ecs_event) overlays.push_back({ecs_event, {{"sequence", seq}}});
  if (cocoon) overlays.push_back({cocoon, {{"integrity", integrity, true, 0, integrity.size()}}});

  PreparedLine line;
  line.preimage.reserve(2048);
  size_t begin = 0, end = 0;
  COCOON_RETURN_IF_ERROR(CanonicalizeWithOverlays(event, overlays, line.preimage, &begin, &end));
  // {"chain":"<id>",  -> hash goes right after; "v":1} closes the object.
  line.hash_at = begin + std::string_view("{\"chain\":\"").size() + context.chain_id.size() + 2;
  line.sig_at = end - (std::string_view("\"v\":}").size() + std::to_string(kFormatVersion).size());
  // ..."prev":"<64 hex>","seq":<N>,"v":1}
  line.prev_at = end - (64 + std::string_view("\",\"seq\":").size() + seq.size() + std::string_view(",\"v\":1}").size());
  if (mode == HashMode::kNow) line.hash = LineHash(line.preimage);
  line.signed_line = context.signed_line;
  line.sequence = context.sequence;
  line.event_id = std::move(event_id);
  return line;
}

std::string FinishLine(const PreparedLine& line, const Signature* signature) {
  const std::string& p = line.preimage;
  std::string out;
  out.reserve(p.size() + 180);
  out.append(p, 0, line.hash_at);
  out += "\"hash\":\"";
  out += HexEncode(line.hash.data(), line.hash.size());
  out += "\",";
  out.append(p, line.hash_at, line.sig_at - line.hash_at);
  if (signature != nullptr) {
    out += "\"sig\":\"";
    out += Base64Encode(signature->data(), signature->size());
    out += "\",";
  }
  out.append(p, line.sig_at, std::string::npos);
  out += '\n';
  return out;
}

std::optional<std::string_view> RawString(std::string_view raw) {
  if (raw.size() < 2 || raw.front() != '"' || raw.back() != '"') return std::nullopt;
  std::string_view inner = raw.substr(1, raw.size() - 2);
  if (inner.find('\\') != std::string_view::npos) return std::nullopt;
  return inner;
}

namespace {

Status Bad(std::string why) { return DataLossError(std::move(why)); }

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
    if (m.key == "hash") hash = &m;
    else if (m.key == "sig") sig = &m;
    else if (m.key == "chain") { auto s = RawString(m.raw_value); if (!s) return Bad("integrity.chain is not a string"); out.chain = *s; have_chain = true; }
    else if (m.key == "key") { auto s = RawString(m.raw_value); if (!s) return Bad("integrity.key is not a string"); out.key_id = *s; have_key = true; }
    else if (m.key == "kind") { auto s = RawString(m.raw_value); if (!s) return Bad("integrity.kind is not a string"); out.kind = *s; have_kind = true; }
    else if (m.key == "prev") {
      auto s = RawString(m.raw_value);
      if (!s || !HexDecode(*s, out.prev.data(), out.prev.size())) return Bad("integrity.prev is not a SHA-256 hex digest");
      have_prev = true;
    } else if (m.key == "seq") {
      if (!ParseSequence(m.raw_value, &out.sequence)) return Bad("integrity.seq is not a non-negative integer");
      have_seq = true;
    } else if (m.key == "v") {
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
    std::string decoded;
    if (!sig_text || !Base64Decode(*sig_text, &decoded) || decoded.size() != 64)
      return Bad("integrity.sig is not a base64 Ed25519 signature");
    std::copy(decoded.begin(), decoded.end(), out.signature.begin());
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
