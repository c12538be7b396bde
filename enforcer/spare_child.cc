#include "enforcer/spare_child.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

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

}  // namespace

SpareChildKeeper::SpareChildKeeper() : thread_([this] { StartSpares(); }) {}

SpareChildKeeper::~SpareChildKeeper() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();  // it kills the spare before it returns (StartSpares)
}

uint64_t* SpareChildKeeper::ReasonToDiscard() {
  // Its pidfd is readable once it exited; its error pipe once it reported a
  // failed step (or closed it by exiting).
  if (PollNow(spare_->pidfd(), POLLIN) != 0 || PollNow(spare_->error_fd(), POLLIN) != 0) return &counts_.dead;
  if (MountTableChanged(spare_mounts_.get())) return &counts_.stale;
  return nullptr;
}

std::unique_ptr<StartedChild> SpareChildKeeper::Take(const ChildStartOptions& options) {
  if (!SparesMayServe(options)) return nullptr;  // nor is the spare (for other calls) touched
  std::unique_ptr<StartedChild> taken, discarded;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    wanted_ = options;
    started_.wait(lock, [this] { return !starting_; });
    if (!spare_) {
      ++counts_.missed;
    } else if (!spare_->Fits(options)) {
      ++counts_.unfit;
      discarded = std::move(spare_);
    } else if (uint64_t* reason = ReasonToDiscard()) {
      ++*reason;
      discarded = std::move(spare_);
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
    replenish_ = true;
  }
  wake_.notify_one();
}

void SpareChildKeeper::Expect(const ChildStartOptions& options) {
  if (!SparesMayServe(options)) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    wanted_ = options;
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
        spare_started_at_ = std::chrono::steady_clock::now();
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
    std::unique_ptr<StartedChild> discarded;
    if (uint64_t* reason = ReasonToDiscard()) {
      ++*reason;
      discarded = std::move(spare_);
      replenish_ = reason == &counts_.stale;  // a fresh copy of the new table; a dead one waits for a call
    } else if (std::chrono::steady_clock::now() - spare_started_at_ >= kMaxIdle) {
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
