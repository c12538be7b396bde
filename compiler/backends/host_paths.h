// Sandbox paths as host paths, for the back ends without a mount namespace.
//
// Why: on Linux a policy path is where the sandbox sees it (the launch plan
// binds `readonly /opt/app as /app` at /app). macOS Seatbelt and Windows ACLs
// have no mounts: the process sees the host's own file system, so a rule on
// the sandbox path /app/secrets names a path that usually does not exist
// there and protects nothing, while /opt/app/secrets stays readable. Those
// back ends write their rules on the host path instead.
#pragma once

#include <string>

#include "compiler/ir/policy_ir.h"

namespace cocoon::backends {

// `sandbox_path` (canonical, absolute) on the host: below the innermost bind
// mount that holds it (target == it or a parent), the mount's source plus
// the rest of the path. Unchanged when no bind mount holds it, when the
// innermost mount is a tmpfs (no host counterpart), or when the bind is not
// aliased (source == target).
std::string HostPathOf(const ir::Filesystem& filesystem, const std::string& sandbox_path);

}  // namespace cocoon::backends
