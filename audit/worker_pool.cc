#include "audit/worker_pool.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>

namespace cocoon::audit {

WorkerPool::WorkerPool(unsigned threads) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  // The workers take no signals. A process-directed signal goes to any
  // thread that does not block it: a SIGINT that a launch's signal guard
  // blocks (and reads from its signalfd) on the supervising thread would
  // otherwise land on a worker started before that guard, and its default
  // action would end cocoon before the run's Outcome and audit events are
  // written. A new thread inherits its creator's mask, so block them first
  // (all but the faults a thread raises itself, whose handlers, a
  // sanitizer's for one, must still run), and restore the caller's after.
  sigset_t blocked, previous;
  sigfillset(&blocked);
  for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS}) sigdelset(&blocked, fault);
  pthread_sigmask(SIG_BLOCK, &blocked, &previous);
  struct RestoreMask {
    const sigset_t& mask;
    ~RestoreMask() { pthread_sigmask(SIG_SETMASK, &mask, nullptr); }
  } restore{previous};
  for (unsigned i = 1; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (auto& t : threads_) t.join();
}

// Takes chunks until none are left; the last finisher wakes the caller.
void WorkerPool::RunChunks() {
  std::unique_lock<std::mutex> lock(mu_);
  while (fn_ != nullptr && next_ < n_) {
    size_t begin = next_;
    size_t end = std::min(n_, begin + chunk_);
    next_ = end;
    const auto* fn = fn_;
    lock.unlock();
    (*fn)(begin, end);
    lock.lock();
    pending_ -= end - begin;
    if (pending_ == 0) done_cv_.notify_all();
  }
}

void WorkerPool::Loop() {
  uint64_t seen = 0;
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
    }
    RunChunks();
  }
}

void WorkerPool::ParallelFor(size_t n, size_t min_chunk, const std::function<void(size_t, size_t)>& fn) {
  if (n == 0) return;
  size_t workers = threads_.size() + 1;
  if (threads_.empty() || n <= min_chunk) {
    fn(0, n);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    next_ = 0;
    pending_ = n;
    // Several chunks per worker balance uneven lines without much locking.
    chunk_ = std::max(min_chunk, (n + workers * 4 - 1) / (workers * 4));
    ++generation_;
  }
  work_cv_.notify_all();
  RunChunks();
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return pending_ == 0; });
  fn_ = nullptr;
}

}  // namespace cocoon::audit
