// A small fork-join pool: the audit writer signs a batch in parallel, and the
// verifier scans, hashes and checks signatures on every core. The calling
// thread takes part, so a pool of N threads uses N+1 cores at most.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace cocoon::audit {

class WorkerPool {
 public:
  // `threads` counts the caller; 0 means one per core.
  explicit WorkerPool(unsigned threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Calls fn(begin, end) over [0, n) split into chunks of at least min_chunk;
  // returns when every chunk is done.
  void ParallelFor(size_t n, size_t min_chunk, const std::function<void(size_t, size_t)>& fn);
  unsigned size() const { return static_cast<unsigned>(threads_.size()) + 1; }

 private:
  void Loop();
  void RunChunks();

  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  std::vector<std::thread> threads_;
  const std::function<void(size_t, size_t)>* fn_ = nullptr;
  size_t n_ = 0, chunk_ = 0, next_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace cocoon::audit
