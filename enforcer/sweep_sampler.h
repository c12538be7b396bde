// Sampling for the sweeps that remove what a SIGKILLed supervisor left
// behind (sandbox cgroups, commit directories, scratch directories). Only a
// killed supervisor leaves anything, and each sweep lists a directory that
// may be big (/tmp, a cgroup hierarchy), so one call in 16 sweeps; adding
// the pid spreads the sweeping call over processes, so that a stream of
// short-lived `cocoon` processes (each making one call) still sweeps.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace cocoon::enforcer {

class SweepSampler {
 public:
  static constexpr uint64_t kOneIn = 16;

  // True for about one call in kOneIn; safe from several threads.
  bool ShouldSweepNow() { return (static_cast<uint64_t>(getpid()) + calls_.fetch_add(1) + 1) % kOneIn == 0; }

 private:
  std::atomic<uint64_t> calls_{0};
};

}  // namespace cocoon::enforcer
