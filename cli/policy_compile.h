// Every place a `cocoon` command needs the policy compiler, in one seam.
// Each executable links exactly one definition of these functions
// (docs/cli.md, "Two executables"):
//   - cocoon-full, which has every command, runs the compiler in process
//     (policy_compile_util.cc: front end, seccomp and plan back ends);
//   - cocoon, the launcher that serves warm-cache `enforce` and `run`
//     without the compiler linked in, replaces itself with cocoon-full and
//     the same command line (fast_path/full_cocoon.cc), which compiles,
//     fills the caches and runs. There these functions return only when that
//     exec fails.
// A command calls them before it starts anything that an exec would lose
// (a sandbox, an audit log, output); stdin already read as code is handed on
// (RememberConsumedStdin).
#pragma once

#include <optional>
#include <string>

#include "compiler/common/diagnostics.h"
#include "compiler/common/status.h"
#include "compiler/ir/policy_ir.h"
#include "enforcer/artifact_cache.h"

namespace cocoon::cli {

// A policy file's profile, compiled for the Linux enforcer (on an artifact
// cache miss). Policy mistakes come back as kInvalidArgument with the
// rendered diagnostics as the message.
Result<enforcer::CompiledLinuxArtifacts> CompilePolicyOnCacheMiss(const std::string& path, const std::string& profile);
// The same for the policy file at `path` whose bytes are `text` (read once,
// by the caller): includes and imports resolve as for the file.
Result<enforcer::CompiledLinuxArtifacts> CompilePolicyTextOnCacheMiss(const std::string& path, const std::string& text,
                                                                      const std::string& profile);

// A policy file's profile, checked into IR with the back ends' rule checks
// (`cocoon run`'s base on a summary-cache miss).
Result<ir::Policy> CheckPolicyFile(const std::string& path, const std::string& profile);

// Policy text (`cocoon run`'s generated policy), checked into IR; warnings,
// when asked for, are rendered into *warnings.
Result<ir::Policy> CheckPolicyText(const std::string& display_name, const std::string& text,
                                   const std::string& profile, std::string* warnings);

// A runtime preset file's profile, checked into IR; mistakes go to diagnostics.
std::optional<ir::Policy> CheckRuntimePresetFile(const std::string& path, const std::string& name,
                                                 Diagnostics& diagnostics);

// `cocoon explain`'s rendering of a checked policy.
Result<std::string> ExplainCheckedPolicy(const ir::Policy& policy);

// Stdin a command has read as code: cocoon-full gets the same bytes as its
// stdin when the launcher hands over after reading it.
void RememberConsumedStdin(const std::string& bytes);

}  // namespace cocoon::cli
