#include "enforcer/spare_child.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <utility>

namespace cocoon::enforcer {

namespace {

// Whether the mount namespace changed since `mounts` (/proc/self/mountinfo)
// was opened: the kernel compares the namespace's event counter with the one
// the file saw at open and reports a difference as POLLPRI|POLLERR. Any
// failure counts as a change: a spare is only an optimisation.
bool MountTableChanged(int mounts) {
  if (mounts < 0) return true;
  struct pollfd p {mounts, POLLPRI, 0};
  int ready = poll(&p, 1, 0);
  return ready != 0;
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

std::unique_ptr<StartedChild> SpareChildKeeper::Take(const ChildStartOptions& options) {
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
    } else if (MountTableChanged(spare_mounts_.get())) {
      ++counts_.stale;
      discarded = std::move(spare_);
    } else {
      ++counts_.taken;
      taken = std::move(spare_);
    }
    spare_mounts_.Reset();
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

SpareChildKeeper::Counts SpareChildKeeper::counts() {
  std::lock_guard<std::mutex> lock(mutex_);
  return counts_;
}

void SpareChildKeeper::StartSpares() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return stopping_ || (replenish_ && wanted_ && !spare_); });
    if (stopping_) break;
    replenish_ = false;
    starting_ = true;
    const ChildStartOptions options = *wanted_;
    lock.unlock();
    // Opened before the child copies the mount table: any change from here
    // on marks the spare stale.
    OwnedFd mounts(open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC));
    Result<std::unique_ptr<StartedChild>> started =
        mounts.valid() ? StartedChild::Start(options) : Result<std::unique_ptr<StartedChild>>(
                                                            ErrnoError("opening /proc/self/mountinfo"));
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
  }
  // The spare is killed here, on the thread that started it, so that its
  // parent-death signal and (memory-sharing) TLS are never those of a
  // thread that is gone.
  std::unique_ptr<StartedChild> last = std::move(spare_);
  lock.unlock();
  last.reset();
}

}  // namespace cocoon::enforcer
