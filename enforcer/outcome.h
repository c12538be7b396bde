// The Outcome of one sandboxed run: what happened, what was measured, and
// what was enforced by which mechanism. `cocoon enforce --json`, `cocoon run
// --json`, the MCP tools and the audit log all report this one structure.
//
// The JSON keeps the field names existing sandbox callers already parse
// (exit_code, stdout, stderr, duration_ms, wall_ms, timed_out, oom_killed,
// termination_reason, stdout_truncated, stderr_truncated, peak_memory_mb,
// peak_mem_kib) and adds Cocoon's own.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace cocoon::enforcer {

enum class TerminationReason {
  kExited,       // the command exited on its own
  kSignaled,     // killed by a signal it did not get from Cocoon
  kTimeout,      // wall-clock or CPU timeout; Cocoon killed the sandbox
  kOomKilled,    // memory limit
  kSeccompKill,  // a syscall rule with action kill
  kCancelled,    // SIGINT/SIGTERM to cocoon, or an MCP cancellation
  kFailed,       // the supervisor failed after the command started (Outcome::supervisor_error);
                 // Cocoon killed the sandbox, and how the command ended is unknown
};

// How a limit was actually enforced on this run.
enum class LimitMechanism {
  kCgroupV2,
  kCgroupV1,
  kRlimit,
  kTmpfsSize,     // disk quota as the size of the staging tmpfs
  kSupervisor,    // wall time and output caps, enforced by the parent
  kNotEnforced,   // best-effort limit that no mechanism could apply
};

struct LimitEnforcement {
  std::string limit;        // "memory", "processes", "wall_time", ...
  uint64_t requested = 0;   // in `unit`
  std::string unit;         // "bytes", "ms", "count", "percent"
  LimitMechanism mechanism = LimitMechanism::kNotEnforced;
  bool required = true;
  std::string note;         // e.g. "RLIMIT_NPROC counts every process of the uid"
};

struct DeniedSyscall {
  std::string name;
  std::string arch = "x86_64";  // the calling convention the program used ("x86" for int 0x80)
  int number = -1;
  std::array<uint64_t, 6> args{};
  std::string action;       // "errno(EPERM)", "kill", "log", ...
  uint64_t count = 1;       // identical denials are coalesced
};

// `network allow { ... }` runs only: what the connect broker
// (enforcer/net_broker.h) let out and what it refused.
struct NetworkDenial {
  std::string destination;  // "203.0.113.7:443", "[2001:db8::1]:80"
  std::string reason;       // "not in the allow-list", "not TCP"
  uint64_t count = 1;       // identical denials are coalesced
};

struct NetworkReport {
  std::string mode;                   // "allow-list"
  std::string mechanism;              // how the allow-list was enforced
  std::vector<std::string> allowed;   // "host:port -> ip, ip" as resolved at launch
  uint64_t connections_allowed = 0;   // brokered TCP connections opened from the host
  uint64_t connections_denied = 0;    // connect(2) answered with an error by the broker
  uint64_t connections_failed = 0;    // allowed, but the host connect failed (refused, timeout)
  std::vector<NetworkDenial> denied;
  // The list is bounded (256 rows, plus 64 kept for internal destinations:
  // IpEndpoint::IsInternal). Once full, a new destination is not listed: it
  // sets denied_truncated and adds its connects to denied_not_listed
  // (connections_denied still counts every one).
  bool denied_truncated = false;
  uint64_t denied_not_listed = 0;
};

struct BreakoutFinding {
  std::string path;         // relative to the work dir
  std::string kind;         // "symlink-escape", "hardlink", "device", "fifo", "socket", "setuid", "setgid",
                            // "mount", "unreadable", "too-deep" (breakout_scan.h)
  std::string target;       // link target, or "" when not a link
  bool left_in_place = false;  // direct mode: removing or defusing it failed; it is still in the host dir
  // "" for the work dir; for a `writable` bind, its path inside the sandbox
  // (workdir/writable_binds.h), and `path` is relative to it ("" for a
  // bound file itself).
  std::string mount{};
};

// The finding's path in messages and audit events: relative to the work
// dir, or (a writable bind's) the bind's path inside the sandbox joined
// with it ("/wb/id").
inline std::string FindingPath(const BreakoutFinding& finding) {
  if (finding.mount.empty()) return finding.path;
  return finding.path.empty() ? finding.mount : finding.mount + "/" + finding.path;
}

// True for the kinds the scan did not look inside ("mount", "unreadable",
// "too-deep"): a staged commit leaves them out; direct mode cannot remove
// what it could not inspect, so it leaves them and says so.
inline bool IsUninspected(const BreakoutFinding& finding) {
  return finding.kind == "mount" || finding.kind == "unreadable" || finding.kind == "too-deep";
}

// A limit the run was observed to reach, and how it was observed. Only
// what the kernel or the supervisor records is listed: a process of the
// sandbox other than the command that hits RLIMIT_FSIZE (SIGXFSZ),
// RLIMIT_CPU (SIGXCPU, then SIGKILL), RLIMIT_NOFILE (EMFILE) or the disk
// quota (ENOSPC) is reaped by the command, not by cocoon, and no counter
// records it: those are not reported (docs/limits_and_workdir.md).
struct LimitReached {
  std::string limit;        // "wall_time", "cpu_time", "memory", "processes"
  std::string observed_by;  // "supervisor wall clock", "cgroup-v1 memory.oom_control oom_kill", ...
  uint64_t count = 1;       // how many times the mechanism counted it (OOM kills, refused forks)
  bool ended_the_run = false;  // it ended the command itself (limit_hit, termination_reason)
};

// Peak memory without a cgroup is wait4's ru_maxrss, the largest of the
// command's, the descendants' it (or they) reaped and, as the kernel counts
// it, the sandbox child's before its execve, when it still ran in cocoon's
// own memory (memory_sharing_clone.h). A process still running when the
// command exits is killed with the pid namespace and reaped by the kernel,
// not by anyone whose figure reaches wait4: its memory is not counted
// (a background `python3` of 100 MiB left the figure at 3 MiB), so neither
// label calls the figure an upper bound of the sandbox's peak.
// kRusagePeak: the figure is above that pre-exec part (and cocoon's own
// high-water mark after the exec) by more than the kernel's per-CPU counting
// error (finish.cc RssCounterErrorKib), so it is the command's (or a reaped
// descendant's) own peak. kRusagePeakMayBeCocoons: it is not, so it may be
// cocoon's memory before the exec rather than the command's.
inline constexpr char kRusagePeak[] =
    "rusage maxrss of the command and the children it reaped (processes still running at the end are not counted)";
inline constexpr char kRusagePeakMayBeCocoons[] =
    "rusage maxrss of the command and the children it reaped, or of cocoon before exec if that was larger "
    "(processes still running at the end are not counted)";

struct Outcome {
  int exit_code = -1;
  int signal = 0;
  TerminationReason termination_reason = TerminationReason::kExited;
  bool timed_out = false;
  bool oom_killed = false;
  // The limit that ended the run: "wall_time", "cpu_time", "memory"; else
  // the first limit a process of the sandbox was observed reaching while
  // the command went on ("memory": a child OOM-killed; "processes": a fork
  // refused at pids.max); "" when none was. limits_reached lists them all,
  // with the mechanism that observed each. A run a limit ended is not
  // committed (finish.cc, by termination_reason).
  std::string limit_hit;
  std::vector<LimitReached> limits_reached;

  std::string stdout_data;
  std::string stderr_data;
  bool stdout_truncated = false;
  bool stderr_truncated = false;
  uint64_t stdout_bytes = 0;  // total the command wrote, captured or not
  uint64_t stderr_bytes = 0;

  uint64_t wall_ms = 0;
  uint64_t user_cpu_ms = 0;
  uint64_t system_cpu_ms = 0;
  uint64_t peak_memory_kib = 0;
  // "cgroup-v2 memory.peak", "cgroup-v1 max_usage_in_bytes" (the sandbox's
  // group), kRusagePeak or kRusagePeakMayBeCocoons (no cgroup: wait4).
  std::string peak_memory_source;

  std::vector<LimitEnforcement> limits;
  std::string policy_name;
  std::string policy_sha256;
  std::vector<std::string> namespaces;  // "user", "mnt", "pid", "net", "uts", "ipc", "cgroup"
  int landlock_abi = 0;                 // 0: Landlock not applied
  std::vector<DeniedSyscall> denied_syscalls;
  bool has_network_report = false;      // true for allow-list runs only
  NetworkReport network;

  bool breakout_clean = true;
  std::vector<BreakoutFinding> breakout_findings;
  bool committed = false;               // staged work dir results copied back to the host
  // With a work dir: "staged-copy", "staged-overlay" or "direct", and when
  // breakout verification ran: "before-commit" (staged: nothing reached the
  // host unverified), "discarded" (staged: verified, and by request not
  // committed: SandboxRequest::discard_work_dir), "after-the-fact" (direct:
  // the sandbox wrote to the host dir itself; escapes were removed
  // afterwards), "not-run" (an
  // interrupted run: nothing committed), "cancelled" (staged: cocoon was
  // cancelled during the commit: nothing committed), "failed" (staged: the
  // scan or the commit failed, nothing committed) or "incomplete" (direct:
  // entries that could not be inspected or defused remain in the host dir).
  // Empty without a work dir.
  std::string work_mode;
  std::string verification;
  // Why verification is "failed" or "incomplete"; empty otherwise.
  std::string verification_error;
  // With `writable` binds: "after-the-fact" (verified after the run, as a
  // direct work dir is: what the run made there that could be a way out was
  // removed or defused, and is among breakout_findings with its mount) or
  // "incomplete" (something is left unverified or not defused:
  // writable_error says what). Empty without writable binds.
  std::string writable_verification;
  std::string writable_error;
  // Direct work dir and writable binds: entries the scan flags that the host
  // had before the run, unchanged (workdir/change_floor.h). They are left
  // as they are and are not breakout findings: how many, and the first.
  uint64_t preexisting_entries = 0;
  std::string first_preexisting;  // "path (kind)", with the mount for a writable bind
  // Committed, but the host dir's previous contents could not be removed
  // from beside it (where they are, and why); empty otherwise.
  std::string commit_warning;
  // Committed, and a cancel (a SIGINT/SIGTERM/... to cocoon, or the
  // caller's CancelHandle) came after the commit's last cancel check: during
  // the install, which it can no longer stop, or after it. The commit is
  // whole and stands; this says so, and ShellExitStatus gives 130 as for any
  // cancel. Empty otherwise.
  std::string cancelled_after_commit;
  // A cancel (a SIGINT/SIGTERM/... to cocoon, or the caller's CancelHandle)
  // came after the command had ended, while cocoon verified the run,
  // committed its work dir or assembled this Outcome: it stopped nothing,
  // and the run stands as reported. Said for every run, with a work dir or
  // without (for a commit, cancelled_after_commit says so too);
  // ShellExitStatus gives 130 as for any cancel. Empty otherwise.
  std::string cancelled_after_end;
  // What the sandbox found different about its work dir (Staging::note()),
  // e.g. entries a rootless overlay cannot change; empty otherwise.
  std::string work_note;
  // The supervisor failed after the command had started (an error or an
  // exception while it watched the run or measured it): why. The sandbox was
  // killed and, once every process of it was gone, the work dir and the
  // writable binds were verified as after any run (a staged work dir commits
  // nothing); termination_reason is kFailed. Empty otherwise.
  std::string supervisor_error;
  // The audit log's events after the launch event (denials, limits,
  // findings, exit) could not be written: why. The run has happened; its
  // record is incomplete (`cocoon audit verify` shows what is there).
  std::string audit_error;
};

std::string_view TerminationReasonName(TerminationReason reason);
// "SIGINT", "SIGTERM", ... for the signals that cancel a run; "signal N" else.
std::string CancelSignalName(int signal);
// A cancelling signal (0: none) that came after the run's Outcome was
// assembled and its audit events written (SignalGuard::ReleaseCancelSignals
// consumed it): cancelled_after_end says so, unless a cancel is recorded
// already; ShellExitStatus then gives 130.
void RecordCancelAfterTheRecord(int signal, Outcome& outcome);
std::string_view LimitMechanismName(LimitMechanism mechanism);

// The exit status `cocoon enforce` returns without --json: the command's exit
// code, 128+signal when signalled, 124 on timeout (like timeout(1)), and 125
// above all of these when the work dir or a writable bind could not be
// verified (verification "failed" or "incomplete"): its contents must not be
// trusted; also 125 when the supervisor failed after the command started
// (supervisor_error), like timeout(1) and env(1) when they fail themselves.
inline constexpr int kExitWorkDirUnverified = 125;
int ShellExitStatus(const Outcome& outcome);

nlohmann::json OutcomeToJson(const Outcome& outcome);
// The same, moving the captured stdout/stderr into the JSON instead of
// copying them (up to the output cap each): for the last use of an Outcome.
nlohmann::json OutcomeToJson(Outcome&& outcome);

// OutcomeToJson serialised; invalid UTF-8 in the captured output is replaced
// with U+FFFD (nlohmann's dump would throw). indent < 0: one line.
std::string OutcomeToJsonText(const Outcome& outcome, int indent = -1);

}  // namespace cocoon::enforcer
