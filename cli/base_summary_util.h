// `cocoon run` (and pipeline, MCP) build their policy text on top of a base
// profile (strict, a runtime preset, --policy FILE). BuildQuickPolicy reads
// only a few facts of the compiled base: its name, runtime block, limits,
// network mode, cwd, mount targets and environment names. Compiling the base
// through the front end on every run cost ~3-4 ms of CPU (issue 6), so those
// facts are cached in the artifact cache (enforcer/artifact_cache.h): keyed
// by the compiler identity, the profile and the base file's path and bytes,
// with every file the base came from re-hashed on a hit (an edited import is
// a miss), under the same ownership/permission rules. A miss compiles as
// before; a corrupt or foreign entry is a miss, never an error.
#pragma once

#include <optional>
#include <string>

#include "compiler/common/status.h"
#include "compiler/ir/policy_ir.h"

namespace cocoon::cli {

// The summary as JSON, and back. FromJson returns a Policy with ONLY the
// summarised fields filled (plus source_files): not for enforcement.
std::string BaseSummaryToJson(const ir::Policy& policy);
Result<ir::Policy> BaseSummaryFromJson(const std::string& json);

// Cache lookups; `path` is the base file as the caller resolved it.
std::optional<ir::Policy> LookupBaseSummary(const std::string& path, const std::string& profile);
void StoreBaseSummary(const std::string& path, const std::string& profile, const ir::Policy& policy);

}  // namespace cocoon::cli
