// cocoon-windows-run: the Windows applier as a command, for running one
// command under a compiled windows.json on a Windows machine:
//
//   cocoon-windows-run PLAN.json WORK_DIR TEMP_DIR "COMMAND LINE" [NAME=VALUE ...]
//
// WORK_DIR and TEMP_DIR replace %COCOON_WORK_DIR% / %COCOON_TEMP_DIR%; the
// NAME=VALUE arguments are the sandbox's whole environment. Exit status: the
// command's, 124 on timeout, 125 when the sandbox could not be set up.
// Built only for Windows (tests/backends/windows cross-compiles it with MinGW).
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "compiler/backends/windows/windows_applier.h"

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
  for (int i = 5; i < argc; ++i) request.environment.emplace_back(argv[i]);
  auto result = cocoon::backends::windows::RunInWindowsSandbox(request);
  if (!result.ok()) {
    std::fprintf(stderr, "cocoon-windows-run: %s\n", result.status().ToString().c_str());
    return 125;
  }
  return *result;
}
