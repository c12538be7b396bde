#include "cli/base_summary_util.h"

#include <nlohmann/json.hpp>

#include "enforcer/artifact_cache.h"

namespace cocoon::cli {
namespace {

using nlohmann::json;

// Bump when the summary's fields change: old entries then never match.
constexpr char kSummaryKeyPrefix[] = "cocoon-run-base-summary-v3\n";

json LimitToJson(const ir::Limit& limit) {
  return {limit.set, limit.value, limit.enforcement == ir::Enforcement::kRequired};
}

ir::Limit LimitFromJson(const json& j) {
  ir::Limit limit;
  limit.set = j.at(0).get<bool>();
  limit.value = j.at(1).get<uint64_t>();
  limit.enforcement = j.at(2).get<bool>() ? ir::Enforcement::kRequired : ir::Enforcement::kBestEffort;
  return limit;
}

// Every Limits field, by name, so ToJson and FromJson cannot drift apart.
template <typename Limits, typename Fn>
void ForEachLimit(Limits& limits, Fn&& fn) {
  fn("wall_time_ms", limits.wall_time_ms);
  fn("cpu_time_ms", limits.cpu_time_ms);
  fn("memory_bytes", limits.memory_bytes);
  fn("processes", limits.processes);
  fn("open_files", limits.open_files);
  fn("file_size_bytes", limits.file_size_bytes);
  fn("disk_bytes", limits.disk_bytes);
  fn("output_bytes", limits.output_bytes);
  fn("cpu_percent", limits.cpu_percent);
}

std::string SummaryKey(const std::string& path, const std::string& profile) {
  return enforcer::ArtifactCache::KeyFor(path, kSummaryKeyPrefix + profile);
}

}  // namespace

std::string BaseSummaryToJson(const ir::Policy& policy) {
  json j;
  j["name"] = policy.name;
  j["cwd"] = policy.cwd;
  j["network"] = static_cast<int>(policy.network.mode);
  json limits;
  ForEachLimit(policy.limits, [&](const char* name, const ir::Limit& limit) { limits[name] = LimitToJson(limit); });
  j["limits"] = limits;
  // --disk carries the work dir's quota (agent_run_util.cc): a summary
  // without it read as "no quota" and the override was never written.
  j["work"] = {policy.filesystem.work.path, policy.filesystem.work.quota_bytes,
               policy.filesystem.work.mode == ir::WorkMode::kDirect};
  // Kinds and sources too: an --ro path the base hides is refused by its
  // host path as well (HostPathOf, agent_run_util.cc).
  j["mounts"] = json::array();
  for (const auto& mount : policy.filesystem.mounts) {
    j["mounts"].push_back({mount.target, mount.source, static_cast<int>(mount.kind)});
  }
  j["hidden"] = policy.filesystem.hidden;
  j["env"] = json::array();
  for (const auto& var : policy.environment.set) j["env"].push_back({var.name, var.value});
  if (policy.runtime) {
    const ir::Runtime& r = *policy.runtime;
    j["runtime"] = {{"name", r.name}, {"interpreters", r.interpreters}, {"flags", r.flags}, {"code_flag", r.code_flag},
                    {"file_extension", r.file_extension}, {"version_args", r.version_args}};
  }
  return j.dump();
}

Result<ir::Policy> BaseSummaryFromJson(const std::string& text) {
  try {
    json j = json::parse(text);
    ir::Policy policy;
    policy.name = j.at("name").get<std::string>();
    policy.cwd = j.at("cwd").get<std::string>();
    int network = j.at("network").get<int>();
    if (network < 0 || network > static_cast<int>(ir::NetworkMode::kAllowList)) return DataLossError("bad network mode");
    policy.network.mode = static_cast<ir::NetworkMode>(network);
    const json& limits = j.at("limits");
    ForEachLimit(policy.limits, [&](const char* name, ir::Limit& limit) { limit = LimitFromJson(limits.at(name)); });
    const json& work = j.at("work");
    policy.filesystem.work.path = work.at(0).get<std::string>();
    policy.filesystem.work.quota_bytes = work.at(1).get<uint64_t>();
    policy.filesystem.work.mode = work.at(2).get<bool>() ? ir::WorkMode::kDirect : ir::WorkMode::kStaged;
    for (const auto& entry : j.at("mounts")) {
      ir::Mount mount;
      mount.target = entry.at(0).get<std::string>();
      mount.source = entry.at(1).get<std::string>();
      const int kind = entry.at(2).get<int>();
      if (kind < 0 || kind > static_cast<int>(ir::MountKind::kTmpfs)) return DataLossError("bad mount kind");
      mount.kind = static_cast<ir::MountKind>(kind);
      policy.filesystem.mounts.push_back(std::move(mount));
    }
    policy.filesystem.hidden = j.at("hidden").get<std::vector<std::string>>();
    for (const auto& var : j.at("env")) policy.environment.set.push_back({var.at(0).get<std::string>(), var.at(1).get<std::string>()});
    if (j.contains("runtime")) {
      const json& r = j.at("runtime");
      policy.runtime = ir::Runtime{r.at("name").get<std::string>(), r.at("interpreters").get<std::vector<std::string>>(),
                                   r.at("flags").get<std::vector<std::string>>(), r.at("code_flag").get<std::string>(),
                                   r.at("file_extension").get<std::string>(),
                                   r.at("version_args").get<std::vector<std::string>>()};
    }
    return policy;
  } catch (const json::exception& e) {
    return DataLossError(std::string("base summary: ") + e.what());
  }
}

std::optional<ir::Policy> LookupBaseSummary(const std::string& path, const std::string& profile) {
  enforcer::ArtifactCache cache(enforcer::ArtifactCache::DefaultDir());
  std::vector<std::string> sources;
  auto blob = cache.LookupBlob(SummaryKey(path, profile), &sources);
  if (!blob) return std::nullopt;
  auto policy = BaseSummaryFromJson(*blob);
  if (!policy.ok()) return std::nullopt;
  policy->source_files = std::move(sources);
  return std::move(*policy);
}

void StoreBaseSummary(const std::string& path, const std::string& profile, const ir::Policy& policy) {
  // The digests of the bytes the front end parsed: hashing the files again
  // here would pair this summary with an edit made since.
  std::vector<std::string> sources, digests;
  for (const auto& source : policy.source_digests) {
    if (source.path.empty()) return;  // not read from a file: cannot verify it later, do not cache
    sources.push_back(source.path);
    digests.push_back(source.sha256);
  }
  if (sources.empty()) return;
  enforcer::ArtifactCache cache(enforcer::ArtifactCache::DefaultDir());
  (void)cache.StoreBlob(SummaryKey(path, profile), BaseSummaryToJson(policy), std::move(sources),
                        std::move(digests), policy.shadowing_paths);  // an optimisation
}

}  // namespace cocoon::cli
