// Sandbox::Impl::RunOnce: the started child (adopted or started here),
// its spec, handshake, supervision, verification, Outcome.
#include <poll.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "enforcer/fd_passing.h"
#include "enforcer/notify.h"
#include "enforcer/sandbox_impl.h"
#include "enforcer/started_child.h"
#include "enforcer/supervisor.h"

namespace cocoon::enforcer {
namespace {

using Clock = std::chrono::steady_clock;

// `child` is null when the child failed before the parent had built its spec.
std::string DescribeChildError(const PreparedChild* child, const ChildError& error) {
  auto step = static_cast<ChildStep>(error.step);
  std::string what = ChildStepName(step);
  switch (child == nullptr ? ChildStep::kNone : step) {
    case ChildStep::kMkdirTarget: case ChildStep::kBind: case ChildStep::kMountAttr: case ChildStep::kTmpfs:
    case ChildStep::kProc: case ChildStep::kDevice: case ChildStep::kSymlink: case ChildStep::kMask:
    case ChildStep::kBindSource: case ChildStep::kMountPoint: case ChildStep::kReadOnlyPath:
      what += " (" + child->DescribeMount(error.detail) + ")";
      break;
    case ChildStep::kLandlockRule: what += " (" + child->DescribeLandlockRule(error.detail) + ")"; break;
    case ChildStep::kRlimit: what += std::string(" (") + RlimitName(error.detail) + ")"; break;
    case ChildStep::kWorkDir:
      what += std::string(" (") + WorkMountStepName(static_cast<WorkMountStep>(error.detail)) + ")";
      break;
    case ChildStep::kExec: what += " (" + (child->exec_candidates().empty() ? std::string() : child->exec_candidates()[0]) + ")"; break;
    default: break;
  }
  std::string message = "sandbox setup failed at step '" + what + "': " + strerror(error.err);
  if ((step == ChildStep::kBindSource || step == ChildStep::kMountPoint) &&
      (error.err == ELOOP || error.err == ESTALE || error.err == EXDEV || error.err == ENOENT)) {
    message += " (the host path was replaced, or a symlink put in its way, after cocoon checked it: do not change "
               "bound host directories while cocoon starts a sandbox)";
  }
  if (step == ChildStep::kMkdirTarget && error.err == ELOOP) {
    message += " (a symlink is on the way to the mount point, as in a work dir holding `dir -> elsewhere`: mount "
               "points are never made through one; remove the link from the work dir or mount elsewhere)";
  }
  if (step == ChildStep::kExec && error.err == ENOENT) message += " (is the command inside a mounted directory?)";
  if ((step == ChildStep::kUnshareNamespaces || step == ChildStep::kNestedUserNamespace) && error.err == ENOSPC) {
    message += " (a per-user namespace limit is reached: see /proc/sys/user/max_*_namespaces; every sandbox uses "
               "two user namespaces)";
  }
  return message;
}

// Reads one ChildError, waiting up to `timeout_ms` (-1: forever). 0 bytes:
// the pipe was closed (execve happened, or the child died).
Result<bool> ReadChildMessage(int fd, ChildError* message, int timeout_ms) {
  struct pollfd p {fd, POLLIN, 0};
  int ready;
  do {
    ready = poll(&p, 1, timeout_ms);
  } while (ready < 0 && errno == EINTR);
  if (ready < 0) return ErrnoError("poll error pipe");
  if (ready == 0) return ResourceExhaustedError("timed out waiting for the sandbox to start");
  ssize_t n;
  do {
    n = read(fd, message, sizeof(*message));
  } while (n < 0 && errno == EINTR);
  if (n < 0) return ErrnoError("read error pipe");
  if (n == 0) return false;
  if (n != sizeof(*message)) return InternalError("short message on the error pipe");
  return true;
}

// Receives the child's in-namespace listener (net.cc SendBrokerListener).
// EOF or a timeout means the child failed first: its report explains why.
Result<int> ReceiveBrokerListener(int sock) {
  struct pollfd p {sock, POLLIN, 0};
  int ready;
  do {
    ready = poll(&p, 1, 30000);
  } while (ready < 0 && errno == EINTR);
  if (ready <= 0) return ready == 0 ? ResourceExhaustedError("timed out waiting for the broker listener") : ErrnoError("poll");
  COCOON_ASSIGN_OR_RETURN(std::vector<int> fds, ReceiveFds(sock, 1, "its broker listener"));
  return fds[0];
}

// Waits until the error pipe is readable (a report, or EOF at execve),
// answering the seccomp listener meanwhile. After the handoff the child's
// next syscall is the command's execve (or, when that fails, its report): a
// policy that logs or notifies execve routes it here, and the child waits
// for the answer, so waiting on the pipe alone would never see EOF.
Status WaitAnsweringNotifications(int error_fd, int listener_fd, NotifyResponder& responder, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    struct pollfd fds[2] = {{error_fd, POLLIN, 0}, {listener_fd, POLLIN, 0}};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return ResourceExhaustedError("timed out waiting for the sandbox to start");
    int ready = poll(fds, listener_fd >= 0 ? 2 : 1, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return ErrnoError("poll error pipe");
    if (fds[0].revents != 0) return Status::Ok();
    if (fds[1].revents & (POLLHUP | POLLERR)) {
      listener_fd = -1;  // no task under the filter any more: the report or EOF follows
    } else if (fds[1].revents & POLLIN) {
      if (!responder.HandleOne(listener_fd)) {
        if (!responder.kill_fired()) return InternalError("a seccomp notification could not be answered");
        return PermissionDeniedError("the policy's kill rule matched a syscall before the command started (its "
                                     "execve): the command was not run");
      }
    }
  }
}

}  // namespace

Status RunCancelledBeforeStart() { return Status(ErrorCode::kUnavailable, "run cancelled before start"); }

bool IsRunCancelledBeforeStart(const Status& status) {
  return status.code() == ErrorCode::kUnavailable && status.message() == RunCancelledBeforeStart().message();
}

Result<Outcome> Sandbox::Impl::RunOnce() {
  // Taken from the request first thing: every return below kills and reaps
  // it (explicitly, or as the last owner: started_child.h).
  std::shared_ptr<StartedChild> started = std::move(request.started_child);
  const Status cancelled = RunCancelledBeforeStart();
  // A SIGINT/SIGTERM/SIGHUP while the plan was parsed and the run prepared
  // was held by the started child's signal guard: a cancel, before anything
  // of the command ran (staging and the cgroup are removed on the way out).
  if (started && started->SignalArrived()) return cancelled;
  if (request.cancel && request.cancel->cancelled()) return cancelled;
  ChildStartOptions needed;
  needed.new_network = request.plan.network != ir::NetworkMode::kOn;
  needed.stdin_mode = request.stdin_mode;
  needed.stdin_source = stdin_data_file.get();
  needed.signals = request.signals;
  needed.work_socket = staging != nullptr;
  needed.broker_socket = allow_list != nullptr;
  needed.cgroup_fd = cgroup ? cgroup->clone_into_fd() : -1;
  needed.share_memory = ChildMayShareMemory(id_maps.sandbox_host_uid, id_maps.sandbox_host_gid,
                                            cgroup != nullptr || !cgroup_v1_parent_dirs.empty());
  if (started && !started->Fits(needed)) {
    started->Kill();
    started.reset();
  }
  // The run's clock starts now, whether the child was started just now or
  // while the plan was being parsed: Prepare's work (staging copies) is not
  // the command's time.
  auto start = Clock::now();
  if (!started) {
    COCOON_ASSIGN_OR_RETURN(started, StartedChild::Start(needed));
  }
  started->Adopt();
  pid = started->pid();
  ListenerHandoff* handoff = started->handoff();

  // From here on, any early return must kill and reap the child.
  auto abort_child = [&](Status status) -> Status {
    started->Kill();
    return status;
  };
  // The child's own report explains a failure better than our side's EPIPE.
  auto child_report_or = [&](Status fallback) -> Status {
    ChildError report;
    auto got = ReadChildMessage(started->error_fd(), &report, 200);
    if (got.ok() && *got && report.err != 0) return abort_child(FailedPreconditionError(DescribeChildError(child.get(), report)));
    return abort_child(fallback);
  };

  // The child may be creating its namespaces meanwhile, if the scheduler
  // gave it another CPU (started_child.h).
  // A child started with more sockets than this run needs (started_child.h
  // Fits) is told about none of the extra ones: -1 turns their steps off.
  Status built = BuildChildSpec(started->arena(), handoff, staging ? started->work_child_end() : -1,
                                allow_list ? started->broker_child_end() : -1);
  if (!built.ok()) return abort_child(built);
  Status maps = WriteIdMaps(pid, id_maps);
  if (!maps.ok()) return child_report_or(maps.WithContext("writing the sandbox's uid/gid maps"));
  if (started->SignalArrived()) return abort_child(cancelled);
  if (write(started->sync_fd(), "G", 1) != 1) return child_report_or(ErrnoError("releasing the sandbox child"));
  if (!cgroup_v1_parent_dirs.empty()) {
    // v1: the groups are made now, while the child builds its namespaces
    // and mount tree (mkdir and limits: ~0.1 ms quiet, 0.25-0.5 ms under
    // load, measured; the mount tree takes ~0.5 ms);
    // the child joins them after its mount tree, before anything of the
    // command runs ('C'). v2: it was born inside (CLONE_INTO_CGROUP).
    auto created = Cgroup::Create(limit_plan.cgroup, host, cgroup_name);
    if (!created.ok()) return abort_child(created.status());
    cgroup = std::move(*created);
    if (write(started->sync_fd(), "C", 1) != 1) return child_report_or(ErrnoError("releasing the sandbox child"));
  }
  started->CloseSync();
  if (allow_list) {
    auto inside = ReceiveBrokerListener(started->broker_fd());
    if (!inside.ok()) return child_report_or(inside.status().WithContext("network allow-list"));
    auto created = NetBroker::Create(*allow_list, *inside);
    if (!created.ok()) return abort_child(created.status());
    broker = std::move(*created);
  }
  if (staging) {
    Status populated = staging->ReceiveAndPopulate(started->work_fd(), started->signal_fd());
    if (!populated.ok() && started->SignalArrived()) return abort_child(cancelled);
    if (!populated.ok()) return child_report_or(populated.WithContext("staging the work dir"));
    // A big copy-in takes seconds: a cancel that came meanwhile stops the
    // run before the command is exec'd (the child waits for the populated
    // tree), and the copy is not the command's wall time.
    if (started->SignalArrived()) return abort_child(cancelled);
    if (request.cancel && request.cancel->cancelled()) return abort_child(cancelled);
    start = Clock::now();
  }

  OwnedFd listener;
  while (true) {
    ChildError message;
    if (responder) {
      Status answered = WaitAnsweringNotifications(started->error_fd(), listener.get(), *responder, 30000);
      if (!answered.ok()) return abort_child(answered);
    }
    auto got = ReadChildMessage(started->error_fd(), &message, 30000);
    if (!got.ok()) return abort_child(got.status());
    if (!*got) {
      // EOF: execve succeeded. Until then the child may have run in this
      // process's memory, which this process kept using meanwhile: its
      // high-water mark now covers what the kernel kept of it at the
      // child's execve (finish.cc).
      struct rusage self {};
      if (getrusage(RUSAGE_SELF, &self) == 0) launcher_maxrss_after_exec_kib = self.ru_maxrss;
      break;
    }
    if (message.step == static_cast<int>(ChildStep::kListenerHandoff) && message.err == 0 && uses_listener) {
      // The child is about to call seccomp(); the window is microseconds.
      auto give_up = Clock::now() + std::chrono::seconds(10);
      int target = -1;
      while ((target = handoff->listener_fd.load()) < 0) {
        struct pollfd p {started->error_fd(), POLLIN, 0};
        if (poll(&p, 1, 0) > 0 || Clock::now() > give_up) break;
        sched_yield();
      }
      if (target < 0) continue;  // a failure report follows on the pipe
      listener.Reset(static_cast<int>(syscall(SYS_pidfd_getfd, started->pidfd(), target, 0)));
      if (listener.get() < 0) return abort_child(ErrnoError("pidfd_getfd(seccomp listener)"));
      auto table = ParseSeccompSidecar(request.seccomp_sidecar_json);
      // Without a table every notification is answered with the fail-closed
      // default (EPERM), never allowed.
      responder = std::make_unique<NotifyResponder>(table.ok() ? std::move(*table) : NotifyTable{});
      if (broker) responder->AttachBroker(broker.get());
      handoff->taken.store(1);
      continue;
    }
    std::string text = DescribeChildError(child.get(), message);
    if (message.step == static_cast<int>(ChildStep::kExec)) {
      if (message.err == ENOENT || message.err == ENOTDIR) return abort_child(NotFoundError(text));
      if (message.err == EACCES || message.err == EPERM) return abort_child(PermissionDeniedError(text));
    }
    return abort_child(FailedPreconditionError(text));
  }
  // EOF: the command runs. From here no failure returns early: a direct
  // work dir and the writable binds hold what it wrote on the host, and are
  // verified whatever happens (finish.cc).
  Status launched = Status::Ok();
  if (uses_listener && listener.get() < 0) {
    launched = InternalError("the sandbox exec'd without handing over its seccomp listener");
  }
  return SuperviseAndFinish(*started, start, listener.get(), launched);
}

}  // namespace cocoon::enforcer
