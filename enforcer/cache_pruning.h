// Keeps a cache directory bounded. Cocoon's caches grow with use: the
// artifact cache gains an entry per policy, profile and cocoon build (a
// rebuilt cocoon never reuses the old entries), and `cocoon run` writes a
// content-addressed file per generated policy and per inline code snippet.
// An agent making thousands of runs must not fill the disk.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

namespace cocoon::enforcer {

struct PruneLimits {
  // Above this many cache files, the least recently modified go first,
  // down to three quarters of it (so the next store does not prune again).
  size_t max_files = 512;
  // Never remove a file modified more recently than this: a concurrent run
  // may have just written or re-validated it and be about to use it.
  // Leftover temporaries (".tmp" in the name) older than this are removed.
  std::chrono::seconds min_age{600};
};

// Prunes the regular files of `dir` whose names end in `suffix` ("" for
// all). Best effort (a cache is an optimisation): returns how many files
// were removed; errors, including a missing directory, remove nothing.
size_t PruneCacheDir(const std::string& dir, std::string_view suffix, const PruneLimits& limits);

// Whether a store under `content_hash` (hex) should also prune: about one
// store in 16, chosen by the hash itself, so pruning's directory scan is
// amortised without any state or randomness.
inline bool ShouldPruneAfterStore(std::string_view content_hash) {
  return !content_hash.empty() && content_hash[0] == '0';
}

}  // namespace cocoon::enforcer
