// The compile driver behind `cocoon compile`: one checked ir::Policy ->
// the artifacts of every requested target, and their atomic write to a
// directory with manifest.json.
//
//   COCOON_ASSIGN_OR_RETURN(auto targets, driver::ParseTargets("all"));
//   COCOON_ASSIGN_OR_RETURN(auto output, driver::CompileTargets(policy, targets));
//   COCOON_RETURN_IF_ERROR(driver::WriteCompiledDir(output, "out/strict"));
//   ... later, in the enforcer:
//   COCOON_ASSIGN_OR_RETURN(auto compiled, driver::LoadCompiledDir("out/strict"));
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/backends/artifact.h"
#include "compiler/common/status.h"
#include "compiler/driver/manifest.h"
#include "compiler/ir/policy_ir.h"

namespace cocoon::driver {

enum class Target { kLinux, kMacos, kWindows, kOci, kKubernetes };

std::string_view TargetName(Target target);
// "linux", "macos", "windows", "oci", "k8s", "all", or a comma-separated list.
Result<std::vector<Target>> ParseTargets(std::string_view spec);
// Every target, in manifest order.
std::vector<Target> AllTargets();

struct CompileOutput {
  std::vector<backends::Artifact> artifacts;  // every target's files, in target order
  std::vector<std::string> warnings;          // de-duplicated, in order
  Manifest manifest;                          // describes `artifacts`
};

// Fails if any requested target fails or is not part of this build
// ("target linux unavailable: ..."): a partial result is never returned.
// When linux and another target are requested, linux (libseccomp's filter
// build and exports, the bulk of a compile) runs on a second thread, joined
// before returning; the output is the same bytes as target by target, and a
// failure is reported as the first failing target in `targets` order.
Result<CompileOutput> CompileTargets(const ir::Policy& policy, const std::vector<Target>& targets);

// Writes every artifact and manifest.json into a fresh temporary directory
// next to `out_dir` (fsynced), then swaps it into place with one rename.
// `out_dir` may be missing, empty, or a previous compile output (it has a
// manifest.json); anything else is refused rather than replaced. On any error
// the temporary directory is removed and `out_dir` is left as it was.
Status WriteCompiledDir(const CompileOutput& output, const std::string& out_dir);

}  // namespace cocoon::driver
