#include "enforcer/spare_child.h"

#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "enforcer/poll_now.h"

namespace cocoon::enforcer {

namespace {

// Whether the mount namespace changed since `mounts` (/proc/self/mountinfo)
// was opened: the kernel compares the namespace's event counter with the one
// the file saw at open and reports a difference as POLLPRI|POLLERR. Any
// failure counts as a change: a spare is only an optimisation.
bool MountTableChanged(int mounts) { return mounts < 0 || PollNow(mounts, POLLPRI) != 0; }

// The per-thread and per-moment state a spare must not carry, and SIGPIPE
// ignored (spare_child.h).
bool SparesMayServe(const ChildStartOptions& options) {
  struct sigaction pipe_action {};
  return options.signals == SignalHandling::kNone && options.stdin_mode == StdinMode::kNull &&
         options.cgroup_fd < 0 && sigaction(SIGPIPE, nullptr, &pipe_action) == 0 &&
         pipe_action.sa_handler == SIG_IGN;
}

// Whether `pid` has made its own mount namespace yet (its unshare, after
// clone3, runs on its own; a spare taken before that could still fail in it,
// and then the launch would fail on the spare's error instead of starting a
// child of its own). Anything unreadable counts as "not yet".
bool MadeItsNamespaces(pid_t pid) {
  char own[64], its[64];
  ssize_t own_len = readlink("/proc/self/ns/mnt", own, sizeof(own));
  std::string path = "/proc/" + std::to_string(pid) + "/ns/mnt";
  ssize_t its_len = readlink(path.c_str(), its, sizeof(its));
  if (own_len <= 0 || its_len <= 0) return false;
  return std::string_view(own, static_cast<size_t>(own_len)) != std::string_view(its, static_cast<size_t>(its_len));
}

std::string ReadProcFile(const std::string& path) {
  OwnedFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  std::string text;
  char buffer[1024];
  ssize_t n;
  while (fd.valid() && (n = read(fd.get(), buffer, sizeof(buffer))) > 0) text.append(buffer, static_cast<size_t>(n));
  return text;
}

// Whether `pid` still has what a child the calling thread started now would
// inherit: nice value, scheduling policy, CPU affinity, I/O priority,
// rlimits and cgroups (per thread on cgroup v1). The server changes none of
// them, but renice, taskset, ionice, prlimit or a cgroup move from outside
// can, and a renice or taskset of one thread never reaches the keeper's.
// Anything unreadable counts as changed.
bool InheritsWhatAFreshChildWould(pid_t pid) {
  errno = 0;
  int own_nice = getpriority(PRIO_PROCESS, 0);
  int its_nice = getpriority(PRIO_PROCESS, static_cast<id_t>(pid));
  if (errno != 0 || own_nice != its_nice) return false;
  if (sched_getscheduler(0) != sched_getscheduler(pid)) return false;
  cpu_set_t own_cpus, its_cpus;
  if (sched_getaffinity(0, sizeof(own_cpus), &own_cpus) != 0 ||
      sched_getaffinity(pid, sizeof(its_cpus), &its_cpus) != 0 || !CPU_EQUAL(&own_cpus, &its_cpus)) {
    return false;
  }
  constexpr int kIoprioWhoProcess = 1;  // IOPRIO_WHO_PROCESS (linux/ioprio.h)
  long own_io = syscall(SYS_ioprio_get, kIoprioWhoProcess, 0);
  long its_io = syscall(SYS_ioprio_get, kIoprioWhoProcess, pid);
  if (own_io < 0 || own_io != its_io) return false;
  for (int resource = 0; resource < RLIM_NLIMITS; ++resource) {
    struct rlimit own {}, its {};
    if (prlimit(0, static_cast<__rlimit_resource>(resource), nullptr, &own) != 0 ||
        prlimit(pid, static_cast<__rlimit_resource>(resource), nullptr, &its) != 0 ||
        own.rlim_cur != its.rlim_cur || own.rlim_max != its.rlim_max) {
      return false;
    }
  }
  std::string own_cgroups = ReadProcFile("/proc/thread-self/cgroup");
  return !own_cgroups.empty() && own_cgroups == ReadProcFile("/proc/" + std::to_string(pid) + "/cgroup");
}

bool Died(const StartedChild& child) {
  // Its pidfd is readable once it exited; its error pipe once it reported a
  // failed step (or closed it by exiting).
  return PollNow(child.pidfd(), POLLIN) != 0 || PollNow(child.error_fd(), POLLIN) != 0;
}

enum class Readiness { kReady, kNotYet, kDead };

// A spare still in its unshare is about to be ready: waiting a little for it
// costs less than starting another child, which would do the same work.
Readiness AwaitNamespaces(const StartedChild& child, std::chrono::microseconds wait) {
  auto deadline = std::chrono::steady_clock::now() + wait;
  while (true) {
    if (MadeItsNamespaces(child.pid())) return Readiness::kReady;
    if (Died(child)) return Readiness::kDead;
    if (std::chrono::steady_clock::now() >= deadline) return Readiness::kNotYet;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace

SpareChildKeeper::SpareChildKeeper(std::chrono::microseconds ready_wait)
    : ready_wait_(ready_wait), thread_([this] { StartSpares(); }) {}

SpareChildKeeper::~SpareChildKeeper() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();  // it kills the spare before it returns (StartSpares)
}

uint64_t* SpareChildKeeper::ReasonToDiscard() {
  if (Died(*spare_)) return &counts_.dead;
  if (MountTableChanged(spare_mounts_.get())) return &counts_.stale;
  return nullptr;
}

std::unique_ptr<StartedChild> SpareChildKeeper::Take(const ChildStartOptions& options) {
  if (!SparesMayServe(options)) return nullptr;  // nor is the spare (for other calls) touched
  std::unique_ptr<StartedChild> taken, discarded;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    wanted_ = options;
    last_call_ = std::chrono::steady_clock::now();
    // A call is starting: a Replenish still pending (asked for while a spare
    // existed) must not start one during it.
    replenish_ = false;
    started_.wait(lock, [this] { return !starting_; });
    if (!spare_) {
      ++counts_.missed;
    } else if (!spare_->Fits(options)) {
      ++counts_.unfit;
      discarded = std::move(spare_);
    } else if (uint64_t* reason = ReasonToDiscard()) {
      ++*reason;
      discarded = std::move(spare_);
    } else if (!InheritsWhatAFreshChildWould(spare_->pid())) {
      ++counts_.outdated;
      discarded = std::move(spare_);
    } else if (Readiness ready = AwaitNamespaces(*spare_, ready_wait_); ready != Readiness::kReady) {
      if (ready == Readiness::kDead) {
        ++counts_.dead;
        discarded = std::move(spare_);
      } else {
        ++counts_.unready;  // kept for the next call; this one starts its own child
      }
    } else {
      ++counts_.taken;
      taken = std::move(spare_);
    }
  }
  return taken;  // `discarded` is killed and reaped here, outside the lock
}

void SpareChildKeeper::Replenish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last_call_ = std::chrono::steady_clock::now();
    if (spare_ || starting_) return;  // one is there (or coming): nothing to do
    replenish_ = true;
  }
  wake_.notify_one();
}

void SpareChildKeeper::Expect(const ChildStartOptions& options) {
  if (!SparesMayServe(options)) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wanted_ = options;
    last_call_ = std::chrono::steady_clock::now();
    replenish_ = true;
  }
  wake_.notify_one();
}

SpareChildKeeper::Counts SpareChildKeeper::counts() {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

void SpareChildKeeper::StartSpares() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    if (!spare_) spare_mounts_.Reset();  // taken or discarded since: its watch goes with it
    if (replenish_ && wanted_ && !spare_) {
      replenish_ = false;
      starting_ = true;
      const ChildStartOptions options = *wanted_;
      lock.unlock();
      // Opened before the child copies the mount table: any change from
      // here on marks the spare stale.
      OwnedFd mounts(open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC));
      Result<std::unique_ptr<StartedChild>> started =
          mounts.valid() ? StartedChild::Start(options)
                         : Result<std::unique_ptr<StartedChild>>(ErrnoError("opening /proc/self/mountinfo"));
      lock.lock();
      starting_ = false;
      if (started.ok()) {
        ++counts_.started;
        spare_ = std::move(*started);
        spare_mounts_ = std::move(mounts);
      } else {
        ++counts_.failed;  // the next launch starts its own child, and reports why if that fails too
      }
      started_.notify_all();
      continue;
    }
    if (!spare_) {
      wake_.wait(lock);
      continue;
    }
    // Holding a spare: look at it every kWatchInterval, so that one the host
    // has made stale does not keep the old mount table (and any privately
    // propagated filesystem in it) alive until the next call.
    wake_.wait_for(lock, kWatchInterval);
    if (!spare_ || stopping_) continue;
    // Idle is measured from the last call, not from the spare's start: on a
    // host whose mounts change often, stale spares would otherwise be
    // replaced for ever by a server nobody calls.
    std::unique_ptr<StartedChild> discarded;
    bool called_lately = std::chrono::steady_clock::now() - last_call_ < kMaxIdle;
    if (uint64_t* reason = ReasonToDiscard()) {
      ++*reason;
      discarded = std::move(spare_);
      // A fresh copy of the new table, while calls come; a dead one waits for a call.
      replenish_ = reason == &counts_.stale && called_lately;
    } else if (!called_lately) {
      ++counts_.idle;
      discarded = std::move(spare_);
    }
    if (discarded) {
      lock.unlock();
      discarded.reset();  // killed and reaped outside the lock
      lock.lock();
    }
  }
  // The spare is killed here, on the thread that started it, so that its
  // parent-death signal and (memory-sharing) TLS are never those of a
  // thread that is gone.
  std::unique_ptr<StartedChild> last = std::move(spare_);
  lock.unlock();
  last.reset();
}

}  // namespace cocoon::enforcer
