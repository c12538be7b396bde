// How the launcher `cocoon` hands a command line to cocoon-full.
//
// Why two executables: every sandboxed launch is a fresh `cocoon` process,
// and what that process maps, relocates and initialises is on the critical
// path of every run (issue 4). The launcher links only what a warm-cache
// `cocoon enforce` needs (CLI11, the enforcer, the launch plan); the front
// end, ANTLR, the compiler back ends and the signed audit log live in
// cocoon-full. git and the clang driver split theirs the same way.
#pragma once

#include <string>

#include "compiler/common/status.h"

namespace cocoon::cli {

// cocoon-full is the file of that name beside the running launcher (found
// through /proc/self/exe, never through PATH or the environment: whoever can
// replace that file can replace the launcher itself).
Result<std::string> FullCocoonPath();

// Remembers main's argv, which ExecFullCocoon passes on unchanged.
void RememberCommandLine(char** argv);

// Replaces this process with cocoon-full running the remembered argv (argv[0]
// unchanged, so usage messages still say `cocoon`). Returns only when that
// fails, with a message naming the file.
Status ExecFullCocoon();

}  // namespace cocoon::cli
