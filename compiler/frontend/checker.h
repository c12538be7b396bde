// AST -> IR. The checker resolves a profile's `extends` chain over a loaded
// Program, applies each profile in the chain from the root-most ancestor down
// (scalars override, lists merge with the child winning per key), validates
// every statement, and produces the immutable ir::Policy. It reports every
// problem it finds (up to the Diagnostics cap), never only the first.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/common/diagnostics.h"
#include "compiler/frontend/frontend.h"  // SyscallRuleCheck
#include "compiler/frontend/lineage.h"
#include "compiler/frontend/loader.h"
#include "compiler/ir/policy_ir.h"

namespace cocoon::frontend {

// Picks the profile to compile from the root file: `requested` when given,
// else the file's only profile, else the one named like the file's stem.
// Reports an error listing the choices when none fits.
std::optional<std::string> SelectProfile(const Program& program, const std::string& requested,
                                         Diagnostics& diagnostics);

// Compiles one profile of the program. nullopt when it has errors, including
// the problems `rule_check` (when set) finds in its syscall rules.
std::optional<ir::Policy> CheckProfile(const Program& program, const std::string& profile,
                                       Diagnostics& diagnostics, const SyscallRuleCheck& rule_check = {});

// Same, for one definition of a profile: a redefinition (Program::
// redefinitions), which no name reaches, is checked this way.
std::optional<ir::Policy> CheckProfile(const Program& program, const ProfileRef& profile,
                                       Diagnostics& diagnostics, const SyscallRuleCheck& rule_check = {});

// Same, resolving `extends` through `lineages`, which remembers every chain
// it resolves: `cocoon check` shares one across the profiles of a file, so
// that a chain is walked once, not once per profile below it.
std::optional<ir::Policy> CheckProfile(const Program& program, const ProfileRef& profile, LineageResolver& lineages,
                                       Diagnostics& diagnostics, const SyscallRuleCheck& rule_check = {});

}  // namespace cocoon::frontend
