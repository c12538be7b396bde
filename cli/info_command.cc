// `cocoon info`: what this host offers: kernel, architecture, CPU, memory
// (with the 95% ceiling that clamps requested memory limits) and which
// isolation features are available.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/command_registry.h"
#include "cli/host_probe_util.h"
#include "cocoon_version.h"

namespace cocoon::cli {
namespace {

int RunInfo(bool json) {
  HostInfo info = ProbeHostInfo();
  DoctorOptions options;
  options.scope = CheckScope::kIsolationOnly;
  std::vector<HostCheck> checks = RunHostChecks(options);
  if (json) {
    nlohmann::json out = HostInfoToJson(info);
    out["cocoon_version"] = COCOON_VERSION_STRING;
    out["features"] = HostChecksToJson(checks);
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("cocoon        %s\n", COCOON_VERSION_STRING);
  std::printf("kernel        %s (%s)\n", info.kernel_release.c_str(), info.kernel_version.c_str());
  std::printf("architecture  %s\n", info.machine.c_str());
  std::printf("cpu           %s, %u online\n", info.cpu_model.c_str(), info.cpus_online);
  std::printf("memory        %s total, %s available", FormatBytes(info.memory_total_bytes).c_str(),
              FormatBytes(info.memory_available_bytes).c_str());
  if (info.cgroup_memory_limit_bytes) {
    std::printf(", cgroup limit %s (cocoon's group or an ancestor)", FormatBytes(*info.cgroup_memory_limit_bytes).c_str());
  }
  std::printf("\nmemory ceiling %s (95%%: larger --mem / memory limits are clamped to it)\n",
              FormatBytes(info.memory_ceiling_bytes).c_str());
  std::printf("cgroups       %s\n", info.cgroup_layout.c_str());
  std::printf("landlock      %s\n", info.landlock_abi ? ("ABI " + std::to_string(info.landlock_abi)).c_str() : "no");
  std::printf("/dev/kvm      %s\n\nisolation features:\n", info.kvm_present ? "present" : "absent");
  for (const auto& c : checks) {
    std::printf("  %-5s %s: %s\n", std::string(CheckStatusName(c.status)).c_str(), c.name.c_str(), c.detail.c_str());
  }
  return 0;
}

void SetUpInfo(CLI::App& app, CommandResult& result) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand("info", "Show the host's kernel, CPU, memory and isolation features");
  cmd->add_flag("--json", *json, "Print as JSON");
  cmd->callback([json, &result] { result.exit_code = RunInfo(*json); });
}

}  // namespace

COCOON_REGISTER_COMMAND(info, SetUpInfo);

}  // namespace cocoon::cli
