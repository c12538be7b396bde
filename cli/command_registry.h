// Each cocoon subcommand lives in its own cli/*_command.cc and registers
// itself here at static-initialisation time, so commands can be added without
// editing a central list. The registry runs them in name order, which keeps
// `cocoon --help` stable.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>

namespace cocoon::cli {

// The exit code a command's callback wants: commands set it, main returns it.
struct CommandResult {
  int exit_code = 0;
};

using CommandSetup = std::function<void(CLI::App& app, CommandResult& result)>;

bool RegisterCommand(std::string name, CommandSetup setup);

// CLI11 check for options that name a path or a size: an empty value
// (`--work "$OUT"` with OUT unset) is a usage error, never the option left
// out, which would silently run without the work dir or the audit log.
inline const CLI::Validator& NonEmptyValue() {
  static const CLI::Validator validator(
      [](std::string& value) { return value.empty() ? std::string("must not be empty") : std::string(); }, "", "NONEMPTY");
  return validator;
}
void SetUpAllCommands(CLI::App& app, CommandResult& result);
// Sets up only `name` when it is a registered command (every launch pays for
// the CLI11 tables it builds, issue 6), else all of them (--help, typos).
void SetUpCommandsFor(CLI::App& app, CommandResult& result, const char* name);

}  // namespace cocoon::cli

// Usage (at namespace scope in a .cc file):
//   COCOON_REGISTER_COMMAND(check, SetUpCheckCommand);
#define COCOON_REGISTER_COMMAND(name, setup) \
  static const bool cocoon_registered_##name = ::cocoon::cli::RegisterCommand(#name, setup)
