#include "enforcer/started_child.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <new>

#include "enforcer/inherited_stdin.h"
#include "enforcer/limits/host_caps.h"
#include "enforcer/stdin_relay.h"
#include "enforcer/userns.h"

namespace cocoon::enforcer {

namespace {

Status MakePipe(OwnedFd& read_end, OwnedFd& write_end, int read_flags) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("pipe2");
  read_end.Reset(fds[0]);
  write_end.Reset(fds[1]);
  if (read_flags != 0 && fcntl(fds[0], F_SETFL, read_flags) != 0) return ErrnoError("fcntl O_NONBLOCK");
  return Status::Ok();
}

Status MakeSocketPair(OwnedFd& parent_end, OwnedFd& child_end) {
  int pair[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) return ErrnoError("socketpair");
  parent_end.Reset(pair[0]);
  child_end.Reset(pair[1]);
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

// The child's entry (memory_sharing_clone.h): its bootstrap lives in the
// StartedChild, which outlives it.
int EnterChild(void* boot) { RunChild(*static_cast<const ChildBootstrap*>(boot)); }

long Clone3(uint64_t flags, int* pidfd, int cgroup_fd, const ChildStack* stack, ChildBootstrap* boot) {
  struct clone_args args {};
  args.flags = flags | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(pidfd);
  args.exit_signal = SIGCHLD;
  if (cgroup_fd >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(cgroup_fd);
  }
  if (stack != nullptr) {
    args.flags |= CLONE_VM;
    args.stack = reinterpret_cast<uint64_t>(stack->base());
    args.stack_size = stack->size();
  }
  return CloneCallingEntry(&args, EnterChild, boot);
}

// The namespaces clone3 makes: the user namespace (everything else is
// owned by it) and the pid namespace (which only clone can enter: the
// child must be its init). Both are cheap (~0.1 ms with the clone itself).
constexpr uint64_t kCloneNamespaces = CLONE_NEWUSER | CLONE_NEWPID;

// The namespaces the child unshares itself, first thing, while the parent
// prepares: the network namespace alone is ~0.5 ms of kernel work
// (copy_net_ns, sysctl tables, loopback), the mount namespace copies the
// host's mount table. Made by clone3, they kept the parent waiting before
// it had written a single byte of the spec.
// waitid's idtype for a pidfd (Linux 5.4, linux/wait.h): glibc 2.36's
// idtype_t does not name it, and linux/wait.h clashes with sys/wait.h.
constexpr int kIdTypePidfd = 3;

int ChildUnshareFlags(bool new_network) {
  int flags = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC;
  if (new_network) flags |= CLONE_NEWNET;
  return flags;
}

}  // namespace

namespace {

// Every signal whose default action would end cocoon in the middle of a run
// (leaving its cgroups, staging and a half-told audit log behind) cancels it
// instead: SIGINT, SIGTERM and SIGHUP, and also SIGQUIT, SIGUSR1, SIGUSR2 and
// SIGALRM, which nobody sends cocoon on purpose. Not one the caller set to
// be ignored (`nohup`, a shell's background job ignoring SIGINT): the run
// must not end on a signal the caller chose to ignore, and a blocked signal
// is queued even when ignored, so it must not be blocked either.
void AddCancelSignals(sigset_t* set) {
  for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM}) {
    struct sigaction current {};
    if (sigaction(signal, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) continue;
    sigaddset(set, signal);
  }
}

}  // namespace

void SignalGuard::HoldCancelSignalsUntilExit() {
  sigset_t set;
  sigemptyset(&set);
  AddCancelSignals(&set);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

int SignalGuard::ReleaseCancelSignals() {
  sigset_t set;
  sigemptyset(&set);
  AddCancelSignals(&set);
  struct timespec zero {};
  int first = 0;
  for (int signal; (signal = sigtimedwait(&set, nullptr, &zero)) > 0;) {
    if (first == 0) first = signal;
  }
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  return first;
}

SignalGuard::SignalGuard(SignalHandling handling) : owner_(pthread_self()) {
  // SIGPIPE is always blocked while we talk to the child: a write to a
  // pipe whose reader died must be an EPIPE error, not the end of cocoon.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGPIPE);
  if (handling == SignalHandling::kCancelOnSigintSigterm) AddCancelSignals(&set);
  if (pthread_sigmask(SIG_BLOCK, &set, &old_) != 0) return;
  active_ = true;
  if (handling == SignalHandling::kCancelOnSigintSigterm) {
    sigdelset(&set, SIGPIPE);
    fd_.Reset(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
  }
}

SignalGuard::~SignalGuard() {
  if (!active_) return;
  // A SIGINT/SIGTERM/SIGHUP that came after the sandbox was gone (during
  // the verification and commit, which it cancels if it can, or just
  // after) must not kill cocoon by its default action once unblocked
  // below: the run's Outcome and audit events are still to be written.
  // It is consumed here; the Outcome says whether it cancelled the commit.
  if (fd_.valid()) {
    struct signalfd_siginfo info {};
    while (read(fd_.get(), &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {}
  }
  if (!pthread_equal(owner_, pthread_self())) return;  // another thread's mask: not ours to restore
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

StartedChild::StartedChild(const ChildStartOptions& options, ChildSpecArena arena)
    : options_(options), signals_(options.signals), arena_(std::move(arena)) {}

StartedChild::~StartedChild() {
  Kill();
  if (handoff_ != nullptr) munmap(handoff_, sizeof(ListenerHandoff));
}

void StartedChild::Kill() {
  if (pidfd_.get() < 0) return;
  // ESRCH and ECHILD when the supervisor has reaped it already: the pidfd
  // still names that process, never a recycled pid.
  syscall(SYS_pidfd_send_signal, pidfd_.get(), SIGKILL, nullptr, 0);
  if (handoff_ != nullptr) handoff_->abandon.store(1);
  siginfo_t info;
  while (waitid(static_cast<idtype_t>(kIdTypePidfd), static_cast<id_t>(pidfd_.get()), &info, WEXITED) < 0 && errno == EINTR) {
  }
  pidfd_.Reset();
}

bool StartedChild::SignalArrived() {
  if (signals_.fd() < 0) return false;
  bool arrived = false;
  struct signalfd_siginfo info;
  while (read(signals_.fd(), &info, sizeof(info)) == static_cast<ssize_t>(sizeof(info))) arrived = true;
  return arrived;
}

bool StartedChild::Fits(const ChildStartOptions& needed) const {
  return !adopted_ && options_.new_network == needed.new_network && options_.stdin_mode == needed.stdin_mode &&
         options_.signals == needed.signals && (options_.work_socket || !needed.work_socket) &&
         (options_.broker_socket || !needed.broker_socket) && options_.cgroup_fd < 0 && needed.cgroup_fd < 0 &&
         (!options_.share_memory || needed.share_memory);
}

Result<std::unique_ptr<StartedChild>> StartedChild::Start(const ChildStartOptions& options) {
  EnsureStdioOpen();
  COCOON_ASSIGN_OR_RETURN(ChildSpecArena arena, ChildSpecArena::Map());
  std::unique_ptr<StartedChild> started(new StartedChild(options, std::move(arena)));
  StartedChild& s = *started;
  OwnedFd out_write, err_write, error_write, sync_read, work_child, broker_child, stdin_fd;
  COCOON_RETURN_IF_ERROR(MakePipe(s.out_read_, out_write, O_NONBLOCK));
  COCOON_RETURN_IF_ERROR(MakePipe(s.err_read_, err_write, O_NONBLOCK));
  COCOON_RETURN_IF_ERROR(MakePipe(s.error_read_, error_write, 0));
  COCOON_RETURN_IF_ERROR(MakePipe(sync_read, s.sync_write_, 0));
  if (options.work_socket) {
    COCOON_RETURN_IF_ERROR(MakeSocketPair(s.work_parent_, work_child));
  }
  if (options.broker_socket) {
    COCOON_RETURN_IF_ERROR(MakeSocketPair(s.broker_parent_, broker_child));
  }
  if (options.stdin_mode == StdinMode::kData) {
    COCOON_ASSIGN_OR_RETURN(s.stdin_relay_, StdinRelay::Start(options.stdin_source, &stdin_fd));
  } else if (options.stdin_mode == StdinMode::kInherit && !isatty(0)) {
    COCOON_ASSIGN_OR_RETURN(StdinHandling handling, HowToPassStdin(0, options.new_network));
    if (handling == StdinHandling::kRelay) {
      COCOON_ASSIGN_OR_RETURN(s.stdin_relay_, StdinRelay::Start(0, &stdin_fd));
    } else {
      stdin_fd.Reset(fcntl(0, F_DUPFD_CLOEXEC, 3));
    }
  } else {
    stdin_fd.Reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
  }
  if (stdin_fd.get() < 0) return ErrnoError("stdin for the sandbox");
  // Shared with the child for the seccomp listener handoff (child_main.cc);
  // mapped whether or not the program turns out to use a listener: the plan
  // may not be parsed yet.
  void* page = mmap(nullptr, sizeof(ListenerHandoff), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page == MAP_FAILED) return ErrnoError("mmap listener handoff page");
  s.handoff_ = new (page) ListenerHandoff();

  const ChildStack* stack = nullptr;
  if (COCOON_CHILD_SHARES_MEMORY != 0 && options.share_memory) {
    COCOON_ASSIGN_OR_RETURN(s.stack_, ChildStack::Map());
    stack = &*s.stack_;
  }
  ChildBootstrap& boot = s.boot_;
  boot.stdin_fd = stdin_fd.get();
  boot.stdout_fd = out_write.get();
  boot.stderr_fd = err_write.get();
  boot.sync_fd = sync_read.get();
  boot.error_fd = error_write.get();
  boot.unshare_flags = ChildUnshareFlags(options.new_network);
  boot.work_sock = work_child.get();
  boot.broker_sock = broker_child.get();
  boot.spec = s.arena_.spec_slot();
  // CLONE_CLEAR_SIGHAND (Linux 5.5): the kernel resets every handled signal
  // in the child, so none of this process's handlers can run in it before
  // ResetSignals; older kernels refuse the flag (EINVAL) and get the plain
  // fork-style clone, where ResetSignals runs first thing (never a shared
  // one: a handler of ours running in the child would run on our memory).
  long rc = Clone3(kCloneNamespaces | CLONE_CLEAR_SIGHAND, s.pidfd_.out(), options.cgroup_fd, stack, &boot);
  if (rc == -EINVAL) rc = Clone3(kCloneNamespaces, s.pidfd_.out(), options.cgroup_fd, nullptr, &boot);
  if (rc < 0) {
    int err = static_cast<int>(-rc);
    s.pidfd_.Reset();
    if (err == EPERM || err == ENOSPC || err == EUSERS || err == EINVAL) {
      return FailedPreconditionError(UserNamespaceUnavailableMessage(err));
    }
    return ErrnoError("clone3", err);
  }
  s.pid_ = static_cast<pid_t>(rc);
  // The spec names these by number; the child inherited them at clone.
  s.work_child_end_ = work_child.get();
  s.broker_child_end_ = broker_child.get();
  return started;
}

std::optional<ChildStartOptions> StartedChild::OptionsBeforePlan(ir::NetworkMode network, StdinMode stdin_mode,
                                                                 SignalHandling signals, bool work_dir) {
  if (CgroupV2ControllersMayBeInUse()) return std::nullopt;
  // Its bytes are relayed from a file the run makes (Sandbox::Prepare).
  if (stdin_mode == StdinMode::kData) return std::nullopt;
  ChildStartOptions options;
  options.new_network = network != ir::NetworkMode::kOn;
  options.stdin_mode = stdin_mode;
  options.signals = signals;
  options.work_socket = work_dir;
  options.broker_socket = network == ir::NetworkMode::kAllowList;
  // Before the plan: a hint, as the network mode is; Fits checks it against
  // the planned ids and cgroups.
  options.share_memory = LauncherMayShareMemory();
  return options;
}

}  // namespace cocoon::enforcer
