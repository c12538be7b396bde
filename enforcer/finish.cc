// After execve: supervise the sandbox, then measure, verify the work dir and
// commit, and assemble the Outcome. Every path from the command's start ends
// in the verification of a direct work dir and the writable binds, after
// the sandbox is gone: a supervisor that fails (an error, an exception) kills
// it first and reports itself in the Outcome (supervisor_error, exit 125).
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <exception>
#include <string>

#include "enforcer/notify.h"
#include "enforcer/sandbox_impl.h"
#include "enforcer/started_child.h"
#include "enforcer/supervisor.h"

namespace cocoon::enforcer {
namespace {

uint64_t Millis(const struct timeval& tv) {
  return static_cast<uint64_t>(tv.tv_sec) * 1000 + static_cast<uint64_t>(tv.tv_usec) / 1000;
}

// RLIMIT_CPU's soft and hard limits in seconds (0: none); the plan sets
// both to the limit (limit_plan.cc, PlanCpuTime). The sandbox's init is the
// command, and the kernel does not deliver SIGXCPU (or any signal it has no
// handler for, SIGKILL and SIGSTOP aside) to a pid namespace's init: the
// hard limit kills it with SIGKILL (setrlimit(2), pid_namespaces(7)).
// Nothing inside can SIGKILL its own init, and cocoon's own kills are the
// timeout and the cancel, so a SIGKILL after that much CPU time is the limit.
struct CpuLimits {
  uint64_t soft_seconds = 0;
  uint64_t hard_seconds = 0;
};

// How far below the hard limit wait4's CPU time of a command the limit
// killed may read: the kernel's check counts CPU time in ticks, wait4
// reports it scaled to the scheduler's runtime, and the two were seen 30 ms
// apart (2,969 ms reported at a 3 s hard limit).
constexpr uint64_t kCpuLimitSlackMs = 250;

// Whether the CPU limit killed the command: SIGXCPU (a soft limit below the
// hard one, which the plan no longer sets), or SIGKILL with CPU time of its
// own within kCpuLimitSlackMs of the hard limit. Also decides, when the
// memory cgroup counted an OOM kill and the command died by SIGKILL, whether
// the OOM killer killed the command itself or another process of the
// sandbox (a child it ran before, `python3 -c ...; while :; do :; done`)
// while the CPU limit killed the command: the kernel says neither whom it
// killed nor why a SIGKILL came, so the command's CPU time decides, and a
// command the OOM killer ended in the last kCpuLimitSlackMs before its hard
// limit is reported as the CPU limit's.
bool CpuLimitKilled(const CpuLimits& cpu, int signal, uint64_t cpu_ms) {
  if (cpu.hard_seconds == 0) return false;
  if (signal == SIGXCPU) return true;
  return signal == SIGKILL && cpu_ms + kCpuLimitSlackMs >= cpu.hard_seconds * 1000;
}

void SetTermination(const SuperviseResult& run, bool oom, const CpuLimits& cpu, Outcome& outcome) {
  int status = run.wait_status;
  if (WIFEXITED(status)) outcome.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) outcome.signal = WTERMSIG(status);
  outcome.oom_killed = oom;
  outcome.timed_out = run.timed_out;
  // RLIMIT_CPU counts the command's own CPU time: the time of the children
  // it reaped (in wait4's rusage) must not make a command the OOM killer
  // ended look as if the CPU limit had (a review: children used 2.8 s, the
  // command 0.01 s, then it was OOM-killed, and the run was called a CPU
  // timeout). Only where /proc could not say is the total used.
  const uint64_t cpu_ms = run.own_cpu_ms.value_or(Millis(run.usage.ru_utime) + Millis(run.usage.ru_stime));
  const bool cpu_limit = CpuLimitKilled(cpu, outcome.signal, cpu_ms);
  // An OOM kill counted while the CPU limit killed the command was of
  // another process of the sandbox: memory is then in limits_reached, not
  // what ended the run.
  const bool oom_ended = oom && outcome.signal == SIGKILL && !cpu_limit;
  if (run.cancelled) {
    outcome.termination_reason = TerminationReason::kCancelled;
  } else if (run.timed_out) {
    outcome.termination_reason = TerminationReason::kTimeout;
    outcome.limit_hit = "wall_time";
  } else if (run.killed_by_notify || outcome.signal == SIGSYS) {
    // SECCOMP_RET_KILL_PROCESS ends the process with SIGSYS (seccomp(2)); a
    // kill rule routed through user notification is killed by us.
    outcome.termination_reason = TerminationReason::kSeccompKill;
  } else if (oom_ended) {
    outcome.termination_reason = TerminationReason::kOomKilled;
    outcome.limit_hit = "memory";
  } else if (cpu_limit) {
    outcome.termination_reason = TerminationReason::kTimeout;  // "wall-clock or CPU timeout"
    outcome.timed_out = true;
    outcome.limit_hit = "cpu_time";
  } else if (outcome.signal != 0) {
    outcome.termination_reason = TerminationReason::kSignaled;
  } else {
    outcome.termination_reason = TerminationReason::kExited;
  }
}

// What the cgroup counted during the run (0 where it has no such group).
struct CgroupEvents {
  uint64_t oom_kills = 0;
  std::string oom_source;
  uint64_t refused_forks = 0;
  std::string pids_source;
};

// The limits the run reached, as far as anything observed them: the one
// that ended the command (SetTermination), and what the cgroup counted for
// any process of the sandbox. A child the kernel OOM-killed, or a fork
// refused at pids.max, while the command itself went on, used to leave
// limit_hit null; the command reaps its own children, so a child's SIGXFSZ
// or SIGXCPU death is seen by nobody here and is not claimed.
void RecordLimitsReached(const CgroupEvents& events, Outcome& outcome) {
  const bool ended_by_memory = outcome.termination_reason == TerminationReason::kOomKilled;
  if (outcome.limit_hit == "wall_time") outcome.limits_reached.push_back({"wall_time", "supervisor wall clock", 1, true});
  if (outcome.limit_hit == "cpu_time") {
    outcome.limits_reached.push_back({"cpu_time", "RLIMIT_CPU (the command's wait status and CPU time)", 1, true});
  }
  if (events.oom_kills != 0) {
    outcome.limits_reached.push_back({"memory", events.oom_source, events.oom_kills, ended_by_memory});
  }
  if (events.refused_forks != 0) {
    outcome.limits_reached.push_back({"processes", events.pids_source, events.refused_forks, false});
  }
  if (outcome.limit_hit.empty() && !outcome.limits_reached.empty()) outcome.limit_hit = outcome.limits_reached.front().limit;
}

// Direct mode: what the scan could not inspect (mount, unreadable,
// too-deep) is still in the host dir. "" when there is nothing.
std::string UninspectedSummary(const std::vector<BreakoutFinding>& findings) {
  size_t uninspected = 0;
  const BreakoutFinding* first = nullptr;
  for (const BreakoutFinding& finding : findings) {
    if (!IsUninspected(finding)) continue;
    if (uninspected++ == 0) first = &finding;
  }
  if (uninspected == 0) return "";
  return std::to_string(uninspected) + (uninspected == 1 ? " entry" : " entries") +
         " of the host work dir could not be inspected and were left in place (first: " + first->path + ", " +
         first->kind + "); check them by hand before trusting the dir";
}

// The host's own entries a scan after the fact left alone (change_floor.h):
// counted, with the first named ("path (kind)"), not findings.
void NotePreexisting(const std::vector<BreakoutFinding>& preexisting, Outcome& outcome) {
  if (preexisting.empty()) return;
  if (outcome.preexisting_entries == 0) {
    outcome.first_preexisting = FindingPath(preexisting.front()) + " (" + preexisting.front().kind + ")";
  }
  outcome.preexisting_entries += preexisting.size();
}

// The command ran, so a scan or commit that fails still ends in an Outcome
// (the caller learns what ran and what it cost) that says the work dir was
// not verified: nothing was committed in staged modes, and in direct mode
// what the scan could not inspect or defuse is still in the host dir. What
// the scan found before a later step failed is kept, so it is reported and
// audited either way.
void RecordVerification(StagingResult staged, bool direct, Outcome& outcome) {
  if (staged.scanned) {
    outcome.breakout_findings = std::move(staged.scan.findings);
    outcome.breakout_clean = outcome.breakout_findings.empty();
  }
  NotePreexisting(staged.preexisting, outcome);
  outcome.committed = staged.committed;
  outcome.commit_warning = std::move(staged.commit.cleanup_warning);
  if (!staged.commit.note.empty()) {
    outcome.work_note += (outcome.work_note.empty() ? "" : "; ") + staged.commit.note;
  }
  if (staged.cancelled) {
    // Cancelled while committing: the host dir is as it was, so nothing
    // unverified reached it, but nothing was delivered (ShellExitStatus
    // gives 130, as for any cancel).
    outcome.verification = "cancelled";
    return;
  }
  // Staged: uninspected entries were left out with the rest.
  std::string uninspected = direct ? UninspectedSummary(outcome.breakout_findings) : "";
  if (staged.error.ok()) {
    if (uninspected.empty()) return;
    outcome.verification = "incomplete";
    outcome.verification_error = std::move(uninspected);
    return;
  }
  if (!staged.scanned) outcome.breakout_clean = false;
  outcome.verification = direct ? "incomplete" : "failed";
  outcome.verification_error = staged.error.message();
  if (direct) {
    outcome.verification_error += "; the host work dir may still hold what the sandbox left: inspect it before trusting it";
    if (!uninspected.empty()) outcome.verification_error += "; also " + uninspected;
  } else if (staged.error.code() != ErrorCode::kDataLoss &&  // a commit that could not be undone says so itself
             outcome.verification_error.find("nothing was committed") == std::string::npos) {
    outcome.verification_error += "; nothing was committed to the host work dir";
  }
}

void RecordWritableBinds(WritableBindsResult binds, Outcome& outcome) {
  outcome.writable_verification = binds.incomplete ? "incomplete" : "after-the-fact";
  outcome.writable_error = std::move(binds.error);
  if (!binds.findings.empty() || binds.incomplete) outcome.breakout_clean = false;
  for (BreakoutFinding& finding : binds.findings) outcome.breakout_findings.push_back(std::move(finding));
  NotePreexisting(binds.preexisting, outcome);
}

// A cancel (a SIGINT/SIGTERM/... to cocoon, read here from the run's
// signalfd, or the caller's CancelHandle) that came after the command had
// ended stopped nothing: the command's end, the verification and any commit
// stand as the Outcome reports them. It used to be drained unrecorded when
// the signal guard went (~SignalGuard), and cocoon exited 0 as if nothing
// had come: for a committed run whose cancel came during the install (after
// the commit's last cancel check) and, until later, for every run with no
// staged commit (no work dir, direct mode, nothing committed). Now the
// Outcome says so in every case (cancelled_after_end, and for a commit
// cancelled_after_commit), and ShellExitStatus gives 130, as for any cancel.
// A run the cancel ended (kCancelled) or whose commit it stopped
// ("cancelled") says so already.
void RecordLateCancel(int signal_fd, const std::atomic<bool>* cancel, Outcome& outcome) {
  if (outcome.termination_reason == TerminationReason::kCancelled || outcome.verification == "cancelled") return;
  std::string what;
  struct signalfd_siginfo info {};
  if (signal_fd >= 0 && read(signal_fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    what = CancelSignalName(static_cast<int>(info.ssi_signo));
  } else if (cancel != nullptr && cancel->load()) {
    what = "a cancel";
  } else {
    return;
  }
  outcome.cancelled_after_end = what + " came after the command had ended, while cocoon finished the run (" +
                                (outcome.committed ? "its commit of the work dir" : "its verification and Outcome") +
                                "): it stopped nothing, and the run stands as reported";
  if (!outcome.committed) return;
  outcome.cancelled_after_commit = what + " came while the work dir was being committed, after the last moment it "
                                          "could stop the commit: the commit is whole and stands";
}

// Runs one step of the finish, turning an exception into a failed Status:
// a throw from the caller's output callback, the notification handler or an
// allocation must not skip the verification that follows.
template <typename Step>
Status Guarded(const char* what, Step&& step) {
  try {
    return step();
  } catch (const std::exception& e) {
    return InternalError(std::string(what) + ": " + e.what());
  } catch (...) {
    return InternalError(std::string(what) + ": an exception of an unknown type");
  }
}

// Kills the sandbox and waits until its init has exited. The kernel kills
// every other process of the pid namespace, and waits until they are gone,
// before the init itself exits (pid_namespaces(7): zap_pid_ns_processes), so
// afterwards nothing of the sandbox writes to the host. A pidfd is readable
// once its process has exited, reaped or not (pidfd_open(2)). Then reaps it
// (StartedChild::Kill, which no longer blocks), if no one has.
void EndSandbox(StartedChild& started) {
  syscall(SYS_pidfd_send_signal, started.pidfd(), SIGKILL, nullptr, 0);
  struct pollfd p {started.pidfd(), POLLIN, 0};
  int ready;
  do {
    ready = poll(&p, 1, -1);
  } while (ready < 0 && errno == EINTR);
  // poll itself failed (ENOMEM): Kill's blocking waitid returns only once
  // the init has exited too (or, ECHILD, was reaped: exited).
  started.Kill();
}

// The supervisor failed after the command had started: the Outcome says so
// (and ShellExitStatus gives 125). The command's own end is unknown.
void RecordSupervisorFailure(const Status& failure, std::chrono::steady_clock::time_point start, Outcome& outcome) {
  outcome.termination_reason = TerminationReason::kFailed;
  outcome.supervisor_error = failure.message() +
                             ": the supervisor failed after the command started; the sandbox was killed, and how the "
                             "command ended is unknown";
  if (outcome.wall_ms == 0) {
    outcome.wall_ms = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
  }
}

// How far apart two readings of one address space's resident size may be
// while the true size is the same (KiB). The kernel counts resident pages in
// per-CPU counters (mm->rss_stat, a percpu_counter per kind since Linux 6.2):
// each CPU holds up to `batch` pages of changes before folding them into the
// shared count (lib/percpu_counter.c: percpu_counter_batch = max(32, 2 x
// online CPUs)), and getrusage, wait4 and execve's saved high-water mark read
// only the shared count (get_mm_counter: percpu_counter_read_positive). So a
// reading of the resident size (file + anon + shmem pages: three counters)
// is off by up to 3 x CPUs x batch pages either way, and two readings by
// twice that. Seen: a `grep` of 2 MiB reported as its own 3460 KiB peak
// because wait4's figure was 128 KiB above the child's own record of the
// memory it ran in. (Before 6.2 each task cached up to 64 page events,
// TASK_RSS_EVENTS_THRESH, which this bound also covers for a few threads.)
long RssCounterErrorKib() {
  const long cpus = std::max(1L, sysconf(_SC_NPROCESSORS_CONF));
  const long batch = std::max(32L, 2 * cpus);
  const long page_kib = std::max(1L, sysconf(_SC_PAGESIZE) / 1024);
  return 2 * 3 * cpus * batch * page_kib;
}

}  // namespace

Status Sandbox::Impl::SuperviseAndMeasure(StartedChild& started, std::chrono::steady_clock::time_point start,
                                          int listener_fd, OutputCapture& out, OutputCapture& err, Outcome& outcome) {
  const auto& plan = request.plan;
  SuperviseInputs inputs;
  inputs.pid = pid;
  inputs.pidfd = started.pidfd();
  inputs.stdout_fd = started.stdout_fd();
  inputs.stderr_fd = started.stderr_fd();
  inputs.listener_fd = listener_fd;
  inputs.cancel_fd = request.cancel ? request.cancel->fd() : -1;
  inputs.signal_fd = started.signal_fd();
  inputs.timeout_ms = limit_plan.wall_time_ms != 0 ? limit_plan.wall_time_ms : plan.wall_timeout_ms;
  inputs.start = start;
  if (responder) inputs.on_notification = [&](int fd) { return responder->HandleOne(fd); };
  COCOON_ASSIGN_OR_RETURN(SuperviseResult run, Supervise(inputs, out, err));

  bool oom = false;
  CgroupEvents events;
  if (cgroup) {
    auto count = cgroup->OomKillCount();
    oom = count.ok() && *count > 0;
    if (oom) {
      events.oom_kills = *count;
      events.oom_source = cgroup->OomKillSource();
    }
    if (auto forks = cgroup->PidsMaxCount(); forks.ok() && *forks > 0) {
      events.refused_forks = *forks;
      events.pids_source = cgroup->PidsMaxSource();
    }
    auto peak = cgroup->PeakMemoryBytes();
    if (peak.ok()) {
      outcome.peak_memory_kib = *peak / 1024;
      outcome.peak_memory_source = cgroup->PeakMemorySource();
    }
    // Every process died with the namespace's init; Cgroup::Destroy (in
    // Sandbox::Run) still sweeps the group before removing it.
  }
  if (outcome.peak_memory_source.empty()) {
    // wait4's maxrss is the largest of the command's, its reaped
    // descendants' and the child's before execve, when it ran in cocoon's
    // memory (child_spec.h, ListenerHandoff::pre_exec_maxrss_kib). Not
    // clearly above that last one, it may be cocoon's own: said so, not
    // passed off as the command's (a tiny command reported cocoon's 7.5
    // MiB). The child's record is taken before its last system calls, and
    // this process kept using the memory until the execve: its own
    // high-water mark after the exec covers that (launcher.cc), and both
    // are readings of per-CPU counters (RssCounterErrorKib).
    outcome.peak_memory_kib = static_cast<uint64_t>(run.usage.ru_maxrss);  // KiB (getrusage(2))
    const long before_exec = started.handoff() != nullptr ? started.handoff()->pre_exec_maxrss_kib.load() : 0;
    const long cocoons = std::max(before_exec, launcher_maxrss_after_exec_kib) + RssCounterErrorKib();
    outcome.peak_memory_source = run.usage.ru_maxrss > cocoons ? kRusagePeak : kRusagePeakMayBeCocoons;
  }
  SetTermination(run, oom, CpuLimits{limit_plan.cpu_soft_seconds, limit_plan.cpu_hard_seconds}, outcome);
  RecordLimitsReached(events, outcome);
  outcome.wall_ms = run.wall_ms;
  outcome.user_cpu_ms = Millis(run.usage.ru_utime);
  outcome.system_cpu_ms = Millis(run.usage.ru_stime);
  return Status::Ok();
}

void Sandbox::Impl::DescribeRun(OutputCapture& out, OutputCapture& err, Outcome& outcome) {
  const auto& plan = request.plan;
  outcome.stdout_data = std::move(out.data());
  outcome.stderr_data = std::move(err.data());
  outcome.stdout_bytes = out.total();
  outcome.stderr_bytes = err.total();
  outcome.stdout_truncated = out.truncated();
  outcome.stderr_truncated = err.truncated();
  outcome.limits = limit_plan.table;
  outcome.policy_name = plan.policy_name;
  outcome.policy_sha256 = plan.policy_sha256;
  outcome.namespaces = namespaces;
  outcome.landlock_abi = landlock_abi;
  if (responder) outcome.denied_syscalls = responder->TakeDenied();
  if (broker) {
    outcome.has_network_report = true;
    outcome.network = broker->Report();
    // Also one denied-syscall row, so the audit log carries a SyscallDenied
    // event for refused connects (destinations are in outcome.network).
    if (outcome.network.connections_denied > 0) {
      DeniedSyscall row;
      row.name = "connect";
      row.number = SYS_connect;
      row.action = "errno(ECONNREFUSED)";
      row.count = outcome.network.connections_denied;
      outcome.denied_syscalls.push_back(std::move(row));
    }
  }
}

void Sandbox::Impl::VerifyWorkDir(int signal_fd, Outcome& outcome) {
  if (!staging) return;
  // Commit only what a command finished on its own: a cancelled run, or one
  // a limit or a kill rule ended (wall or CPU time, memory, seccomp), may
  // have left half-written files, and an interrupted run (or one whose
  // supervisor failed) commits nothing.
  bool finished_on_its_own = outcome.termination_reason == TerminationReason::kExited ||
                             outcome.termination_reason == TerminationReason::kSignaled;
  StagingStrategy strategy = staging->strategy();
  outcome.work_mode = strategy == StagingStrategy::kDirect    ? "direct"
                      : strategy == StagingStrategy::kOverlay ? "staged-overlay"
                                                              : "staged-copy";
  outcome.work_note = staging->note();
  outcome.verification = strategy == StagingStrategy::kDirect ? "after-the-fact"
                          : !finished_on_its_own              ? "not-run"
                          : request.discard_work_dir          ? "discarded"
                                                              : "before-commit";
  // In direct mode the writes are on the host already, interrupted or not:
  // the after-the-fact verification (removing escapes and the sandbox's
  // mount points) runs in every case.
  bool direct = strategy == StagingStrategy::kDirect;
  if (!finished_on_its_own && !direct) return;
  // A SIGINT/SIGTERM/SIGHUP (signal_fd) or a cancel that comes during
  // the scan or the commit stops a staged commit before its install.
  RecordVerification(staging->VerifyAndCommit(request.cancel ? request.cancel->flag() : nullptr, signal_fd,
                                              request.discard_work_dir ? StagedCommit::kDiscard : StagedCommit::kCommit),
                     direct, outcome);
}

Result<Outcome> Sandbox::Impl::SuperviseAndFinish(StartedChild& started, std::chrono::steady_clock::time_point start,
                                                  int listener_fd, Status failure) {
  const auto& plan = request.plan;
  uint64_t cap = limit_plan.output_bytes != 0 ? limit_plan.output_bytes : plan.output_cap_bytes;
  if (cap == 0) cap = backends::kDefaultOutputCapBytes;
  const OutputCallback* callback = request.on_output ? &request.on_output : nullptr;
  OutputCapture out(OutputStream::kStdout, cap, request.output_mode, callback);
  OutputCapture err(OutputStream::kStderr, cap, request.output_mode, callback);
  Outcome outcome;
  // From here on every path ends in the verification below: the sandbox
  // wrote a direct work dir and writable binds on the host already, and a
  // supervisor that fails (an error, an exception) must not leave what it
  // planted there unverified.
  if (failure.ok()) {
    failure = Guarded("supervising the sandbox", [&] {
      return SuperviseAndMeasure(started, start, listener_fd, out, err, outcome);
    });
  }
  if (!failure.ok()) {
    // Nothing of the sandbox may write on while its writes are verified.
    EndSandbox(started);
    RecordSupervisorFailure(failure, start, outcome);
  }
  // The sandbox is gone: stop every relay before the listener fd the
  // workers answer on is closed by our caller.
  if (broker) broker->Shutdown();
  Status described = Guarded("describing the run", [&] {
    DescribeRun(out, err, outcome);
    return Status::Ok();
  });
  if (!described.ok() && outcome.supervisor_error.empty()) RecordSupervisorFailure(described, start, outcome);

  const int signal_fd = started.signal_fd();
  Status verified = Guarded("verifying the work dir", [&] {
    VerifyWorkDir(signal_fd, outcome);
    return Status::Ok();
  });
  if (!verified.ok()) {
    const bool direct = staging->strategy() == StagingStrategy::kDirect;
    outcome.breakout_clean = false;
    outcome.verification = direct ? "incomplete" : "failed";
    outcome.verification_error =
        verified.message() + (direct ? "; the host work dir may still hold what the sandbox left: inspect it before "
                                       "trusting it"
                              : outcome.committed ? "" : "; nothing was committed to the host work dir");
  }
  // Writable binds are verified after every run, finished or not: the
  // sandbox's writes are on the host already (workdir/writable_binds.h).
  if (writable_binds) {
    Status binds = Guarded("verifying the writable binds", [&] {
      RecordWritableBinds(writable_binds->Verify(signal_fd), outcome);
      return Status::Ok();
    });
    if (!binds.ok()) {
      outcome.breakout_clean = false;
      outcome.writable_verification = "incomplete";
      outcome.writable_error = binds.message() + "; the writable mounts may still hold what the sandbox left: "
                                                 "inspect them before trusting them";
    }
  }
  if (request.after_run_verified_for_test) request.after_run_verified_for_test();
  Status recorded = Guarded("recording a late cancel", [&] {
    RecordLateCancel(signal_fd, request.cancel ? request.cancel->flag() : nullptr, outcome);
    return Status::Ok();
  });
  (void)recorded;  // only a note: the Outcome stands without it
  return outcome;
}

}  // namespace cocoon::enforcer
