#include "cli/command_registry.h"

#include <map>

namespace cocoon::cli {
namespace {

std::map<std::string, CommandSetup>& Registry() {
  static auto* registry = new std::map<std::string, CommandSetup>();
  return *registry;
}

}  // namespace

bool RegisterCommand(std::string name, CommandSetup setup) {
  Registry().emplace(std::move(name), std::move(setup));
  return true;
}

void SetUpAllCommands(CLI::App& app, CommandResult& result) {
  for (auto& [name, setup] : Registry()) setup(app, result);
}

void SetUpCommandsFor(CLI::App& app, CommandResult& result, const char* name) {
  auto it = name != nullptr ? Registry().find(name) : Registry().end();
  if (it == Registry().end()) return SetUpAllCommands(app, result);
  it->second(app, result);
}

}  // namespace cocoon::cli
