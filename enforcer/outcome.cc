// Outcome -> JSON: the one result structure every caller parses.
#include "enforcer/outcome.h"

#include <signal.h>

#include <nlohmann/json.hpp>

namespace cocoon::enforcer {

std::string_view TerminationReasonName(TerminationReason reason) {
  switch (reason) {
    case TerminationReason::kExited: return "exited";
    case TerminationReason::kSignaled: return "signaled";
    case TerminationReason::kTimeout: return "timeout";
    case TerminationReason::kOomKilled: return "oom_killed";
    case TerminationReason::kSeccompKill: return "seccomp_kill";
    case TerminationReason::kCancelled: return "cancelled";
    case TerminationReason::kFailed: return "failed";
  }
  return "unknown";
}

std::string_view LimitMechanismName(LimitMechanism mechanism) {
  switch (mechanism) {
    case LimitMechanism::kCgroupV2: return "cgroup-v2";
    case LimitMechanism::kCgroupV1: return "cgroup-v1";
    case LimitMechanism::kRlimit: return "rlimit";
    case LimitMechanism::kTmpfsSize: return "tmpfs-size";
    case LimitMechanism::kSupervisor: return "supervisor";
    case LimitMechanism::kNotEnforced: return "not-enforced";
  }
  return "unknown";
}

// The signals the CLI holds (started_child.cc, AddCancelSignals).
std::string CancelSignalName(int signal) {
  switch (signal) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    case SIGQUIT: return "SIGQUIT";
    case SIGUSR1: return "SIGUSR1";
    case SIGUSR2: return "SIGUSR2";
    case SIGALRM: return "SIGALRM";
  }
  return "signal " + std::to_string(signal);
}

void RecordCancelAfterTheRecord(int signal, Outcome& outcome) {
  if (signal == 0 || !outcome.cancelled_after_end.empty()) return;
  if (outcome.termination_reason == TerminationReason::kCancelled || outcome.verification == "cancelled") return;
  outcome.cancelled_after_end = CancelSignalName(signal) +
                                " came after the command had ended, once the run was recorded (its audit events "
                                "were written without it): it stopped nothing, and the run stands as reported";
}

int ShellExitStatus(const Outcome& outcome) {
  if (!outcome.verification_error.empty() || !outcome.writable_error.empty() || !outcome.supervisor_error.empty()) {
    return kExitWorkDirUnverified;
  }
  if (outcome.timed_out || outcome.termination_reason == TerminationReason::kTimeout) return 124;
  if (outcome.verification == "cancelled") return 130;  // cancelled during the commit
  if (!outcome.cancelled_after_commit.empty()) return 130;  // during the install: the commit stands
  if (!outcome.cancelled_after_end.empty()) return 130;     // after the command ended: the run stands
  // Cancelled (SIGINT/SIGTERM to cocoon): the shell convention for SIGINT,
  // not the SIGKILL we used on the sandbox.
  if (outcome.termination_reason == TerminationReason::kCancelled) return 130;
  if (outcome.signal > 0) return 128 + outcome.signal;
  if (outcome.exit_code < 0) return 1;
  return outcome.exit_code;
}

nlohmann::json OutcomeToJson(const Outcome& outcome) {
  nlohmann::json j;
  j["exit_code"] = outcome.exit_code;
  j["signal"] = outcome.signal;
  j["termination_reason"] = TerminationReasonName(outcome.termination_reason);
  j["timed_out"] = outcome.timed_out;
  j["oom_killed"] = outcome.oom_killed;
  j["limit_hit"] = outcome.limit_hit.empty() ? nlohmann::json() : nlohmann::json(outcome.limit_hit);
  j["limits_reached"] = nlohmann::json::array();
  for (const auto& reached : outcome.limits_reached) {
    j["limits_reached"].push_back({{"limit", reached.limit}, {"observed_by", reached.observed_by},
                                   {"count", reached.count}, {"ended_the_run", reached.ended_the_run}});
  }
  j["stdout"] = outcome.stdout_data;
  j["stderr"] = outcome.stderr_data;
  j["stdout_truncated"] = outcome.stdout_truncated;
  j["stderr_truncated"] = outcome.stderr_truncated;
  j["stdout_bytes"] = outcome.stdout_bytes;
  j["stderr_bytes"] = outcome.stderr_bytes;
  j["duration_ms"] = outcome.wall_ms;
  j["wall_ms"] = outcome.wall_ms;
  j["user_cpu_ms"] = outcome.user_cpu_ms;
  j["system_cpu_ms"] = outcome.system_cpu_ms;
  j["peak_memory_mb"] = static_cast<double>(outcome.peak_memory_kib) / 1024.0;
  j["peak_mem_kib"] = outcome.peak_memory_kib;
  j["peak_memory_source"] = outcome.peak_memory_source;
  j["limits"] = nlohmann::json::array();
  for (const auto& limit : outcome.limits) {
    j["limits"].push_back({{"limit", limit.limit},
                           {"requested", limit.requested},
                           {"unit", limit.unit},
                           {"mechanism", LimitMechanismName(limit.mechanism)},
                           {"required", limit.required},
                           {"note", limit.note}});
  }
  j["policy"] = {{"name", outcome.policy_name}, {"sha256", outcome.policy_sha256}};
  j["namespaces"] = outcome.namespaces;
  j["landlock_abi"] = outcome.landlock_abi;
  j["denied_syscalls"] = nlohmann::json::array();
  for (const auto& denied : outcome.denied_syscalls) {
    j["denied_syscalls"].push_back({{"name", denied.name},
                                    {"arch", denied.arch},
                                    {"number", denied.number},
                                    {"args", denied.args},
                                    {"action", denied.action},
                                    {"count", denied.count}});
  }
  if (outcome.has_network_report) {
    const NetworkReport& n = outcome.network;
    nlohmann::json denied = nlohmann::json::array();
    for (const auto& d : n.denied) denied.push_back({{"destination", d.destination}, {"reason", d.reason}, {"count", d.count}});
    j["network"] = {{"mode", n.mode},
                    {"mechanism", n.mechanism},
                    {"allowed", n.allowed},
                    {"connections_allowed", n.connections_allowed},
                    {"connections_denied", n.connections_denied},
                    {"connections_failed", n.connections_failed},
                    {"denied", std::move(denied)},
                    {"denied_truncated", n.denied_truncated},
                    {"denied_not_listed", n.denied_not_listed}};
  }
  nlohmann::json findings = nlohmann::json::array();
  for (const auto& finding : outcome.breakout_findings) {
    findings.push_back({{"path", finding.path}, {"kind", finding.kind}, {"target", finding.target}});
    if (finding.left_in_place) findings.back()["left_in_place"] = true;
    if (!finding.mount.empty()) findings.back()["mount"] = finding.mount;
  }
  j["breakout"] = {{"clean", outcome.breakout_clean}, {"findings", findings}};
  if (!outcome.work_mode.empty()) {
    j["breakout"]["work_mode"] = outcome.work_mode;
    j["breakout"]["verified"] = outcome.verification;
    if (!outcome.verification_error.empty()) j["breakout"]["error"] = outcome.verification_error;
    if (!outcome.commit_warning.empty()) j["breakout"]["commit_warning"] = outcome.commit_warning;
    if (!outcome.cancelled_after_commit.empty()) {
      j["breakout"]["cancelled_after_commit"] = outcome.cancelled_after_commit;
    }
    if (!outcome.work_note.empty()) j["breakout"]["note"] = outcome.work_note;
  }
  if (!outcome.writable_verification.empty()) {
    j["breakout"]["writable_mounts"] = {{"verified", outcome.writable_verification}};
    if (!outcome.writable_error.empty()) j["breakout"]["writable_mounts"]["error"] = outcome.writable_error;
  }
  if (outcome.preexisting_entries != 0) {
    j["breakout"]["preexisting"] = {{"count", outcome.preexisting_entries}, {"first", outcome.first_preexisting}};
  }
  j["committed"] = outcome.committed;
  if (!outcome.cancelled_after_end.empty()) j["cancelled_after_end"] = outcome.cancelled_after_end;
  if (!outcome.supervisor_error.empty()) j["supervisor_error"] = outcome.supervisor_error;
  if (!outcome.audit_error.empty()) j["audit_error"] = outcome.audit_error;
  return j;
}

nlohmann::json OutcomeToJson(Outcome&& outcome) {
  std::string stdout_data = std::move(outcome.stdout_data);
  std::string stderr_data = std::move(outcome.stderr_data);
  outcome.stdout_data.clear();
  outcome.stderr_data.clear();
  nlohmann::json j = OutcomeToJson(static_cast<const Outcome&>(outcome));
  j["stdout"] = std::move(stdout_data);
  j["stderr"] = std::move(stderr_data);
  return j;
}

std::string OutcomeToJsonText(const Outcome& outcome, int indent) {
  return OutcomeToJson(outcome).dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace cocoon::enforcer
