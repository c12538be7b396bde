// cocoon-full's side of cli/launch_dynamic.h: the signed audit log and host
// name resolution, in process.

#include "audit/audit_log.h"
#include "audit/events.h"
#include "audit/outcome_events.h"
#include "cli/audit_log_util.h"
#include "cli/launch_dynamic.h"
#include "compiler/common/log.h"

namespace cocoon::cli {
namespace {

audit::Event LaunchEvent(const PolicyArtifacts& artifacts, const enforcer::Sandbox& sandbox,
                         const std::vector<std::string>& argv, const LaunchRequest& request, const std::string& run_id) {
  audit::SandboxLaunchedInfo info;
  info.policy_name = artifacts.plan.policy_name;
  info.policy_sha256 = artifacts.plan.policy_sha256;
  info.profile = artifacts.profile.empty() ? artifacts.plan.policy_name : artifacts.profile;
  info.argv = argv;
  info.cwd = artifacts.plan.cwd;
  info.uid_inside = artifacts.plan.uid;
  info.gid_inside = artifacts.plan.gid;
  info.user_inside = artifacts.plan.uid == 65534 ? "nobody" : std::to_string(artifacts.plan.uid);
  info.namespaces = sandbox.namespaces();
  for (const auto& limit : sandbox.limits()) info.limits.push_back(audit::LimitInfoFrom(limit));
  info.landlock_abi = sandbox.landlock_abi();
  info.overrides = request.overrides;
  info.run_id = run_id;
  info.mcp = request.mcp_call;
  return audit::SandboxLaunched(info);
}

class SignedLaunchAuditLog : public LaunchAuditLog {
 public:
  explicit SignedLaunchAuditLog(std::unique_ptr<audit::AuditLog> log) : log_(std::move(log)) {}

  Result<AuditReference> RecordLaunch(const PolicyArtifacts& artifacts, const enforcer::Sandbox& sandbox,
                                      const std::vector<std::string>& argv, const LaunchRequest& request,
                                      const std::string& run_id) override {
    policy_name_ = artifacts.plan.policy_name;
    auto written = log_->Append(LaunchEvent(artifacts, sandbox, argv, request, run_id));
    if (!written.ok()) return written.status().WithContext("writing the launch audit event (the run is refused)");
    return AuditReference{written->sequence, written->event_id};
  }

  Status RecordOutcome(const enforcer::Outcome& outcome, pid_t sandbox_pid, const std::string& run_id) override {
    auto written = log_->AppendBatch(audit::EventsFromOutcome(outcome, sandbox_pid, run_id));
    Status closed = log_->Close();
    if (!written.ok()) {
      log::Error("audit: the run's events could not be written: " + written.status().ToString());
      return written.status().WithContext("writing the run's audit events");
    }
    if (!closed.ok()) {
      log::Error("audit: closing the log: " + closed.ToString());
      return closed.WithContext("sealing the audit log after the run");
    }
    return Status::Ok();
  }

  void RecordFailure(const Status& why, pid_t sandbox_pid, const std::string& run_id) override {
    audit::ProcessExitedInfo exited;
    exited.pid = sandbox_pid;
    exited.termination_reason = "failed";
    exited.error = why.message();
    exited.policy_name = policy_name_;
    exited.run_id = run_id;
    auto written = log_->Append(audit::ProcessExited(exited));
    Status closed = log_->Close();
    if (!written.ok()) log::Error("audit: the failed run's exit event could not be written: " + written.status().ToString());
    if (!closed.ok()) log::Error("audit: closing the log: " + closed.ToString());
  }

 private:
  std::unique_ptr<audit::AuditLog> log_;
  std::string policy_name_;  // the launch event's
};

}  // namespace

Result<std::unique_ptr<audit::AuditLog>> OpenRequiredAuditLog(const AuditOptions& options) {
  audit::AuditLogOptions log_options;
  log_options.path = options.log_path;
  log_options.key_path = options.key_path;
  log_options.requirement = audit::AuditRequirement::kRequired;
  return audit::AuditLog::Open(log_options);
}

Result<std::unique_ptr<LaunchAuditLog>> OpenLaunchAuditLog(const AuditOptions& options) {
  auto opened = OpenRequiredAuditLog(options);
  if (!opened.ok()) return opened.status().WithContext("audit log (required; the run is refused)");
  return std::unique_ptr<LaunchAuditLog>(new SignedLaunchAuditLog(std::move(*opened)));
}

Result<enforcer::AllowListResolver> HostNameResolver() { return &enforcer::ResolveAllowList; }

bool LaunchDynamicExecsFullCocoon() { return false; }

}  // namespace cocoon::cli
