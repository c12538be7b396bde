// `cocoon check FILE...`: reports every mistake in the policies, the way a
// compiler does. Exit 0 when clean (warnings allowed), 1 on errors, 2 on usage.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/command_registry.h"
#include "cli/frontend_util.h"
#include "compiler/frontend/frontend.h"

namespace cocoon::cli {
namespace {

struct CheckOptions {
  std::vector<std::string> files;
  std::vector<std::string> include_dirs;
  std::string profile;
  std::string format = "text";
  size_t max_errors = 50;
};

int RunCheck(const CheckOptions& options) {
  frontend::FrontendOptions frontend_options;
  frontend_options.search_paths = options.include_dirs;
  frontend_options.diagnostics.max_errors = options.max_errors;
  AddBackEndChecks(frontend_options, BackEndChecks::kBuiltLinuxFilter);
  bool clean = true;
  nlohmann::json reports = nlohmann::json::array();
  for (const std::string& file : options.files) {
    Diagnostics diagnostics(frontend_options.diagnostics);
    bool ok = frontend::CheckPolicyFile(file, options.profile, frontend_options, diagnostics);
    clean = clean && ok;
    if (options.format == "json") {
      nlohmann::json report = nlohmann::json::parse(diagnostics.RenderJson(), nullptr, false);
      report["file"] = file;
      report["ok"] = ok;
      reports.push_back(std::move(report));
      continue;
    }
    std::cerr << diagnostics.Render();
    // Every error found, not only the ones shown under --max-errors.
    std::cout << file << ": " << (ok ? "ok" : "FAILED") << " ("
              << diagnostics.error_count() + diagnostics.suppressed() << " error(s), ";
    if (diagnostics.saturated()) std::cout << diagnostics.error_count() << " shown, ";
    std::cout << diagnostics.warning_count() << " warning(s))\n";
  }
  if (options.format == "json") {
    nlohmann::json doc{{"ok", clean}, {"files", std::move(reports)}};
    std::cout << doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }
  return clean ? 0 : 1;
}

void SetUpCheckCommand(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<CheckOptions>();
  CLI::App* cmd = app.add_subcommand("check", "Check policy files for mistakes, like a compiler");
  cmd->footer(
      "Every profile in each FILE is checked with its includes, imports and parents.\n"
      "Diagnostics show file:line:col, the source line and a caret; all of them are\n"
      "reported, not only the first. The Linux seccomp filter is built and verified\n"
      "too, so a rule set libseccomp cannot compile correctly is an error at its rule.\n\n"
      "Exit status: 0 clean (warnings allowed), 1 errors found (a file that cannot\n"
      "be read is one; the other files are still checked), 2 usage error.\n\n"
      "Examples:\n"
      "  cocoon check policies/strict.cocoon\n"
      "  cocoon check --format json -I ./policies my.cocoon");
  // No ExistingFile check: a file that cannot be read is reported like any
  // other mistake (exit 1), and the files after it are still checked.
  cmd->add_option("FILE", options->files, "Policy files (.cocoon)")->required();
  cmd->add_option("-I,--include-dir", options->include_dirs,
                  "Extra directory searched by `import` (before the shipped policies/)");
  cmd->add_option("--profile", options->profile, "Check only this profile (default: every profile in the file)");
  cmd->add_option("--format", options->format, "Output: text (human) or json (editors, CI)")
      ->check(CLI::IsMember({"text", "json"}));
  cmd->add_option("--max-errors", options->max_errors, "Stop reporting after this many errors")
      ->check(CLI::Range(1, 10000));
  cmd->callback([options, &result] { result.exit_code = RunCheck(*options); });
}

}  // namespace

COCOON_REGISTER_COMMAND(check, SetUpCheckCommand);

}  // namespace cocoon::cli
