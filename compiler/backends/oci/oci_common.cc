#include "compiler/backends/oci/oci_common.h"

#include "cocoon_version.h"
#include "compiler/ir/cpu_time_rlimit.h"
#include "compiler/ir/file_size_rlimit.h"

namespace cocoon::backends::oci {

std::vector<Rlimit> Rlimits(const ir::Limits& limits, const ir::WorkDir& work) {
  std::vector<Rlimit> out = {{"RLIMIT_CORE", 0, 0}, {"RLIMIT_RTPRIO", 0, 0}};
  if (limits.cpu_time_ms.set) {
    const uint64_t seconds = ir::CpuTimeRlimitSeconds(limits.cpu_time_ms);
    out.push_back({"RLIMIT_CPU", seconds, seconds});  // the container's pid 1 gets no SIGXCPU (cpu_time_rlimit.h)
  }
  // As the enforcer (enforcer/limits/limit_plan.h): these are always set,
  // with its defaults when the policy sets none (`unlimited` included).
  const uint64_t nofile = limits.open_files.set ? limits.open_files.value : ir::kDefaultOpenFiles;
  // The OCI work dir is a bind of the host's: a direct one, whatever the
  // policy's mode (no staging tmpfs holds the disk limit).
  ir::WorkDir bound = work;
  bound.mode = ir::WorkMode::kDirect;
  const uint64_t fsize = ir::FileSizeRlimitBytes(limits, bound);
  out.push_back({"RLIMIT_NOFILE", nofile, nofile});
  out.push_back({"RLIMIT_FSIZE", fsize, fsize});
  out.push_back({"RLIMIT_SIGPENDING", ir::kSandboxPendingSignals, ir::kSandboxPendingSignals});
  return out;
}

nlohmann::ordered_json PlaceholderArgs(const ir::Policy& policy) {
  if (policy.runtime && !policy.runtime->interpreters.empty()) {
    nlohmann::ordered_json args = {policy.runtime->interpreters.front()};
    for (const auto& flag : policy.runtime->flags) args.push_back(flag);
    return args;
  }
  return {"/bin/sh"};
}

nlohmann::ordered_json EnvList(const ir::Policy& policy, const std::string& target,
                               std::vector<std::string>& warnings) {
  nlohmann::ordered_json env = nlohmann::ordered_json::array();
  for (const ir::EnvVar& var : policy.environment.set) env.push_back(var.name + "=" + var.value);
  if (!policy.environment.pass.empty()) {
    std::string names;
    for (const auto& name : policy.environment.pass) names += (names.empty() ? "" : " ") + name;
    warnings.push_back(target + ": 'pass " + names + "' is resolved at launch; the launcher must add them");
  }
  return env;
}

bool ProfileSaysTtyOff(const ir::Policy& policy) {
  if (policy.filesystem.devices.tty != ir::DeviceAccess::kDenied) return false;
  const auto origin = policy.provenance.find("filesystem.devices.tty");
  return origin != policy.provenance.end() && origin->second.profile == policy.name;
}

nlohmann::ordered_json ReservedObject(size_t members) {
  nlohmann::ordered_json object = nlohmann::ordered_json::object();
  object.get_ref<nlohmann::ordered_json::object_t&>().reserve(members);
  return object;
}

nlohmann::ordered_json Annotations(const ir::Policy& policy) {
  nlohmann::ordered_json a;
  a["cocoon.dev/profile"] = policy.name;
  a["cocoon.dev/policy-sha256"] = policy.source_sha256;
  a["cocoon.dev/compiler-version"] = COCOON_VERSION_STRING;
  if (policy.limits.wall_time_ms.set) a["cocoon.dev/wall-time-ms"] = std::to_string(policy.limits.wall_time_ms.value);
  if (policy.limits.output_bytes.set) a["cocoon.dev/output-bytes"] = std::to_string(policy.limits.output_bytes.value);
  if (policy.limits.disk_bytes.set) a["cocoon.dev/disk-bytes"] = std::to_string(policy.limits.disk_bytes.value);
  return a;
}

}  // namespace cocoon::backends::oci
