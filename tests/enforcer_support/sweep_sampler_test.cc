// SweepSampler (enforcer/sweep_sampler.h): one call in 16 sweeps, from any
// starting pid, and concurrent callers share the count.
#include "enforcer/sweep_sampler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

namespace cocoon::enforcer {
namespace {

TEST(SweepSamplerTest, OneCallInSixteenSweeps) {
  SweepSampler sampler;
  int sweeps = 0;
  for (int call = 0; call < 160; ++call) sweeps += sampler.ShouldSweepNow() ? 1 : 0;
  EXPECT_EQ(sweeps, 10);
}

TEST(SweepSamplerTest, ConcurrentCallersShareOneCount) {
  SweepSampler sampler;
  std::atomic<int> sweeps{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int call = 0; call < 400; ++call) sweeps += sampler.ShouldSweepNow() ? 1 : 0;
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(sweeps.load(), 100);
}

}  // namespace
}  // namespace cocoon::enforcer
