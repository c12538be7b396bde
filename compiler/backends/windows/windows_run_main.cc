// cocoon-windows-run: the Windows applier as a command, for running one
// command under a compiled windows.json on a Windows machine:
//
//   cocoon-windows-run PLAN.json WORK_DIR TEMP_DIR "COMMAND LINE" [NAME=VALUE ...]
//
// WORK_DIR and TEMP_DIR replace %COCOON_WORK_DIR% / %COCOON_TEMP_DIR%. The
// sandbox's environment is the plan's (its `environment`: with `clear`, only
// the names it passes from this process's own, and the ones it sets), plus
// the NAME=VALUE arguments on top. Exit status: the command's, 124 on
// timeout, 125 when the sandbox could not be set up.
// Built only for Windows (tests/backends/windows cross-compiles it with MinGW).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "compiler/backends/environment_plan.h"
#include "compiler/backends/windows/windows_applier.h"
#include "compiler/backends/windows/windows_plan.h"

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr, "usage: %s PLAN.json WORK_DIR TEMP_DIR \"COMMAND LINE\" [NAME=VALUE ...]\n", argv[0]);
    return 125;
  }
  std::ifstream plan_file(argv[1], std::ios::binary);
  if (!plan_file) {
    std::fprintf(stderr, "cocoon-windows-run: cannot read %s\n", argv[1]);
    return 125;
  }
  std::ostringstream plan_text;
  plan_text << plan_file.rdbuf();
  cocoon::backends::windows::WindowsLaunchRequest request;
  request.plan_json = plan_text.str();
  request.work_dir = argv[2];
  request.temp_dir = argv[3];
  request.command_line = argv[4];
  auto plan = cocoon::backends::windows::ParseWindowsPlan(request.plan_json);
  if (!plan.ok()) {
    std::fprintf(stderr, "cocoon-windows-run: %s\n", plan.status().ToString().c_str());
    return 125;
  }
  cocoon::ir::Environment environment = plan->environment;
  for (int i = 5; i < argc; ++i) {
    const std::string entry = argv[i];
    const size_t equals = entry.find('=');
    if (equals == std::string::npos || equals == 0) {
      std::fprintf(stderr, "cocoon-windows-run: '%s' is not NAME=VALUE\n", argv[i]);
      return 125;
    }
    environment.set.push_back({entry.substr(0, equals), entry.substr(equals + 1)});
  }
  std::vector<std::string> own;
  for (char** entry = _environ; entry != nullptr && *entry != nullptr; ++entry) own.emplace_back(*entry);
  request.environment = cocoon::backends::SandboxEnvironment(environment, own);
  auto result = cocoon::backends::windows::RunInWindowsSandbox(request);
  if (!result.ok()) {
    std::fprintf(stderr, "cocoon-windows-run: %s\n", result.status().ToString().c_str());
    return 125;
  }
  return *result;
}
