#include "compiler/backends/sbpl/sbpl_params.h"

#include <nlohmann/json.hpp>

#include "compiler/backends/environment_plan.h"

namespace cocoon::backends::sbpl {
namespace {

using nlohmann::ordered_json;

constexpr std::string_view kRoleNames[] = {"read_root", "read_literal", "work_dir",          "write_root",
                                           "tmp_dir",   "protected",    "protected_ancestor", "hidden"};

Result<ParamRole> RoleFromName(std::string_view name) {
  for (size_t i = 0; i < std::size(kRoleNames); ++i) {
    if (kRoleNames[i] == name) return static_cast<ParamRole>(i);
  }
  return InvalidArgumentError("unknown parameter role '" + std::string(name) + "'");
}

bool StartsWithPath(std::string_view path, std::string_view prefix) {
  return path == prefix || (path.size() > prefix.size() && path.substr(0, prefix.size()) == prefix &&
                            path[prefix.size()] == '/');
}

Result<SbplParams> ParseParamsJson(const ordered_json& doc) {
  SbplParams out;
  if (doc.value("schema", "") != "cocoon.macos-params/v1") {
    return InvalidArgumentError("macos.params.json: schema is not cocoon.macos-params/v1");
  }
  out.profile = doc.value("profile", "");
  out.wall_time_ms = doc.value("wall_time_ms", uint64_t{0});
  for (const auto& item : doc.at("parameters")) {
    SbplParam param;
    param.name = item.at("name").get<std::string>();
    param.value = item.at("value").get<std::string>();
    COCOON_ASSIGN_OR_RETURN(param.role, RoleFromName(item.at("role").get<std::string>()));
    param.base = item.value("base", "");
    param.relative = item.value("relative", "");
    if (!IsValidParamName(param.name)) {
      return InvalidArgumentError("macos.params.json: invalid parameter name '" + param.name + "'");
    }
    out.params.push_back(std::move(param));
  }
  for (const auto& item : doc.at("rlimits")) {
    out.rlimits.push_back({item.at("resource").get<std::string>(), item.at("soft").get<uint64_t>(),
                           item.at("hard").get<uint64_t>()});
  }
  // Required: a params file without it would leave the environment to the
  // caller's, the opposite of the policy's default (`clear`).
  COCOON_ASSIGN_OR_RETURN(out.environment, ParseEnvironmentPlan(doc.at("environment")));
  return out;
}

}  // namespace

std::string_view ParamRoleName(ParamRole role) { return kRoleNames[static_cast<size_t>(role)]; }

std::string CanonicalMacosPath(std::string_view path) {
  for (std::string_view link : {"/tmp", "/var", "/etc"}) {
    if (StartsWithPath(path, link)) return "/private" + std::string(path);
  }
  return std::string(path);
}

bool IsValidParamName(std::string_view name) {
  if (name.empty() || name.size() > 64 || name[0] < 'A' || name[0] > 'Z') return false;
  for (char c : name) {
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  return true;
}

std::string SbplParamsToJson(const SbplParams& params) {
  ordered_json doc;
  doc["schema"] = "cocoon.macos-params/v1";
  doc["profile"] = params.profile;
  ordered_json list = ordered_json::array();
  for (const SbplParam& param : params.params) {
    ordered_json item;
    item["name"] = param.name;
    item["value"] = param.value;
    item["role"] = ParamRoleName(param.role);
    if (!param.base.empty()) {
      item["base"] = param.base;
      item["relative"] = param.relative;
    }
    list.push_back(std::move(item));
  }
  doc["parameters"] = std::move(list);
  ordered_json limits = ordered_json::array();
  for (const SbplRlimit& limit : params.rlimits) {
    limits.push_back({{"resource", limit.resource}, {"soft", limit.soft}, {"hard", limit.hard}});
  }
  doc["rlimits"] = std::move(limits);
  doc["wall_time_ms"] = params.wall_time_ms;
  doc["environment"] = EnvironmentPlanJson(params.environment);
  return doc.dump(2) + "\n";
}

Result<SbplParams> ParseSbplParams(std::string_view json) {
  try {
    return ParseParamsJson(ordered_json::parse(json));
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("macos.params.json: ") + e.what());
  }
}

Result<std::vector<std::pair<std::string, std::string>>> ResolveParams(
    const SbplParams& params, const std::map<std::string, std::string>& overrides) {
  std::map<std::string, std::string> values;
  for (const SbplParam& param : params.params) values[param.name] = param.value;
  for (const auto& [name, value] : overrides) {
    if (!values.count(name)) return InvalidArgumentError("unknown macOS profile parameter '" + name + "'");
    for (const SbplParam& param : params.params) {
      if (param.name == name && !param.base.empty()) {
        return InvalidArgumentError("parameter " + name + " is derived from " + param.base + "; override that");
      }
    }
    if (value.empty() || value[0] != '/') {
      return InvalidArgumentError("parameter " + name + " must be an absolute path, got '" + value + "'");
    }
    values[name] = CanonicalMacosPath(value);
  }
  std::vector<std::pair<std::string, std::string>> out;
  for (const SbplParam& param : params.params) {
    std::string value = values[param.name];
    if (!param.base.empty()) {
      auto base = values.find(param.base);
      if (base == values.end()) return InvalidArgumentError("parameter " + param.name + " has unknown base");
      value = base->second + "/" + param.relative;
    }
    out.emplace_back(param.name, std::move(value));
  }
  return out;
}

}  // namespace cocoon::backends::sbpl
