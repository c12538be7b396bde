// Header-only glue from the enforcer's Outcome to audit events, so that
// cocoon_audit itself never links cocoon_enforcer (dependencies point one way;
// the caller, e.g. cli/launch_util.cc, links both).
//
//   for (auto& e : cocoon::audit::EventsFromOutcome(outcome, pid, run_id)) log->Append(std::move(e));
#pragma once

#include <string>
#include <vector>

#include "audit/events.h"
#include "enforcer/outcome.h"

namespace cocoon::audit {

inline LimitInfo LimitInfoFrom(const enforcer::LimitEnforcement& limit) {
  return LimitInfo{limit.limit, limit.requested, limit.unit,
                   std::string(enforcer::LimitMechanismName(limit.mechanism)), limit.required};
}

inline constexpr uint64_t kMaxBreakoutFindingEvents = 256;

// Syscall denials, limit hits, breakout findings and the exit, in that order.
inline std::vector<Event> EventsFromOutcome(const enforcer::Outcome& outcome, int pid,
                                            const std::string& run_id) {
  std::vector<Event> events;
  for (const auto& denied : outcome.denied_syscalls) {
    // The number is the calling convention's own: say which one unless x86_64.
    std::string name = denied.arch == "x86_64" ? denied.name : denied.name + " (" + denied.arch + ")";
    SyscallDeniedInfo info{std::move(name), denied.number,
                           std::vector<uint64_t>(denied.args.begin(), denied.args.end()),
                           denied.action, denied.count, outcome.policy_name, pid, run_id};
    events.push_back(SyscallDenied(info));
  }
  auto limit_value = [&](const char* name) -> uint64_t {
    for (const auto& limit : outcome.limits) if (limit.limit == name) return limit.requested;
    return 0;
  };
  auto hit = [&](LimitKind kind, uint64_t limit, uint64_t observed, std::string unit, std::string detail) {
    events.push_back(LimitHit(LimitHitInfo{kind, limit, observed, std::move(unit), std::move(detail),
                                           outcome.policy_name, run_id}));
  };
  if (outcome.timed_out) hit(LimitKind::kTimeout, limit_value("wall_time"), outcome.wall_ms, "ms", "");
  if (outcome.oom_killed)
    hit(LimitKind::kOom, limit_value("memory"), outcome.peak_memory_kib * 1024, "bytes", "");
  if (outcome.stdout_truncated)
    hit(LimitKind::kOutputTruncated, limit_value("output"), outcome.stdout_bytes, "bytes", "stdout");
  if (outcome.stderr_truncated)
    hit(LimitKind::kOutputTruncated, limit_value("output"), outcome.stderr_bytes, "bytes", "stderr");
  // One event per finding, up to a bound: a sandbox decides how many
  // entries it leaves (up to the work dir's inode limit), and each event is
  // a signed line. The exit event gives the total.
  uint64_t logged = 0;
  for (const auto& finding : outcome.breakout_findings) {
    if (logged == kMaxBreakoutFindingEvents) break;
    // A writable bind's finding is named by its path inside the sandbox.
    events.push_back(BreakoutFinding(BreakoutFindingInfo{enforcer::FindingPath(finding), finding.kind, finding.target,
                                                         outcome.policy_name, run_id}));
    ++logged;
  }
  ProcessExitedInfo exited;
  exited.pid = pid;
  exited.exit_code = outcome.exit_code;
  exited.signal = outcome.signal;
  exited.termination_reason = std::string(enforcer::TerminationReasonName(outcome.termination_reason));
  exited.wall_ms = outcome.wall_ms;
  exited.user_cpu_ms = outcome.user_cpu_ms;
  exited.system_cpu_ms = outcome.system_cpu_ms;
  exited.peak_memory_kib = outcome.peak_memory_kib;
  exited.peak_memory_source = outcome.peak_memory_source;
  exited.stdout_bytes = outcome.stdout_bytes;
  exited.stderr_bytes = outcome.stderr_bytes;
  exited.breakout_clean = outcome.breakout_clean;
  exited.breakout_findings = outcome.breakout_findings.size();
  exited.breakout_findings_logged = logged;
  exited.work_mode = outcome.work_mode;
  exited.verified = outcome.verification;
  exited.committed = outcome.committed;
  exited.verification_error = outcome.verification_error;
  exited.commit_warning = outcome.commit_warning;
  exited.writable_verified = outcome.writable_verification;
  exited.writable_error = outcome.writable_error;
  // termination_reason "failed": the supervisor failed after the command
  // started (the sandbox was killed, then verified).
  exited.error = outcome.supervisor_error;
  exited.cancelled_after_end = outcome.cancelled_after_end;
  exited.policy_name = outcome.policy_name;
  exited.run_id = run_id;
  events.push_back(ProcessExited(exited));
  return events;
}

}  // namespace cocoon::audit
