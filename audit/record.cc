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

Result<PreparedLine> PrepareLine(json event, const LineContext& context, const Identity& identity) {
  return PrepareLine(std::move(event), context, identity, HashMode::kNow);
}

void ChainLine(PreparedLine& line, const Digest& prev) {
  std::string hex = HexEncode(prev.data(), prev.size());
  line.preimage.replace(line.prev_at, hex.size(), hex);
  line.hash = LineHash(line.preimage);
}

Result<PreparedLine> PrepareLine(json event, const LineContext& context, const Identity& identity,
                                 HashMode mode) {
  if (!event.is_object()) return InvalidArgumentError("an audit event must be a JSON object");
  std::string event_id = context.chain_id + ":" + std::to_string(context.sequence);
  event["time"] = context.time_ms;
  event["@timestamp"] = IsoTimestamp(context.time_ms);
  json& metadata = event["metadata"];
  metadata["uid"] = event_id;
  metadata["sequence"] = context.sequence;
  event["event"]["sequence"] = context.sequence;
  if (!event.contains("actor")) {
    event["actor"] = {{"process", {{"pid", identity.pid}, {"name", "cocoon"}}},
                      {"user", {{"uid", std::to_string(identity.uid)}, {"name", identity.user_name}}}};
  }
  if (!event.contains("device")) {
    event["device"] = {{"hostname", identity.host_name}, {"type_id", 0}, {"type", "Unknown"},
                       {"os", {{"name", "Linux"}, {"type_id", 100}, {"type", "Linux"}}}};
  }
  json integrity = json::object();
  for (const auto& [key, value] : context.extra) {
    if (value.is_object() || value.is_array()) return InternalError("integrity fields must be scalars");
    // The splice offsets below rely on "chain" first and "prev","seq","v" last.
    if (!(key > "kind" && key < "prev")) return InternalError("integrity field name out of range: " + key);
    integrity[key] = value;
  }
  integrity["chain"] = context.chain_id;
  integrity["key"] = context.key_id;
  integrity["kind"] = context.kind;
  integrity["prev"] = HexEncode(context.prev.data(), context.prev.size());
  integrity["seq"] = context.sequence;
  integrity["v"] = kFormatVersion;
  json& slot = event["cocoon"]["integrity"];
  slot = std::move(integrity);

  PreparedLine line;
  line.preimage.reserve(1536);
  size_t begin = 0, end = 0;
  COCOON_RETURN_IF_ERROR(CanonicalizeTo(event, NumberPolicy::kIntegersOnly, line.preimage, &slot, &begin, &end));
  // {"chain":"<id>",  -> hash goes right after; "v":1} closes the object.
  line.hash_at = begin + std::string_view("{\"chain\":\"").size() + context.chain_id.size() + 2;
  line.sig_at = end - (std::string_view("\"v\":}").size() + std::to_string(kFormatVersion).size());
  // ..."prev":"<64 hex>","seq":<N>,"v":1}
  line.prev_at = end - (64 + std::string_view("\",\"seq\":").size() + std::to_string(context.sequence).size() +
                        std::string_view(",\"v\":1}").size());
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
  std::string preimage;
  preimage.reserve(line.size());
  preimage.append(line.substr(0, hash->member_begin));
  if (sig) {
    preimage.append(line.substr(hash->member_end, sig->member_begin - hash->member_end));
    preimage.append(line.substr(sig->member_end));
  } else {
    preimage.append(line.substr(hash->member_end));
  }
  *computed = LineHash(preimage);
  return out;
}

}  // namespace cocoon::audit
