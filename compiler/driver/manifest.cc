#include "compiler/driver/manifest.h"

#include <algorithm>
#include <iterator>
#include <set>

#include <nlohmann/json.hpp>

namespace cocoon::driver {
namespace {

using nlohmann::ordered_json;  // written in a fixed member order
// Read as nlohmann::json, the type the launch plan's reader already
// instantiates: the launcher (`cocoon`) links this reader too.
using nlohmann::json;

bool IsHex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

constexpr std::string_view kTopLevelKeys[] = {"schema",        "compiler_version", "profile",   "policy_sha256",
                                              "targets",       "architectures",    "artifacts", "warnings"};
constexpr std::string_view kArtifactKeys[] = {"path", "target", "media_type", "sha256", "size"};
constexpr std::string_view kTargets[] = {"linux", "macos", "windows", "oci", "k8s"};

template <size_t N>
bool OneOf(std::string_view value, const std::string_view (&set)[N]) {
  return std::find(std::begin(set), std::end(set), value) != std::end(set);
}

// Every member of `object` is one of `keys`.
template <size_t N>
Status OnlyKnownKeys(const json& object, const std::string_view (&keys)[N], const std::string& where) {
  if (!object.is_object()) return InvalidArgumentError("manifest.json: " + where + " is not an object");
  for (const auto& [key, value] : object.items()) {
    if (!OneOf(key, keys)) return InvalidArgumentError("manifest.json: unknown member '" + key + "' in " + where);
  }
  return Status::Ok();
}

Result<Manifest> FromJson(const json& doc) {
  if (!doc.is_object() || doc.value("schema", "") != kManifestSchema) {
    return InvalidArgumentError("manifest.json: schema is not " + std::string(kManifestSchema));
  }
  COCOON_RETURN_IF_ERROR(OnlyKnownKeys(doc, kTopLevelKeys, "the manifest"));
  Manifest m;
  m.compiler_version = doc.at("compiler_version").get<std::string>();
  m.profile = doc.at("profile").get<std::string>();
  m.policy_sha256 = doc.at("policy_sha256").get<std::string>();
  m.targets = doc.at("targets").get<std::vector<std::string>>();
  m.architectures = doc.at("architectures").get<std::vector<std::string>>();
  m.warnings = doc.value("warnings", std::vector<std::string>{});
  std::set<std::string> targets;
  for (const std::string& target : m.targets) {
    if (!OneOf(target, kTargets)) return InvalidArgumentError("manifest.json: unknown target '" + target + "'");
    if (!targets.insert(target).second) return InvalidArgumentError("manifest.json: target " + target + " twice");
  }
  const json& artifacts = doc.at("artifacts");
  if (!artifacts.is_array()) return InvalidArgumentError("manifest.json: artifacts is not an array");
  std::set<std::string> seen;
  for (const auto& item : artifacts) {
    COCOON_RETURN_IF_ERROR(OnlyKnownKeys(item, kArtifactKeys, "an artifact"));
    if (!item.at("size").is_number_unsigned()) return InvalidArgumentError("manifest.json: bad size");
    ManifestEntry e{item.at("path").get<std::string>(), item.at("target").get<std::string>(),
                    item.at("media_type").get<std::string>(), item.at("sha256").get<std::string>(),
                    item.at("size").get<uint64_t>()};
    if (!IsSafeArtifactPath(e.path) || e.path == kManifestFile) {
      return InvalidArgumentError("manifest.json: unsafe artifact path '" + e.path + "'");
    }
    if (!IsHex64(e.sha256)) return InvalidArgumentError("manifest.json: bad sha256 for " + e.path);
    if (!seen.insert(e.path).second) return InvalidArgumentError("manifest.json: duplicate artifact " + e.path);
    if (targets.count(e.target) == 0) {
      return InvalidArgumentError("manifest.json: artifact " + e.path + " has target '" + e.target +
                                  "', which the manifest does not list");
    }
    m.artifacts.push_back(std::move(e));
  }
  return m;
}

// nlohmann keeps the last of two equal keys in an object: a manifest with
// "artifacts" (or an entry's "sha256") twice would read one way here and
// another way in any other reader. Refused instead. nlohmann's own DOM
// builder behind a SAX pass that checks each object's keys (one lexing
// pass, no per-event callback: `cocoon enforce DIR` is a benchmarked path).
class DomRefusingDuplicateKeys {
 public:
  explicit DomRefusingDuplicateKeys(json& result) : dom_(result, /*allow_exceptions=*/true) {}
  const std::string& duplicate() const { return duplicate_; }

  bool null() { return dom_.null(); }
  bool boolean(bool value) { return dom_.boolean(value); }
  bool number_integer(json::number_integer_t value) { return dom_.number_integer(value); }
  bool number_unsigned(json::number_unsigned_t value) { return dom_.number_unsigned(value); }
  bool number_float(json::number_float_t value, const std::string& text) { return dom_.number_float(value, text); }
  bool string(std::string& value) { return dom_.string(value); }
  bool binary(json::binary_t& value) { return dom_.binary(value); }
  bool start_object(std::size_t size) {
    if (depth_ == keys_.size()) keys_.emplace_back();
    keys_[depth_++].clear();
    return dom_.start_object(size);
  }
  bool key(std::string& name) {
    std::vector<std::string>& seen = keys_[depth_ - 1];
    if (std::find(seen.begin(), seen.end(), name) != seen.end()) {
      duplicate_ = name;
      return false;  // stops the parse
    }
    seen.push_back(name);
    return dom_.key(name);
  }
  bool end_object() {
    --depth_;
    return dom_.end_object();
  }
  bool start_array(std::size_t size) { return dom_.start_array(size); }
  bool end_array() { return dom_.end_array(); }
  template <class Exception>
  bool parse_error(std::size_t position, const std::string& token, const Exception& error) {
    return dom_.parse_error(position, token, error);
  }

 private:
  nlohmann::detail::json_sax_dom_parser<json> dom_;
  std::vector<std::vector<std::string>> keys_;  // per open object; a manifest's objects have a few keys
  size_t depth_ = 0;
  std::string duplicate_;
};

}  // namespace

bool IsSafeArtifactPath(std::string_view path) {
  if (path.empty() || path.size() > 255 || path.front() == '/' || path.back() == '/') return false;
  size_t depth = 0, start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == ".." || ++depth > 8) return false;
    for (char c : part) {
      const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                      c == '_' || c == '-';
      if (!ok) return false;
    }
    start = end + 1;
  }
  return true;
}

std::string ManifestToJson(const Manifest& m) {
  ordered_json doc;
  doc["schema"] = kManifestSchema;
  doc["compiler_version"] = m.compiler_version;
  doc["profile"] = m.profile;
  doc["policy_sha256"] = m.policy_sha256;
  doc["targets"] = m.targets;
  doc["architectures"] = m.architectures;
  ordered_json artifacts = ordered_json::array();
  for (const auto& e : m.artifacts) {
    artifacts.push_back({{"path", e.path}, {"target", e.target}, {"media_type", e.media_type},
                         {"sha256", e.sha256}, {"size", e.size}});
  }
  doc["artifacts"] = std::move(artifacts);
  doc["warnings"] = m.warnings;
  return doc.dump(2) + "\n";
}

Result<Manifest> ParseManifest(std::string_view text) {
  try {
    json doc;
    DomRefusingDuplicateKeys sax(doc);
    if (!json::sax_parse(text, &sax)) {
      return InvalidArgumentError("manifest.json: member '" + sax.duplicate() + "' appears twice");
    }
    return FromJson(doc);
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("manifest.json: ") + e.what());
  }
}

const std::string* CompiledPolicy::File(std::string_view path) const {
  auto it = files.find(std::string(path));
  return it == files.end() ? nullptr : &it->second;
}

}  // namespace cocoon::driver
