// The `cocoon` executable: parses the command line with CLI11 and dispatches
// to the subcommands registered from cli/*_command.cc.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cli/command_registry.h"
#include "cocoon_version.h"

int main(int argc, char** argv) {
  // Logs go to stderr: stdout carries only command output (JSON Outcomes,
  // MCP protocol messages), and spdlog's default logger writes to stdout.
  spdlog::set_default_logger(spdlog::stderr_color_mt("cocoon"));
  spdlog::set_level(spdlog::level::warn);

  CLI::App app{"Cocoon: compile and enforce security policies for untrusted code"};
  app.set_version_flag("--version", std::string("cocoon ") + COCOON_VERSION_STRING);
  app.require_subcommand(1);
  cocoon::cli::CommandResult result;
  // argv[1] names the subcommand (no global option takes a value), so only
  // its options are built; anything else (--help, a typo) gets them all.
  cocoon::cli::SetUpCommandsFor(app, result, argc > 1 ? argv[1] : nullptr);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    // CLI11 returns 0 for --help/--version; usage errors are exit 2 everywhere.
    return code == 0 ? 0 : 2;
  }
  return result.exit_code;
}
