// `cocoon`, the launcher: serves `cocoon enforce` and `cocoon run` on warm
// caches and execs cocoon-full (full_cocoon.h) for every other command line
// and whenever one of those needs the policy compiler. The commands are the
// same source files in both executables; only what the compiler seam does
// differs (cli/policy_compile.h).
#include <cstring>
#include <iostream>

#include "cli/command_line.h"
#include "cli/fast_path/full_cocoon.h"

int main(int argc, char** argv) {
  cocoon::cli::RememberCommandLine(argv);
  if (argc > 1 && (std::strcmp(argv[1], "enforce") == 0 || std::strcmp(argv[1], "run") == 0)) {
    return cocoon::cli::RunCommandLine(argc, argv);
  }
  cocoon::Status status = cocoon::cli::ExecFullCocoon();
  std::cerr << "cocoon: " << status.message() << "\n";
  return 1;
}
