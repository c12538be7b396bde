// cocoon-full: every `cocoon` command, the compiler included. Users run the
// launcher `cocoon` (cli/fast_path/main.cc), which execs this executable for
// everything but a warm-cache `enforce`; running it directly works the same.
#include "cli/command_line.h"

int main(int argc, char** argv) { return cocoon::cli::RunCommandLine(argc, argv); }
