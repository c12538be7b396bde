// `cocoon compile POLICY --target T -o DIR`: checks the policy, compiles it
// for each target and writes the artifacts plus manifest.json atomically.
// Exit 0 compiled, 1 policy errors or a target that cannot be compiled, 2 usage.
#include <algorithm>
#include <iostream>

#include "cli/command_registry.h"
#include "cli/frontend_util.h"
#include "compiler/driver/driver.h"
#include "compiler/frontend/frontend.h"

namespace cocoon::cli {
namespace {

struct CompileOptions {
  std::string policy;
  std::string profile;
  std::vector<std::string> include_dirs;
  std::string target = "all";
  std::string out_dir;
  bool quiet = false;
};

int RunCompile(const CompileOptions& options) {
  auto targets = driver::ParseTargets(options.target);
  if (!targets.ok()) {
    std::cerr << "cocoon compile: " << targets.status().message() << "\n";
    return 2;
  }
  frontend::FrontendOptions frontend_options;
  frontend_options.search_paths = options.include_dirs;
  bool rule_form = std::any_of(targets->begin(), targets->end(), [](driver::Target t) {
    return t == driver::Target::kOci || t == driver::Target::kKubernetes;
  });
  AddBackEndChecks(frontend_options, rule_form ? BackEndChecks::kLinuxFilterAndRuleForm : BackEndChecks::kLinuxFilter);
  Diagnostics diagnostics(frontend_options.diagnostics);
  auto policy = frontend::CompilePolicyFile(options.policy, options.profile, frontend_options, diagnostics);
  std::cerr << diagnostics.Render();
  if (!policy) return 1;
  auto output = driver::CompileTargets(*policy, *targets);
  if (!output.ok()) {
    std::cerr << "cocoon compile: " << output.status().message() << "\n";
    return 1;
  }
  for (const std::string& warning : output->warnings) std::cerr << "warning: " << warning << "\n";
  Status written = driver::WriteCompiledDir(*output, options.out_dir);
  if (!written.ok()) {
    std::cerr << "cocoon compile: " << written.message() << "\n";
    return 1;
  }
  if (!options.quiet) {
    std::cout << "compiled profile " << policy->name << " -> " << options.out_dir << "\n";
    for (const auto& entry : output->manifest.artifacts) {
      std::cout << "  " << entry.sha256.substr(0, 16) << "  " << entry.path << " (" << entry.target << ", "
                << entry.size << " bytes)\n";
    }
  }
  return 0;
}

void SetUpCompileCommand(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<CompileOptions>();
  CLI::App* cmd = app.add_subcommand("compile", "Compile a policy to per-OS sandbox artifacts");
  cmd->footer(
      "Targets: linux (seccomp BPF + launch plan), macos (SBPL + params), windows\n"
      "(Job Object/ACL JSON), oci (config.json), k8s (seccomp profile, Pod,\n"
      "NetworkPolicy), all, or a comma-separated list. DIR receives the artifacts\n"
      "and manifest.json (SHA-256 of each) in one atomic step; an existing DIR is\n"
      "replaced only if it is empty or a previous compile output.\n\n"
      "Exit status: 0 compiled, 1 policy errors or compile failure, 2 usage error.\n\n"
      "Examples:\n"
      "  cocoon compile policies/strict.cocoon --target all -o out/strict\n"
      "  cocoon compile my.cocoon --profile build --target linux,oci -o out/build");
  cmd->add_option("POLICY", options->policy, "Policy file (.cocoon)")->required();
  cmd->add_option("--profile", options->profile, "Profile to compile (default: the file's only or same-named one)");
  cmd->add_option("-I,--include-dir", options->include_dirs, "Extra directory searched by `import`");
  cmd->add_option("-t,--target", options->target, "linux|macos|windows|oci|k8s|all, or a comma-separated list");
  cmd->add_option("-o,--out", options->out_dir, "Output directory")->required();
  cmd->add_flag("-q,--quiet", options->quiet, "No summary on success (warnings still go to stderr)");
  cmd->callback([options, &result] { result.exit_code = RunCompile(*options); });
}

}  // namespace

COCOON_REGISTER_COMMAND(compile, SetUpCompileCommand);

}  // namespace cocoon::cli
