// The audit worker pool's threads take no signals: a SIGINT meant for a
// launch's signal guard must never land on a worker (worker_pool.cc).
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <mutex>
#include <set>
#include <string>

#include "audit/worker_pool.h"

namespace cocoon::audit {
namespace {

// The thread's blocked-signal mask, from /proc/self/task/TID/status.
unsigned long long BlockedSignals(pid_t tid) {
  std::ifstream status("/proc/self/task/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("SigBlk:", 0) == 0) return std::stoull(line.substr(7), nullptr, 16);
  }
  return 0;
}

bool Blocks(unsigned long long mask, int signal) { return (mask >> (signal - 1)) & 1; }

TEST(WorkerPoolTest, WorkersBlockEverySignalAndTheCallerKeepsItsMask) {
  sigset_t before;
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, nullptr, &before), 0);
  WorkerPool pool(3);
  ASSERT_EQ(pool.size(), 3u);
  const pid_t caller = static_cast<pid_t>(syscall(SYS_gettid));
  std::mutex mutex;
  std::set<pid_t> workers;
  // Enough small chunks that each worker takes some, recording itself.
  for (int round = 0; round < 200 && workers.size() < 2; ++round) {
    pool.ParallelFor(64, 1, [&](size_t, size_t) {
      usleep(200);
      pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
      std::lock_guard<std::mutex> lock(mutex);
      if (tid != caller) workers.insert(tid);
    });
  }
  ASSERT_EQ(workers.size(), 2u) << "the workers never ran a chunk";
  for (pid_t tid : workers) {
    unsigned long long mask = BlockedSignals(tid);
    for (int signal : {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT}) {
      EXPECT_TRUE(Blocks(mask, signal)) << "worker " << tid << " takes signal " << signal;
    }
  }
  sigset_t after;
  ASSERT_EQ(pthread_sigmask(SIG_SETMASK, nullptr, &after), 0);
  for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
    EXPECT_EQ(sigismember(&after, signal), sigismember(&before, signal)) << "the caller's mask changed";
  }
}

}  // namespace
}  // namespace cocoon::audit
