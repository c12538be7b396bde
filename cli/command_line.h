// The command line both executables share: CLI11 over the commands
// registered in this executable (command_registry.h), logs on stderr, and the
// process's exit. cli/main.cc (cocoon-full) and cli/fast_path/main.cc
// (cocoon) are each a thin main around it.
#pragma once

#include <string>
#include <vector>

namespace cocoon::cli {

// Parses argv, runs the chosen command and leaves the process with its exit
// code (usage errors are 2). Returns only in sanitizer builds, which take
// main's normal return for LeakSanitizer's exit-time check.
int RunCommandLine(int argc, char** argv);

// `cocoon run` and `cocoon enforce`: the words after the first standalone
// `--`, which RunCommandLine takes out of argv before CLI11 parses it, so
// that no word of the command is ever read as one of cocoon's options.
// nullptr when the command line had no `--`.
const std::vector<std::string>* CommandAfterDoubleDash();

}  // namespace cocoon::cli
