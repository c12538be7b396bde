// `cocoon explain FILE [--profile NAME]`: prints the resolved, effective policy
// in plain words, with where every setting came from (inherited or not).
#include <iostream>

#include <nlohmann/json.hpp>

#include "cli/command_registry.h"
#include "cli/frontend_util.h"
#include "compiler/backends/artifact.h"
#include "compiler/frontend/frontend.h"

namespace cocoon::cli {
namespace {

struct ExplainOptions {
  std::string file;
  std::string profile;
  std::vector<std::string> include_dirs;
  std::string target;  // "" or "linux": append the back end's statistics
};

// `--target linux`: compiles the seccomp filter and reports its size and the
// worst-case number of BPF instructions the kernel runs per syscall, from the
// statistics the back end records in linux.seccomp.json.
int AppendLinuxStats(const ir::Policy& policy) {
  Result<std::vector<backends::Artifact>> artifacts = backends::CompileSeccomp(policy);
  if (!artifacts.ok()) {
    std::cerr << "error: compiling the seccomp filter: " << artifacts.status().message() << "\n";
    return 1;
  }
  for (const backends::Artifact& artifact : *artifacts) {
    if (artifact.path != "linux.seccomp.json") continue;
    nlohmann::json sidecar = nlohmann::json::parse(artifact.bytes, nullptr, false);
    if (sidecar.is_discarded() || !sidecar.contains("stats")) break;
    const nlohmann::json& stats = sidecar["stats"];
    std::cout << "\nLinux seccomp filter:\n"
              << "  BPF instructions:                       " << stats.value("instructions", 0) << "\n"
              << "  worst case executed, allowed syscall:   " << stats.value("worst_case_allow", 0) << "\n"
              << "  worst case executed, any syscall:       " << stats.value("worst_case_any", 0) << "\n"
              << "  libseccomp optimisation level chosen:   " << stats.value("optimize", 0) << "\n"
              << "  effective rules (prologue + policy):    " << sidecar.value("rules", 0) << "\n";
    for (const auto& warning : sidecar.value("warnings", nlohmann::json::array())) {
      std::cout << "  warning: " << warning.get<std::string>() << "\n";
    }
    return 0;
  }
  std::cerr << "error: the seccomp back end produced no statistics\n";
  return 1;
}

int RunExplain(const ExplainOptions& options) {
  frontend::FrontendOptions frontend_options;
  frontend_options.search_paths = options.include_dirs;
  AddBackEndChecks(frontend_options, BackEndChecks::kBuiltLinuxFilter);
  Diagnostics diagnostics(frontend_options.diagnostics);
  std::optional<ir::Policy> policy =
      frontend::CompilePolicyFile(options.file, options.profile, frontend_options, diagnostics);
  std::cerr << diagnostics.Render();
  if (!policy) return 1;
  std::cout << frontend::ExplainPolicy(*policy);
  if (options.target == "linux") return AppendLinuxStats(*policy);
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
  cmd->add_option("FILE", options->file, "Policy file (.cocoon)")->required();
  cmd->add_option("--profile", options->profile, "Profile to explain");
  cmd->add_option("-I,--include-dir", options->include_dirs, "Extra directory searched by `import`");
  cmd->add_option("--target", options->target, "Also print a back end's statistics (linux: BPF size and worst case)")
      ->check(CLI::IsMember({"linux"}));
  cmd->callback([options, &result] { result.exit_code = RunExplain(*options); });
}

}  // namespace

COCOON_REGISTER_COMMAND(explain, SetUpExplainCommand);

}  // namespace cocoon::cli
