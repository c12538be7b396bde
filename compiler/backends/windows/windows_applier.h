// The Windows applier: runs one command confined by a compiled windows.json.
// Path resolution is portable (and tested on Linux); the Win32 part is built
// only on Windows, and elsewhere RunInWindowsSandbox fails with "not implemented".
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/backends/windows/windows_plan.h"
#include "compiler/common/status.h"

namespace cocoon::backends::windows {

struct WindowsLaunchRequest {
  std::string plan_json;     // windows.json
  std::string command_line;  // UTF-8, as for CreateProcessW
  std::string work_dir;      // replaces %COCOON_WORK_DIR%
  std::string temp_dir;      // replaces %COCOON_TEMP_DIR%
  // Policy paths (POSIX, e.g. "/usr") -> Windows paths. Unmapped read-only
  // and hidden paths are skipped (they do not exist on Windows); an unmapped
  // writable path is an error (the policy expects to write there).
  std::map<std::string, std::string> path_map;
  // "NAME=value" entries: the sandbox's whole environment (the caller's own is
  // never inherited; SystemRoot is added when missing).
  std::vector<std::string> environment;
};

struct ResolvedPathAcl {
  std::string windows_path;
  const PathAcl* acl = nullptr;
};

Result<std::vector<ResolvedPathAcl>> ResolvePlanPaths(const WindowsPlan& plan, const WindowsLaunchRequest& request);

// Refuses plans with unenforceable required limits, and (for now) any plan
// whose network is not "on": the WFP filter step is not implemented yet.
Result<int> RunInWindowsSandbox(const WindowsLaunchRequest& request);

}  // namespace cocoon::backends::windows
