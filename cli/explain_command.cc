// `cocoon explain FILE [--profile NAME]`: prints the resolved, effective policy
// in plain words, with where every setting came from (inherited or not).
#include <iostream>

#include "cli/command_registry.h"
#include "compiler/frontend/frontend.h"

namespace cocoon::cli {
namespace {

struct ExplainOptions {
  std::string file;
  std::string profile;
  std::vector<std::string> include_dirs;
  // Extension point: per-target statistics (`--target linux`: filter size,
  // mounts, ...) are appended after the front end's text, from the back ends.
  // Add the option and an Append<Target>Stats(policy) call in RunExplain.
};

int RunExplain(const ExplainOptions& options) {
  frontend::FrontendOptions frontend_options;
  frontend_options.search_paths = options.include_dirs;
  Diagnostics diagnostics(frontend_options.diagnostics);
  std::optional<ir::Policy> policy =
      frontend::CompilePolicyFile(options.file, options.profile, frontend_options, diagnostics);
  std::cerr << diagnostics.Render();
  if (!policy) return 1;
  std::cout << frontend::ExplainPolicy(*policy);
  return 0;
}

void SetUpExplainCommand(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<ExplainOptions>();
  CLI::App* cmd = app.add_subcommand("explain", "Print the effective policy in plain words");
  cmd->footer(
      "Resolves includes, imports and `extends`, then prints every setting the\n"
      "sandbox will apply, each with the profile, file and line it came from.\n"
      "The profile is --profile NAME, else the file's only profile, else the one\n"
      "named like the file.\n\n"
      "Example:\n"
      "  cocoon explain policies/build.cocoon");
  cmd->add_option("FILE", options->file, "Policy file (.cocoon)")->required()->check(CLI::ExistingFile);
  cmd->add_option("--profile", options->profile, "Profile to explain");
  cmd->add_option("-I,--include-dir", options->include_dirs, "Extra directory searched by `import`");
  cmd->callback([options, &result] { result.exit_code = RunExplain(*options); });
}

}  // namespace

COCOON_REGISTER_COMMAND(explain, SetUpExplainCommand);

}  // namespace cocoon::cli
