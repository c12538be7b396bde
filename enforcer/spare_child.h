// A sandbox's first process started ahead of need, for a long-lived caller
// that launches sandboxes of one shape again and again (`cocoon mcp`).
//
// What a StartedChild does before its spec arrives (clone3 with the user and
// pid namespaces, then unsharing the mount, uts, ipc and net namespaces:
// ~0.6 ms of kernel work, most of it the network namespace) depends only on
// its ChildStartOptions. A server can therefore do it between calls, off the
// critical path of the next one: the keeper holds one such child, hands it to
// the next launch whose options it fits, and starts the next spare when the
// caller says a run is over (Replenish), not when one starts: on a 2-CPU
// host the spare's namespace work would compete with the starting launch for
// the same namespace and mount locks (docs/performance.md, launch item 12).
// (With calls that overlap, the spare one call's end asks for is made while
// the others run; a Replenish that finds a spare there does nothing, and a
// Take cancels one still pending, so no spare is started because a call
// began.)
//
// Why a spare may serve a later run:
//  - Nothing of a run is in it before Sandbox::Run adopts it: the uid/gid
//    maps, the spec (mounts, limits, Landlock, seccomp, argv) and the cgroups
//    all come after adoption, exactly as for a child started at the launch,
//    and Run adopts it only if it Fits the prepared run.
//  - What it did take at its start is the process state of that moment: the
//    server's rlimits, umask and LSM label, the keeper thread's nice value,
//    CPU affinity, I/O priority and (on cgroup v1, where membership is per
//    thread) cgroups, whether user namespaces were allowed, and a copy of the
//    host's mount table (unshare(CLONE_NEWNS)), in which the spec's binds
//    later resolve their sources. The server changes none of the first; a
//    change made to it from outside (renice, taskset, prlimit, a move to
//    another cgroup) would not reach a sandbox made from the spare of that
//    moment (a renice or taskset of one thread never reaches the keeper's),
//    so Take hands out a spare only if its nice value, scheduling policy,
//    CPU affinity, I/O priority, rlimits and cgroups are those of the calling
//    thread, which is what a child started by that thread would inherit. A
//    sysctl that disallows user namespaces reaches the next spare, not the
//    one already started. The mount table is the host's. After a mount or unmount on the host, a spare would bind from
//    the old table (a directory mounted over since would show what is under
//    the mount), and its copy would keep a privately propagated filesystem
//    busy. So the keeper opens /proc/self/mountinfo before it starts a
//    spare and polls it, at hand-over and every kWatchInterval: the kernel
//    marks that file POLLPRI|POLLERR once the mount namespace has changed
//    since it was opened (proc(5), /proc/pid/mounts); such a spare is
//    killed (and a fresh one started while calls come). A spare is killed
//    too once no call came for kMaxIdle, and the next call starts its own
//    child again.
//  - Only runs whose first process depends on nothing per-thread or
//    per-moment are served: no signal handling of their own (a StartedChild's
//    SignalGuard blocks signals in the thread that starts it, the keeper's)
//    and stdin from /dev/null (kInherit dups fd 0 at the start). And only in
//    a process that ignores SIGPIPE (`cocoon mcp` does): the thread that
//    runs a spare's sandbox never had SIGPIPE blocked by its guard, so a
//    write to a child that died must not end the process.
//  - A spare that died while it waited (its unshare failed, or something
//    killed it) is not handed out: the launch starts its own child, which may
//    well succeed, instead of failing on the spare's old error. Nor is one
//    that has not made its namespaces yet (a busy host; Take waits up to
//    kReadyWait for it): its unshare could still fail (a per-user namespace
//    limit, which the spare's own namespaces count against); it is kept for
//    the next call.
//  - Spares are started by the keeper's own thread. A child's parent-death
//    signal (PR_SET_PDEATHSIG, child_main.cc) fires when the *thread* that
//    cloned it exits, and a memory-sharing child (memory_sharing_clone.h)
//    runs on that thread's TLS until it execs. So that thread lives as long
//    as the keeper, and the keeper must outlive every run that took one of
//    its spares (the MCP server answers every call before it exits).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "enforcer/owned_fd.h"
#include "enforcer/started_child.h"

namespace cocoon::enforcer {

class SpareChildKeeper {
 public:
  static constexpr std::chrono::milliseconds kWatchInterval{1000};
  static constexpr std::chrono::seconds kMaxIdle{60};
  // How long Take waits for a spare still making its namespaces.
  static constexpr std::chrono::microseconds kReadyWait{5000};

  struct Counts {
    uint64_t started = 0;    // spares started
    uint64_t taken = 0;      // handed to a launch
    uint64_t missed = 0;     // Take found no spare ready
    uint64_t stale = 0;      // discarded: the host's mount table changed since
    uint64_t unfit = 0;      // discarded: started for other options
    uint64_t dead = 0;       // discarded: it exited or reported an error while it waited
    uint64_t idle = 0;       // discarded: no call for kMaxIdle
    uint64_t unready = 0;    // kept, not handed out: it had not made its namespaces within kReadyWait
    uint64_t outdated = 0;   // discarded: a fresh child would inherit other scheduling, rlimits or cgroups
    uint64_t failed = 0;     // a start that failed (the launch starts its own)
  };

  explicit SpareChildKeeper(std::chrono::microseconds ready_wait = kReadyWait);
  ~SpareChildKeeper();  // stops the thread, kills and reaps the spare
  SpareChildKeeper(const SpareChildKeeper&) = delete;
  SpareChildKeeper& operator=(const SpareChildKeeper&) = delete;

  // The spare, if it fits `options`, is alive and the host's mount table
  // has not changed since it started; otherwise nullptr (a spare that cannot
  // serve is killed). A spare still being started is waited for. Records
  // `options` as the shape of the next spare, if spares may serve it (see
  // above; else nullptr, and the spare stays for a call they may serve).
  std::unique_ptr<StartedChild> Take(const ChildStartOptions& options);
  // The caller's run is over: start the next spare now (with the options of
  // the last Take), unless one is there or being started.
  void Replenish();
  // Start a spare for `options` before any Take (a server's likely first
  // call), if spares may serve them.
  void Expect(const ChildStartOptions& options);
  Counts counts();

 private:
  void StartSpares();
  // Why the spare cannot serve any more (counted), or nullptr. Under mutex_.
  uint64_t* ReasonToDiscard();

  const std::chrono::microseconds ready_wait_;
  std::mutex mutex_;
  std::condition_variable wake_;     // the thread: work to do, or stop
  std::condition_variable started_;  // Take: a start finished
  std::optional<ChildStartOptions> wanted_;
  bool replenish_ = false;
  bool starting_ = false;
  bool stopping_ = false;
  std::unique_ptr<StartedChild> spare_;
  OwnedFd spare_mounts_;  // /proc/self/mountinfo, opened just before spare_ started
  std::chrono::steady_clock::time_point last_call_ = std::chrono::steady_clock::now();  // Take, Replenish, Expect
  Counts counts_;
  std::thread thread_;
};

}  // namespace cocoon::enforcer
