// The policy's environment section for the back ends whose launcher builds
// the sandbox's environment itself: macOS (macos.params.json) and Windows
// (windows.json). On Linux the launch plan carries it and the enforcer
// builds envp; without it in those artifacts, the documented sandbox-exec
// invocation handed the caller's whole environment (tokens, keys) to the
// sandbox although the policy said `clear`, and a Windows launcher had no
// way to know the policy's `set` variables.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/common/status.h"
#include "compiler/ir/policy_ir.h"

namespace cocoon::backends {

// {"clear": bool, "set": {NAME: value}, "pass": [NAME], "unset": [NAME]}.
nlohmann::ordered_json EnvironmentPlanJson(const ir::Environment& environment);
Result<ir::Environment> ParseEnvironmentPlan(const nlohmann::ordered_json& json);

// The sandbox's whole environment ("NAME=value" entries, sorted by name)
// from the plan and the caller's own: with `clear`, only the passed names
// the caller has and the set ones; otherwise the caller's minus `unset`,
// then `set` on top. A set name wins over a passed one.
std::vector<std::string> SandboxEnvironment(const ir::Environment& environment,
                                            const std::vector<std::string>& caller);

}  // namespace cocoon::backends
