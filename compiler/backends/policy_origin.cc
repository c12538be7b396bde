#include "compiler/backends/policy_origin.h"

#include <iterator>

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

std::string WorkStatement(const ir::Policy& policy) {
  const ir::WorkDir& work = policy.filesystem.work;
  std::string text = "'work " + work.path;
  if (work.quota_bytes != 0) text += " quota " + PolicySize(work.quota_bytes);
  if (work.mode == ir::WorkMode::kDirect) text += " direct";
  return text + "'" + AtPolicyLine(policy, "filesystem.work");
}

std::string TmpfsStatement(const ir::Policy& policy, const ir::Mount& mount) {
  return "'tmpfs " + mount.target + " size " + PolicySize(mount.size_bytes) + "'" +
         AtPolicyLine(policy, "filesystem.mount:" + mount.target);
}

std::string PolicySize(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t unit = 0;
  while (unit + 1 < std::size(kUnits) && bytes != 0 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + kUnits[unit];
}

}  // namespace cocoon::backends
