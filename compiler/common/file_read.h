// Reading a whole file into memory, for the small files every module reads:
// policies and compiled artifacts, and /proc and cgroupfs files (which report
// a size of 0, so this reads until EOF instead of trusting st_size). Plain
// read(2): no iostreams on the launch path. Files whose trust or size must be
// checked first (the artifact cache's entries) have their own reader.
#pragma once

#include <string>

#include "compiler/common/status.h"

namespace cocoon {

// The whole file; errors name the path and the failing call ("open PATH",
// "read PATH") with errno.
Result<std::string> ReadFileToString(const std::string& path);

}  // namespace cocoon
