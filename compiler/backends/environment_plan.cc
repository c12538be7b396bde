#include "compiler/backends/environment_plan.h"

#include <algorithm>
#include <map>

namespace cocoon::backends {

nlohmann::ordered_json EnvironmentPlanJson(const ir::Environment& environment) {
  nlohmann::ordered_json set = nlohmann::ordered_json::object();
  for (const ir::EnvVar& var : environment.set) set[var.name] = var.value;
  return {{"clear", environment.clear}, {"set", std::move(set)}, {"pass", environment.pass}, {"unset", environment.unset}};
}

Result<ir::Environment> ParseEnvironmentPlan(const nlohmann::ordered_json& json) {
  try {
    ir::Environment environment;
    environment.clear = json.at("clear").get<bool>();
    for (const auto& [name, value] : json.at("set").items()) environment.set.push_back({name, value.get<std::string>()});
    environment.pass = json.at("pass").get<std::vector<std::string>>();
    environment.unset = json.at("unset").get<std::vector<std::string>>();
    return environment;
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("environment: ") + e.what());
  }
}

std::vector<std::string> SandboxEnvironment(const ir::Environment& environment,
                                            const std::vector<std::string>& caller) {
  std::map<std::string, std::string> callers;
  for (const std::string& entry : caller) {
    const size_t equals = entry.find('=');
    if (equals == std::string::npos || equals == 0) continue;  // not NAME=value
    callers.emplace(entry.substr(0, equals), entry.substr(equals + 1));
  }
  std::map<std::string, std::string> result;
  if (environment.clear) {
    for (const std::string& name : environment.pass) {
      if (auto it = callers.find(name); it != callers.end()) result[name] = it->second;
    }
  } else {
    result = callers;
    for (const std::string& name : environment.unset) result.erase(name);
  }
  for (const ir::EnvVar& var : environment.set) result[var.name] = var.value;
  std::vector<std::string> out;
  out.reserve(result.size());
  for (const auto& [name, value] : result) out.push_back(name + "=" + value);
  return out;
}

}  // namespace cocoon::backends
