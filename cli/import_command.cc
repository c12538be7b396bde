// `cocoon import docker-seccomp FILE.json`: prints a .cocoon policy that is
// equivalent to a Docker/OCI seccomp profile, resolved for one architecture
// and capability set. Exit 0 printed, 1 not a valid profile, 2 usage.
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/command_registry.h"
#include "compiler/backends/oci/docker_seccomp_import.h"

namespace cocoon::cli {
namespace {

struct ImportOptions {
  std::string file;
  std::string profile_name = "imported";
  std::string arch = "x86_64";
  std::vector<std::string> capabilities;
  std::string out;
};

int RunImportDockerSeccomp(const ImportOptions& options) {
  std::ifstream in(options.file, std::ios::binary);
  if (!in) {
    std::cerr << "cocoon import: cannot read " << options.file << "\n";
    return 1;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  backends::oci::DockerImportOptions import_options;
  import_options.profile_name = options.profile_name;
  import_options.source_name = options.file.substr(options.file.find_last_of('/') + 1);
  import_options.capabilities = options.capabilities;
  const std::map<std::string, ir::Arch> arches = {
      {"x86_64", ir::Arch::kX86_64}, {"aarch64", ir::Arch::kAarch64}, {"x86", ir::Arch::kX86}, {"x32", ir::Arch::kX32}};
  import_options.arch = arches.at(options.arch);
  auto text = backends::oci::ImportDockerSeccomp(buffer.str(), import_options);
  if (!text.ok()) {
    std::cerr << "cocoon import: " << options.file << ": " << text.status().message() << "\n";
    return 1;
  }
  if (options.out.empty()) {
    std::cout << *text;
    return 0;
  }
  std::ofstream out(options.out, std::ios::binary | std::ios::trunc);
  out << *text;
  if (!out.flush()) {
    std::cerr << "cocoon import: cannot write " << options.out << "\n";
    return 1;
  }
  return 0;
}

void SetUpImportCommand(CLI::App& app, CommandResult& result) {
  CLI::App* cmd = app.add_subcommand("import", "Convert other sandbox formats to .cocoon policies");
  cmd->require_subcommand(1);
  auto options = std::make_shared<ImportOptions>();
  CLI::App* docker = cmd->add_subcommand("docker-seccomp", "Convert a Docker/OCI seccomp profile (JSON)");
  docker->footer(
      "Docker's archMap, includes/excludes (arches, caps), args, errnoRet and\n"
      "defaultErrnoRet are resolved for one architecture and capability set, as\n"
      "Docker does when a container starts. The result passes `cocoon check`.\n\n"
      "Example:\n"
      "  cocoon import docker-seccomp moby-default.json --name docker_default > docker.cocoon");
  docker->add_option("FILE", options->file, "Seccomp profile (JSON)")->required();
  docker->add_option("--name", options->profile_name, "Name of the generated profile");
  docker->add_option("--arch", options->arch, "Architecture to resolve for")
      ->check(CLI::IsMember({"x86_64", "aarch64", "x86", "x32"}));
  docker->add_option("--cap", options->capabilities, "A capability the container would hold (repeatable)");
  docker->add_option("-o,--out", options->out, "Write the policy here instead of stdout");
  docker->callback([options, &result] { result.exit_code = RunImportDockerSeccomp(*options); });
}

}  // namespace

COCOON_REGISTER_COMMAND(import, SetUpImportCommand);

}  // namespace cocoon::cli
