#include "compiler/driver/manifest.h"

#include <nlohmann/json.hpp>
#include <set>

namespace cocoon::driver {
namespace {

using nlohmann::ordered_json;

bool IsHex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

Result<Manifest> FromJson(const ordered_json& doc) {
  if (!doc.is_object() || doc.value("schema", "") != kManifestSchema) {
    return InvalidArgumentError("manifest.json: schema is not " + std::string(kManifestSchema));
  }
  Manifest m;
  m.compiler_version = doc.at("compiler_version").get<std::string>();
  m.profile = doc.at("profile").get<std::string>();
  m.policy_sha256 = doc.at("policy_sha256").get<std::string>();
  m.targets = doc.at("targets").get<std::vector<std::string>>();
  m.architectures = doc.at("architectures").get<std::vector<std::string>>();
  m.warnings = doc.value("warnings", std::vector<std::string>{});
  std::set<std::string> seen;
  for (const auto& item : doc.at("artifacts")) {
    ManifestEntry e{item.at("path").get<std::string>(), item.at("target").get<std::string>(),
                    item.at("media_type").get<std::string>(), item.at("sha256").get<std::string>(),
                    item.at("size").get<uint64_t>()};
    if (!IsSafeArtifactPath(e.path) || e.path == kManifestFile) {
      return InvalidArgumentError("manifest.json: unsafe artifact path '" + e.path + "'");
    }
    if (!IsHex64(e.sha256)) return InvalidArgumentError("manifest.json: bad sha256 for " + e.path);
    if (!seen.insert(e.path).second) return InvalidArgumentError("manifest.json: duplicate artifact " + e.path);
    m.artifacts.push_back(std::move(e));
  }
  return m;
}

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

Result<Manifest> ParseManifest(std::string_view json) {
  try {
    return FromJson(ordered_json::parse(json));
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("manifest.json: ") + e.what());
  }
}

const std::string* CompiledPolicy::File(std::string_view path) const {
  auto it = files.find(std::string(path));
  return it == files.end() ? nullptr : &it->second;
}

}  // namespace cocoon::driver
