#include "compiler/backends/policy_origin.h"

namespace cocoon::backends {

std::string AtPolicyLine(const ir::Policy& policy, const std::string& key) {
  const auto it = policy.provenance.find(key);
  if (it == policy.provenance.end()) return "";
  const ir::Origin& origin = it->second;
  std::string where = " (at " + origin.file + ":" + std::to_string(origin.line);
  if (origin.profile != policy.name) where += ", in profile " + origin.profile;
  return where + ")";
}

std::string DeviceRequest(const ir::Policy& policy, const std::string& device) {
  return "'devices { " + device + " on }'" + AtPolicyLine(policy, "filesystem.devices." + device);
}

}  // namespace cocoon::backends
