// Fuzzes `cocoon audit verify` over arbitrary log bytes.
//
// Two properties:
//  1. The verifier never crashes (ASan/UBSan, bounded depth, no exceptions).
//  2. It never accepts what it should not. The trusted key below is fixed and
//     its private half is not in this program (it only signed the seeds in
//     fuzz/corpus/audit_verify_fuzzer/), so the fuzzer cannot forge a line.
//     Whenever the fast verifier says "intact" (sealed or unsealed), a slow,
//     independent DOM-based re-check must agree line by line: each line is
//     exactly the JCS form of itself, its hash recomputes, prev/seq/chain
//     link up, and every signature is a valid Ed25519 signature by the key.
//     For "sealed", the last line must also be a signed seal record.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "audit/jcs.h"
#include "audit/keys.h"
#include "audit/verifier.h"

namespace {

using cocoon::audit::Digest;
using nlohmann::json;

// Public half of the key that signed the seed corpus (raw Ed25519, base64).
constexpr const char* kTrustedKey = "pVeOBd4FhFx1jcMGVPMnazDY8UQvu0ndKzzNTuhAtWI=";

const cocoon::audit::PublicKey& Trusted() {
  static const cocoon::audit::PublicKey key = [] {
    std::string raw;
    if (!cocoon::audit::Base64Decode(kTrustedKey, &raw)) std::abort();
    return *cocoon::audit::PublicKey::FromRaw(raw);
  }();
  return key;
}

void Check(bool condition, const char* what) {
  if (!condition) {
    std::fprintf(stderr, "verifier accepted input that fails the reference check: %s\n", what);
    std::abort();
  }
}

std::string Inner(const std::string& line) {
  if (line.rfind("{\"event\":{", 0) != 0) return line;  // Splunk HEC envelope
  json envelope = json::parse(line, nullptr, false);
  Check(envelope.is_object() && envelope.contains("event"), "HEC envelope is not a JSON object");
  auto inner = cocoon::audit::Canonicalize(envelope["event"]);
  Check(inner.ok(), "HEC event does not canonicalize");
  return *inner;
}

// The slow reference re-check of a log the fast verifier called intact.
void ReferenceCheck(std::string_view bytes, bool sealed) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < bytes.size()) {
    size_t nl = bytes.find('\n', start);
    Check(nl != std::string_view::npos, "accepted a partial last line");
    lines.emplace_back(bytes.substr(start, nl - start));
    start = nl + 1;
  }
  Check(!lines.empty(), "accepted an empty log");
  std::string chain;
  uint64_t seq = 0;
  Digest prev{};
  json last;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string text = Inner(lines[i]);
    json j = json::parse(text, nullptr, false);
    Check(j.is_object(), "line is not a JSON object");
    auto canonical = cocoon::audit::Canonicalize(j);
    Check(canonical.ok() && *canonical == text, "line is not its own JCS form");
    json integrity = j["cocoon"]["integrity"];
    std::string hash_hex = integrity["hash"];
    bool has_sig = integrity.contains("sig");
    std::string sig_b64 = has_sig ? integrity["sig"].get<std::string>() : "";
    j["cocoon"]["integrity"].erase("hash");
    j["cocoon"]["integrity"].erase("sig");
    Digest hash = cocoon::audit::LineHash(*cocoon::audit::Canonicalize(j));
    Check(cocoon::audit::HexEncode(hash.data(), hash.size()) == hash_hex, "hash does not recompute");
    Digest line_prev{};
    Check(cocoon::audit::HexDecode(integrity["prev"].get<std::string>(), line_prev.data(), 32), "prev not hex");
    if (i == 0) {
      Check(integrity["kind"] == "start" && integrity["seq"] == 0 && line_prev == Digest{}, "bad first line");
    } else {
      Check(integrity["chain"] == chain && integrity["seq"] == seq + 1 && line_prev == prev, "chain broken");
    }
    if (has_sig) {
      std::string raw;
      Check(cocoon::audit::Base64Decode(sig_b64, &raw) && raw.size() == 64, "signature not base64");
      cocoon::audit::Signature signature;
      std::memcpy(signature.data(), raw.data(), 64);
      Check(Trusted().Verify(hash, signature), "signature invalid under the trusted key");
    } else {
      Check(integrity["kind"] == "event", "unsigned lifecycle record");
    }
    chain = integrity["chain"];
    seq = integrity["seq"];
    prev = hash;
    last = integrity;
  }
  if (sealed) Check(last["kind"] == "seal" && last.contains("sig"), "sealed without a signed seal record");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  cocoon::audit::VerifyOptions options;
  options.trusted.push_back(Trusted());
  options.threads = 1;
  cocoon::audit::VerifyReport report = cocoon::audit::VerifyLogs({{"fuzz", bytes}}, options);
  if (report.verdict == cocoon::audit::VerifyVerdict::kTampered) return 0;
  ReferenceCheck(bytes, report.verdict == cocoon::audit::VerifyVerdict::kSealed);
  return 0;
}
