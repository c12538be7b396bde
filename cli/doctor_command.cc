// `cocoon doctor`: can this host enforce Cocoon's default policy? One line
// per check (ok / warn / fail, and how to fix it); exit 1 when a required
// check fails, so scripts and CI can gate on it.
#include <cstdio>
#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/command_registry.h"
#include "cli/host_probe_util.h"

namespace cocoon::cli {
namespace {

struct DoctorFlags {
  bool json = false;
  std::string audit_log;
  std::string audit_key;
};

std::string EnvOr(const std::string& value, const char* name) {
  if (!value.empty()) return value;
  const char* env = std::getenv(name);
  return env ? env : "";
}

int RunDoctor(const DoctorFlags& flags) {
  DoctorOptions options;
  options.audit_log = EnvOr(flags.audit_log, "COCOON_AUDIT_LOG");
  options.audit_key = EnvOr(flags.audit_key, "COCOON_AUDIT_KEY");
  std::vector<HostCheck> checks = RunHostChecks(options);
  bool enforceable = DefaultPolicyEnforceable(checks);
  if (flags.json) {
    nlohmann::json out = {{"checks", HostChecksToJson(checks)}, {"default_policy_enforceable", enforceable}};
    std::printf("%s\n", out.dump(2).c_str());
    return enforceable ? 0 : 1;
  }
  for (const auto& c : checks) {
    std::printf("%-5s %s: %s\n", std::string(CheckStatusName(c.status)).c_str(), c.name.c_str(), c.detail.c_str());
    if (c.status != CheckStatus::kOk && !c.fix.empty()) std::printf("      fix: %s\n", c.fix.c_str());
  }
  std::printf("\n%s\n", enforceable ? "The default policy (strict) can be enforced on this host."
                                    : "The default policy (strict) CANNOT be enforced on this host: fix the "
                                      "failed checks above. Cocoon refuses to run rather than run unconfined.");
  return enforceable ? 0 : 1;
}

void SetUpDoctor(CLI::App& app, CommandResult& result) {
  auto flags = std::make_shared<DoctorFlags>();
  CLI::App* cmd = app.add_subcommand("doctor", "Check that this host can enforce Cocoon's default policy");
  cmd->add_flag("--json", flags->json, "Print the checks as JSON");
  cmd->add_option("--audit-log", flags->audit_log, "Audit log to check (default: $COCOON_AUDIT_LOG)");
  cmd->add_option("--audit-key", flags->audit_key, "Audit signing key to check (default: $COCOON_AUDIT_KEY)");
  cmd->callback([flags, &result] { result.exit_code = RunDoctor(*flags); });
}

}  // namespace

COCOON_REGISTER_COMMAND(doctor, SetUpDoctor);

}  // namespace cocoon::cli
