// Sandbox::Impl::RunOnce: clone, handshake, supervise, verify, Outcome.
#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "enforcer/child_spec_arena.h"
#include "enforcer/fd_passing.h"
#include "enforcer/notify.h"
#include "enforcer/sandbox_impl.h"
#include "enforcer/supervisor.h"

namespace cocoon::enforcer {
namespace {

using Clock = std::chrono::steady_clock;

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() { Reset(); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int* out() { return &fd_; }
  void Reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

Status MakePipe(Fd& read_end, Fd& write_end, int read_flags) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("pipe2");
  read_end.Reset(fds[0]);
  write_end.Reset(fds[1]);
  if (read_flags != 0 && fcntl(fds[0], F_SETFL, read_flags) != 0) return ErrnoError("fcntl O_NONBLOCK");
  return Status::Ok();
}

// fds 0-2 must be open in the parent, or a pipe could land on them and be
// clobbered by the child's dup2 sequence.
void EnsureStdioOpen() {
  for (int fd = 0; fd < 3; ++fd) {
    if (fcntl(fd, F_GETFD) < 0 && errno == EBADF) {
      int null_fd = open("/dev/null", O_RDWR);
      if (null_fd >= 0 && null_fd != fd) close(null_fd);
    }
  }
}

// Blocks SIGINT/SIGTERM/SIGHUP and reads them from a signalfd in the poll
// loop; the previous mask is restored on destruction. The child unblocks
// everything and resets dispositions first thing (child_main.cc).
class SignalGuard {
 public:
  explicit SignalGuard(SignalHandling handling) {
    // SIGPIPE is always blocked while we talk to the child: a write to a
    // pipe whose reader died must be an EPIPE error, not the end of cocoon.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    if (handling == SignalHandling::kCancelOnSigintSigterm) {
      sigaddset(&set, SIGINT);
      sigaddset(&set, SIGTERM);
      sigaddset(&set, SIGHUP);
    }
    if (pthread_sigmask(SIG_BLOCK, &set, &old_) != 0) return;
    active_ = true;
    if (handling == SignalHandling::kCancelOnSigintSigterm) {
      sigdelset(&set, SIGPIPE);
      fd_.Reset(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
    }
  }
  ~SignalGuard() {
    if (!active_) return;
    sigset_t pending;
    sigemptyset(&pending);
    if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) && !sigismember(&old_, SIGPIPE)) {
      sigset_t pipe_only;
      sigemptyset(&pipe_only);
      sigaddset(&pipe_only, SIGPIPE);
      struct timespec zero {};
      sigtimedwait(&pipe_only, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  int fd() const { return fd_.get(); }

 private:
  bool active_ = false;
  sigset_t old_{};
  Fd fd_;
};

// Shared anonymous page for the seccomp listener handoff.
class HandoffPage {
 public:
  HandoffPage() {
    void* page = mmap(nullptr, sizeof(ListenerHandoff), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (page != MAP_FAILED) handoff_ = new (page) ListenerHandoff();
  }
  ~HandoffPage() {
    if (handoff_ != nullptr) munmap(handoff_, sizeof(ListenerHandoff));
  }
  ListenerHandoff* get() const { return handoff_; }

 private:
  ListenerHandoff* handoff_ = nullptr;
};

long Clone3(uint64_t flags, int* pidfd, int cgroup_fd) {
  struct clone_args args {};
  args.flags = flags | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(pidfd);
  args.exit_signal = SIGCHLD;
  if (cgroup_fd >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(cgroup_fd);
  }
  return syscall(SYS_clone3, &args, sizeof(args));
}

// The namespaces clone3 makes: the user namespace (everything else is
// owned by it) and the pid namespace (which only clone can enter: the
// child must be its init). Both are cheap (~0.1 ms with the clone itself).
constexpr uint64_t kCloneNamespaces = CLONE_NEWUSER | CLONE_NEWPID;

// The namespaces the child unshares itself, first thing, while the parent
// builds its spec: the network namespace alone is ~0.5 ms of kernel work
// (copy_net_ns, sysctl tables, loopback), the mount namespace copies the
// host's mount table. Made by clone3, they kept the parent waiting before
// it had written a single byte of the spec.
int ChildUnshareFlags(const backends::LaunchPlan& plan) {
  int flags = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC;
  if (plan.network != ir::NetworkMode::kOn) flags |= CLONE_NEWNET;
  return flags;
}

// `child` is null when the child failed before the parent had built its spec.
std::string DescribeChildError(const PreparedChild* child, const ChildError& error) {
  auto step = static_cast<ChildStep>(error.step);
  std::string what = ChildStepName(step);
  switch (child == nullptr ? ChildStep::kNone : step) {
    case ChildStep::kMkdirTarget: case ChildStep::kBind: case ChildStep::kMountAttr: case ChildStep::kTmpfs:
    case ChildStep::kProc: case ChildStep::kDevice: case ChildStep::kSymlink: case ChildStep::kMask:
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
  if (step == ChildStep::kExec && error.err == ENOENT) message += " (is the command inside a mounted directory?)";
  if (step == ChildStep::kUnshareNamespaces && error.err == ENOSPC) {
    message += " (a per-user namespace limit is reached: see /proc/sys/user/max_*_namespaces)";
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

}  // namespace

Result<Outcome> Sandbox::Impl::RunOnce() {
  if (request.cancel && request.cancel->cancelled()) return Status(ErrorCode::kUnavailable, "run cancelled before start");
  EnsureStdioOpen();
  const auto& plan = request.plan;
  Fd out_read, out_write, err_read, err_write, error_read, error_write, sync_read, sync_write, stdin_fd;
  COCOON_RETURN_IF_ERROR(MakePipe(out_read, out_write, O_NONBLOCK));
  COCOON_RETURN_IF_ERROR(MakePipe(err_read, err_write, O_NONBLOCK));
  COCOON_RETURN_IF_ERROR(MakePipe(error_read, error_write, 0));
  COCOON_RETURN_IF_ERROR(MakePipe(sync_read, sync_write, 0));
  Fd work_parent, work_child;
  if (staging) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return ErrnoError("socketpair");
    work_parent.Reset(pair[0]);
    work_child.Reset(pair[1]);
  }
  Fd broker_parent, broker_child;
  if (allow_list) {
    int pair[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return ErrnoError("socketpair");
    broker_parent.Reset(pair[0]);
    broker_child.Reset(pair[1]);
  }
  if (request.stdin_mode == StdinMode::kInherit && !isatty(0)) {
    stdin_fd.Reset(fcntl(0, F_DUPFD_CLOEXEC, 3));
  } else {
    stdin_fd.Reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
  }
  if (stdin_fd.get() < 0) return ErrnoError("stdin for the sandbox");
  HandoffPage handoff;
  if (uses_listener && handoff.get() == nullptr) return ErrnoError("mmap listener handoff page");
  SignalGuard signals(request.signals);

  COCOON_ASSIGN_OR_RETURN(ChildSpecArena arena, ChildSpecArena::Map());
  ChildBootstrap boot;
  boot.stdin_fd = stdin_fd.get();
  boot.stdout_fd = out_write.get();
  boot.stderr_fd = err_write.get();
  boot.sync_fd = sync_read.get();
  boot.error_fd = error_write.get();
  boot.unshare_flags = ChildUnshareFlags(plan);
  boot.spec = arena.spec_slot();

  auto start = Clock::now();
  Fd pidfd;
  int cgroup_fd = cgroup ? cgroup->clone_into_fd() : -1;
  // CLONE_CLEAR_SIGHAND (Linux 5.5): the kernel resets every handled signal
  // in the child, so none of this process's handlers can run in it before
  // ResetSignals; older kernels refuse the flag (EINVAL) and get the plain
  // clone, where ResetSignals runs first thing.
  long rc = Clone3(kCloneNamespaces | CLONE_CLEAR_SIGHAND, pidfd.out(), cgroup_fd);
  if (rc < 0 && errno == EINVAL) rc = Clone3(kCloneNamespaces, pidfd.out(), cgroup_fd);
  if (rc == 0) RunChild(boot);  // the child; never returns
  if (rc < 0) {
    int err = errno;
    if (err == EPERM || err == ENOSPC || err == EUSERS || err == EINVAL) {
      return FailedPreconditionError(UserNamespaceUnavailableMessage(err));
    }
    return ErrnoError("clone3", err);
  }
  pid = static_cast<pid_t>(rc);
  // The spec names these by number; the child inherited them at clone.
  const int work_child_end = work_child.get();
  const int broker_child_end = broker_child.get();
  out_write.Reset();
  err_write.Reset();
  error_write.Reset();
  sync_read.Reset();
  work_child.Reset();
  broker_child.Reset();
  stdin_fd.Reset();

  // From here on, any early return must kill and reap the child.
  auto abort_child = [&](Status status) -> Status {
    syscall(SYS_pidfd_send_signal, pidfd.get(), SIGKILL, nullptr, 0);
    if (handoff.get() != nullptr) handoff.get()->abandon.store(1);
    int ignored;
    while (waitpid(pid, &ignored, 0) < 0 && errno == EINTR) {
    }
    return status;
  };
  // The child's own report explains a failure better than our side's EPIPE.
  auto child_report_or = [&](Status fallback) -> Status {
    ChildError report;
    auto got = ReadChildMessage(error_read.get(), &report, 200);
    if (got.ok() && *got && report.err != 0) return abort_child(FailedPreconditionError(DescribeChildError(child.get(), report)));
    return abort_child(fallback);
  };

  // The child is creating its namespaces meanwhile (on the other CPU).
  Status built = BuildChildSpec(arena, handoff.get(), work_child_end, broker_child_end);
  if (!built.ok()) return abort_child(built);
  Status maps = WriteIdMaps(pid, id_maps);
  if (!maps.ok()) return child_report_or(maps.WithContext("writing the sandbox's uid/gid maps"));
  if (write(sync_write.get(), "G", 1) != 1) return child_report_or(ErrnoError("releasing the sandbox child"));
  if (!cgroup_v1_parents.empty()) {
    // v1: the groups are made now, while the child builds its namespaces
    // and mount tree (mkdir and limits: ~0.1 ms quiet, 0.25-0.5 ms under
    // load, measured; the mount tree takes ~0.5 ms);
    // the child joins them after its mount tree, before anything of the
    // command runs ('C'). v2: it was born inside (CLONE_INTO_CGROUP).
    auto created = Cgroup::Create(limit_plan.cgroup, host, cgroup_name);
    if (!created.ok()) return abort_child(created.status());
    cgroup = std::move(*created);
    if (write(sync_write.get(), "C", 1) != 1) return child_report_or(ErrnoError("releasing the sandbox child"));
  }
  sync_write.Reset();
  if (allow_list) {
    auto inside = ReceiveBrokerListener(broker_parent.get());
    if (!inside.ok()) return child_report_or(inside.status().WithContext("network allow-list"));
    auto created = NetBroker::Create(*allow_list, *inside);
    if (!created.ok()) return abort_child(created.status());
    broker = std::move(*created);
  }
  if (staging) {
    Status populated = staging->ReceiveAndPopulate(work_parent.get());
    if (!populated.ok()) return child_report_or(populated.WithContext("staging the work dir"));
  }

  Fd listener;
  while (true) {
    ChildError message;
    auto got = ReadChildMessage(error_read.get(), &message, 30000);
    if (!got.ok()) return abort_child(got.status());
    if (!*got) break;  // EOF: execve succeeded
    if (message.step == static_cast<int>(ChildStep::kListenerHandoff) && message.err == 0 && uses_listener) {
      // The child is about to call seccomp(); the window is microseconds.
      auto give_up = Clock::now() + std::chrono::seconds(10);
      int target = -1;
      while ((target = handoff.get()->listener_fd.load()) < 0) {
        struct pollfd p {error_read.get(), POLLIN, 0};
        if (poll(&p, 1, 0) > 0 || Clock::now() > give_up) break;
        sched_yield();
      }
      if (target < 0) continue;  // a failure report follows on the pipe
      listener.Reset(static_cast<int>(syscall(SYS_pidfd_getfd, pidfd.get(), target, 0)));
      if (listener.get() < 0) return abort_child(ErrnoError("pidfd_getfd(seccomp listener)"));
      handoff.get()->taken.store(1);
      continue;
    }
    std::string text = DescribeChildError(child.get(), message);
    if (message.step == static_cast<int>(ChildStep::kExec)) {
      if (message.err == ENOENT || message.err == ENOTDIR) return abort_child(NotFoundError(text));
      if (message.err == EACCES || message.err == EPERM) return abort_child(PermissionDeniedError(text));
    }
    return abort_child(FailedPreconditionError(text));
  }
  if (uses_listener && listener.get() < 0) {
    return abort_child(InternalError("the sandbox exec'd without handing over its seccomp listener"));
  }
  return SuperviseAndFinish(start, pidfd.get(), out_read.get(), err_read.get(), listener.get(), signals.fd());
}

}  // namespace cocoon::enforcer
