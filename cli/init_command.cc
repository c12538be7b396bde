// `cocoon init [DIR]`: a new user's first step. Writes DIR/cocoon.cocoon, a
// commented starter policy that extends `strict`, and an empty DIR/work/.
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "cli/command_registry.h"
#include "compiler/frontend/frontend.h"

namespace cocoon::cli {
namespace {

constexpr const char kStarterPolicy[] = R"(# Cocoon policy for this project. Check it with:   cocoon check cocoon.cocoon
# See what it allows, and where each setting comes from:   cocoon explain cocoon.cocoon
# Reference: docs/language.md

# The shipped `strict` profile: no network, read-only system directories, a
# staged /work, 5 s, 128 MiB, 32 processes, dangerous syscalls denied.
import "strict"

profile project extends strict {
  description "What this project's untrusted code may do"

  # Settings you loosen on purpose are listed here, so a reviewer sees them:
  # relaxes limits network

  # network off                  # the default from strict; or:
  # network allow { pypi.org:443 files.pythonhosted.org:443 }

  filesystem {
    # Files copied into the sandbox's work dir (/work) before each run.
    # copy "data/input.csv" to "input.csv"
    # More host directories, read-only:
    # readonly /opt/tools
  }

  limits {
    # Raising any of these needs `relaxes limits` above.
    # wall_time 5s
    # memory 128MiB
    # processes 32
  }

  syscalls {
    # Groups come from the table in docs/language.md, for example:
    # allow @memlock
  }

  environment {
    # set MY_SETTING "value"
    # pass TERM
  }
}
)";

int RunInit(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    std::cerr << "ERROR: cannot create " << dir << ": " << ec.message() << "\n";
    return 1;
  }
  fs::path policy = fs::path(dir) / "cocoon.cocoon";
  if (fs::exists(policy, ec)) {
    std::cerr << "ERROR: " << policy.string() << " already exists; not overwriting it\n";
    return 1;
  }
  std::ofstream out(policy, std::ios::binary);
  out << kStarterPolicy;
  out.close();
  if (!out) {
    std::cerr << "ERROR: cannot write " << policy.string() << "\n";
    return 1;
  }
  fs::path work = fs::path(dir) / "work";
  fs::create_directories(work, ec);
  if (ec) {
    std::cerr << "ERROR: cannot create " << work.string() << ": " << ec.message() << "\n";
    return 1;
  }
  // The starter must itself check clean: a broken first step is the worst kind.
  Diagnostics diagnostics;
  if (!frontend::CheckPolicyFile(policy.string(), "", {}, diagnostics)) {
    std::cerr << diagnostics.Render() << "ERROR: the starter policy does not check (is policies/ reachable? "
              << "set COCOON_POLICY_PATH)\n";
    return 1;
  }
  std::cout << "wrote " << policy.string() << " and " << work.string() << "/\n"
            << "next: cocoon check " << policy.string() << "\n"
            << "      cocoon explain " << policy.string() << "\n";
  return 0;
}

void SetUpInitCommand(CLI::App& app, CommandResult& result) {
  auto dir = std::make_shared<std::string>(".");
  CLI::App* cmd = app.add_subcommand("init", "Write a starter policy (extends strict) and an empty work dir");
  cmd->footer(
      "Creates DIR/cocoon.cocoon, a commented policy that extends the shipped\n"
      "`strict` profile, and an empty DIR/work/. An existing policy is never\n"
      "overwritten.\n\n"
      "Example:\n"
      "  cocoon init my-sandbox && cocoon explain my-sandbox/cocoon.cocoon");
  cmd->add_option("DIR", *dir, "Directory to initialise (default: the current one)");
  cmd->callback([dir, &result] { result.exit_code = RunInit(*dir); });
}

}  // namespace

COCOON_REGISTER_COMMAND(init, SetUpInitCommand);

}  // namespace cocoon::cli
