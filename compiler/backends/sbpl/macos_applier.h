// Applies a compiled macOS profile to the calling process (macOS only):
// rlimits from macos.params.json, the policy's environment (the process's
// own is replaced by SandboxEnvironment's, environment_plan.h, so the
// command it execs next starts with only that), then
// sandbox_init_with_parameters() with the profile text and the resolved
// parameters. After it returns OK the process (and everything it execs) is
// confined; there is no way back.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "compiler/common/status.h"

namespace cocoon::backends::sbpl {

struct MacosApplyRequest {
  std::string profile_text;  // macos.sb
  std::string params_json;   // macos.params.json
  // e.g. {"WORK_DIR": "/Users/me/runs/42"}; derived params follow their base.
  std::map<std::string, std::string> overrides;
};

// On other systems: UnimplementedError, never a silent success.
Status ApplyMacosSandbox(const MacosApplyRequest& request);

}  // namespace cocoon::backends::sbpl
