// AST -> IR. The checker resolves a profile's `extends` chain over a loaded
// Program, applies each profile in the chain from the root-most ancestor down
// (scalars override, lists merge with the child winning per key), validates
// every statement, and produces the immutable ir::Policy. It reports every
// problem it finds (up to the Diagnostics cap), never only the first.
#pragma once

#include <memory>
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

namespace internal {
class AppliedAncestors;
}  // namespace internal

// What `cocoon check` shares across the profiles of a file: the `extends`
// chains resolved so far (each walked once, not once per profile below it),
// and the policy each recently used ancestor leaves once its chain is
// applied, with what applying it reported. A file of thousands of children
// of `strict` then applies strict's ~400 rules, mounts and limits once, not
// once per child. Holds the Program's profiles by address: one per Program.
class CheckSession {
 public:
  explicit CheckSession(const Program& program);
  ~CheckSession();
  CheckSession(const CheckSession&) = delete;
  CheckSession& operator=(const CheckSession&) = delete;

  LineageResolver& lineages() { return lineages_; }
  internal::AppliedAncestors& ancestors() { return *ancestors_; }

  // The profiles checked in this session with no syscalls section in their
  // whole chain, by the chain's top-most profile (where one section would
  // serve them all). Reported once per top by ReportMissingSyscalls.
  struct MissingSyscalls {
    ProfileRef top;
    std::vector<ProfileRef> profiles;  // in the order they were checked
  };
  std::vector<MissingSyscalls>& missing_syscalls() { return missing_syscalls_; }

  // One warning per top-most profile above: the profile's own when it is
  // the only one, else one naming how many profiles and the first few.
  void ReportMissingSyscalls(Diagnostics& diagnostics) const;

 private:
  LineageResolver lineages_;
  std::unique_ptr<internal::AppliedAncestors> ancestors_;
  std::vector<MissingSyscalls> missing_syscalls_;
};

// Same, within `session`: the result and the diagnostics are those of the
// overloads above.
std::optional<ir::Policy> CheckProfile(const Program& program, const ProfileRef& profile, CheckSession& session,
                                       Diagnostics& diagnostics, const SyscallRuleCheck& rule_check = {});

}  // namespace cocoon::frontend
