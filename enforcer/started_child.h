// The sandbox's first process, from clone3 to the moment it waits for its
// spec (internal to the enforcer, and handed in by callers through
// SandboxRequest::started_child).
//
// clone3 makes the user and pid namespaces; the child then unshares the
// mount, uts, ipc and (unless the network is on) net namespaces itself,
// ~0.6 ms of kernel work, and waits on the sync pipe for the spec the parent
// places in the shared arena (child_main.cc, child_spec_arena.h). Nothing of
// that depends on the launch plan beyond ChildStartOptions, and nothing of
// the command runs before 'G'. So a caller that knows the plan's network
// mode before it has parsed the plan (the launcher, cli/launch_util.cc) can
// start the child first, so that the kernel can build the namespaces on
// another CPU while it parses the plan and Sandbox::Prepare probes the host,
// plans the limits and builds the spec. (Whether it does is the scheduler's
// choice: on the 2-vCPU CI host the child stays queued on the parent's CPU
// until the parent blocks; keeping it off that CPU measured no faster there,
// docs/performance.md launch item 12.)
//
// Sandbox::Run adopts a started child only if its options are what the
// prepared run needs (Fits); otherwise it is killed and a matching one
// started. Either way the run's checks, spec and Outcome are the same.
//
// Where it is safe (rootless runs without cgroups on Linux 5.16+:
// ChildMayShareMemory), the child runs in this process's memory, on a stack
// of its own, until it execs (memory_sharing_clone.h): no page tables are
// copied at clone, no page the parent writes afterwards is a copy-on-write
// fault, and the child's execve has no copy to tear down. What it reads (its
// bootstrap, the spec arena, its stack) is owned here and unmapped only
// after it is reaped.
//
// The destructor kills the child and reaps it through its pidfd
// (waitid(P_PIDFD), Linux 5.4), so a child reaped elsewhere (the
// supervisor's wait4) is never confused with a recycled pid.
#pragma once

#include <pthread.h>
#include <signal.h>
#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>

#include "compiler/common/status.h"
#include "enforcer/child_spec.h"
#include "enforcer/child_spec_arena.h"
#include "enforcer/memory_sharing_clone.h"
#include "enforcer/owned_fd.h"
#include "enforcer/sandbox.h"
#include "enforcer/stdin_relay.h"

namespace cocoon::enforcer {

struct ChildStartOptions {
  // unshare(CLONE_NEWNET): every network mode but "on".
  bool new_network = true;
  StdinMode stdin_mode = StdinMode::kNull;
  // StdinMode::kData: a file holding the bytes, read by the relay from its
  // current offset (not owned; open until the run ends).
  int stdin_source = -1;
  SignalHandling signals = SignalHandling::kNone;
  bool work_socket = false;    // the staged work dir's handshake (workdir/staging.h)
  bool broker_socket = false;  // the allow-list broker's listener (net_broker.h)
  // v2: an O_DIRECTORY fd of the group the child is born in
  // (CLONE_INTO_CGROUP, Linux 5.7); -1: none. Not owned.
  int cgroup_fd = -1;
  // Run the child in this process's memory until it execs
  // (memory_sharing_clone.h; ChildMayShareMemory says when that is safe);
  // false: a fork-style clone.
  bool share_memory = false;
};

// Blocks SIGPIPE (and SIGINT/SIGTERM/SIGHUP, read from a signalfd, for
// SignalHandling::kCancelOnSigintSigterm) while the run lasts; the previous
// mask is restored on destruction. The child unblocks everything and resets
// dispositions first thing (child_main.cc). A signal mask is the calling
// thread's: a guard destroyed on another thread (a spare started by its
// keeper's thread, spare_child.h) leaves that thread's mask alone.
class SignalGuard {
 public:
  // For a process that runs sandboxes and then exits (enforce, run,
  // pipeline): blocks the cancelling signals in the calling thread (and the
  // threads it starts) until ReleaseCancelSignals. A guard reads them from its signalfd while
  // a run lasts; between runs and after the last one they stay pending, so
  // one that comes after a commit (while the Outcome and the audit events
  // that record it are written) can no longer end cocoon by its default
  // action, and one between two pipeline steps cancels the next before it
  // starts. Call before the first run.
  static void HoldCancelSignalsUntilExit();
  // Once the last run's Outcome is assembled and its audit events written:
  // the held signals that came meanwhile are consumed (the run they came
  // after is complete and recorded), and the rest are unblocked, so that a
  // SIGTERM or Ctrl-C while cocoon writes its output to a reader that does
  // not read ends cocoon as it would any program. Returns the first signal
  // it consumed (0: none), for the caller to record (RecordLateCancel).
  static int ReleaseCancelSignals();

  explicit SignalGuard(SignalHandling handling);
  ~SignalGuard();
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;
  int fd() const { return fd_.get(); }

 private:
  bool active_ = false;
  pthread_t owner_;  // the thread whose mask it changed
  sigset_t old_{};
  OwnedFd fd_;
};

class StartedChild {
 public:
  // Pipes, sockets, the listener page, the spec arena and the child's stack,
  // then clone3.
  // FailedPrecondition (with how to enable them) when user namespaces are
  // not available.
  static Result<std::unique_ptr<StartedChild>> Start(const ChildStartOptions& options);
  // For a caller that has the plan's network mode but not yet the plan (the
  // launcher, cli/launch_util.cc; a keeper of spares, spare_child.h): the
  // options of the child for a run with these settings, or nullopt when none
  // should be started yet (the run may have to be born in a cgroup v2 group,
  // CgroupV2ControllersMayBeInUse). A child started on them that cannot be
  // started is no refusal: Run then starts one, and says why if it fails.
  static std::optional<ChildStartOptions> OptionsBeforePlan(ir::NetworkMode network, StdinMode stdin_mode,
                                                            SignalHandling signals, bool work_dir);
  ~StartedChild();
  StartedChild(const StartedChild&) = delete;
  StartedChild& operator=(const StartedChild&) = delete;

  // Whether this child can serve a run that needs `needed`: not yet used
  // by a run, the same namespaces, stdin and signal handling, every socket
  // it needs, no cgroup to be born in that it was not born in, and not in
  // our memory unless the run allows it (a fork-style child serves any).
  bool Fits(const ChildStartOptions& needed) const;
  // Marks the child as taken by a run (Fits is false from then on).
  void Adopt() {
    adopted_ = true;
    if (stdin_relay_) stdin_relay_->Go();  // only now may the caller's stdin be read
  }

  // SIGKILL (the pid namespace's init: everything in it dies), tell a child
  // spinning on the listener handoff to give up, and reap.
  void Kill();
  // With SignalHandling::kCancelOnSigintSigterm: whether SIGINT, SIGTERM or
  // SIGHUP arrived since Start (the guard holds them in its signalfd; this
  // drains it). The launcher refuses the run as cancelled before releasing
  // the child; once the command runs, the supervisor reads the same fd.
  bool SignalArrived();

  pid_t pid() const { return pid_; }
  int pidfd() const { return pidfd_.get(); }
  int stdout_fd() const { return out_read_.get(); }
  int stderr_fd() const { return err_read_.get(); }
  int error_fd() const { return error_read_.get(); }
  int sync_fd() const { return sync_write_.get(); }
  void CloseSync() { sync_write_.Reset(); }
  int signal_fd() const { return signals_.fd(); }
  // Parent ends (-1 when not asked for) and the child's numbers for them.
  int work_fd() const { return work_parent_.get(); }
  int broker_fd() const { return broker_parent_.get(); }
  int work_child_end() const { return work_child_end_; }
  int broker_child_end() const { return broker_child_end_; }
  ListenerHandoff* handoff() const { return handoff_; }
  ChildSpecArena& arena() { return arena_; }

 private:
  StartedChild(const ChildStartOptions& options, ChildSpecArena arena);

  ChildStartOptions options_;
  SignalGuard signals_;
  ChildSpecArena arena_;
  // Read by the child until it execs (memory_sharing_clone.h): members, so
  // they stay put until the destructor has reaped it.
  ChildBootstrap boot_;
  std::optional<ChildStack> stack_;
  ListenerHandoff* handoff_ = nullptr;  // a MAP_SHARED page
  OwnedFd out_read_, err_read_, error_read_, sync_write_, work_parent_, broker_parent_, pidfd_;
  int work_child_end_ = -1;
  int broker_child_end_ = -1;
  pid_t pid_ = -1;
  bool adopted_ = false;
  // Last: stopped first, after the destructor has killed and reaped the
  // child (a relay waiting on its pipe then sees it closed anyway).
  std::unique_ptr<StdinRelay> stdin_relay_;
};

}  // namespace cocoon::enforcer
