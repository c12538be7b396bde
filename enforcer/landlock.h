// Landlock (issue 4, step 3): filesystem access rights as defence in depth
// behind the mount tree. The parent picks the best ABI the kernel offers and
// computes access masks; the child adds one rule per plan path after
// pivot_root (so rules are on the sandbox's own identity mounts) and restricts
// itself just before seccomp.
#pragma once

#include <cstdint>

#include "compiler/backends/plan/launch_plan.h"

namespace cocoon::enforcer {

// landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION); 0 when
// Landlock is unsupported or disabled. Cached after the first call.
int LandlockAbi();

// Every filesystem right the ABI knows (what the ruleset handles).
uint64_t LandlockHandledFs(int abi);
// Scopes (ABI 6+): abstract unix sockets and signals stay inside the domain.
uint64_t LandlockScoped(int abi);
// The rights one rule grants. Rules on files (devices) only take file rights.
uint64_t LandlockRuleAccess(backends::LandlockAccess access, int abi, bool is_directory);

}  // namespace cocoon::enforcer
