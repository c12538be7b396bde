// Names for the temporary file an atomic write (write, then rename(2) into
// place) goes through.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <string>

namespace cocoon {

// ".tmp.<pid>.<n>": unique among the live processes of one pid namespace and
// among the threads of this one. A name built from the pid alone is not:
// `cocoon mcp` runs calls on several threads, and two calls that wrote the
// same content-addressed file opened the same temporary, so the second
// rename found it gone ("write .../quick/<hash>.stdin: No such file or
// directory", 1 call in 160 with 4 identical concurrent calls, measured).
// Not unique against a temporary that a killed process left behind, when
// its pid is reused: open with O_TRUNC, or take EEXIST under O_EXCL for such
// a leftover (no live writer can use the name) and unlink it
// (enforcer/artifact_cache.cc, audit/sink.cc). Leftovers in caches are also
// pruned with them (enforcer/cache_pruning.h).
inline std::string UniqueTempSuffix() {
  static std::atomic<uint64_t> counter{0};
  return ".tmp." + std::to_string(getpid()) + "." + std::to_string(counter.fetch_add(1) + 1);
}

}  // namespace cocoon
