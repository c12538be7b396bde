// A runtime flag's part that follows the memory limit: "{memory_mib:75%}"
// becomes 75% of the run's memory limit in MiB (node's
// "--max-old-space-size={memory_mib:75%}", java's "-Xmx{memory_mib:50%}m").
// Parsed here, where `cocoon check` (checker_limits.cc) and `cocoon run`
// (cli/runtime_util.cc ScaleMemoryFlags) both read it, so a preset that
// checks is one that runs.
#pragma once

#include <string>
#include <string_view>

namespace cocoon::ir {

inline constexpr const char* kMemoryMibPlaceholder = "{memory_mib:";

struct MemoryFlagPart {
  bool present = false;  // the flag holds the placeholder
  bool valid = false;    // "{memory_mib:N%}" with N from 1 to 100, once in the flag
  size_t begin = 0;      // where the placeholder starts
  size_t end = 0;        // one past its "%}"
  unsigned percent = 0;
};

inline MemoryFlagPart ParseMemoryFlag(const std::string& flag) {
  MemoryFlagPart part;
  const size_t at = flag.find(kMemoryMibPlaceholder);
  if (at == std::string::npos) return part;
  part.present = true;
  part.begin = at;
  const size_t digits = at + std::string_view(kMemoryMibPlaceholder).size();
  const size_t close = flag.find("%}", digits);
  bool valid = close != std::string::npos && close > digits && close - digits <= 3;
  unsigned percent = 0;
  for (size_t i = digits; valid && i < close; ++i) {
    if (flag[i] < '0' || flag[i] > '9') valid = false;
    percent = percent * 10 + static_cast<unsigned>(flag[i] - '0');
  }
  valid = valid && percent >= 1 && percent <= 100 && flag.find(kMemoryMibPlaceholder, close) == std::string::npos;
  part.valid = valid;
  part.percent = percent;
  part.end = valid ? close + 2 : 0;
  return part;
}

inline std::string MemoryFlagAdvice() {
  return std::string("write the memory limit's share as ") + kMemoryMibPlaceholder +
         "N%} with N from 1 to 100, once in the flag";
}

}  // namespace cocoon::ir
