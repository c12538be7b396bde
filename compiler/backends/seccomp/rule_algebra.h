// Boolean algebra over seccomp argument conditions, used to make a rule set
// conflict-free before it reaches libseccomp.
//
// Why: libseccomp 2.5.4 (src/db.c) does not give overlapping rules of one
// syscall a defined precedence. Measured on this machine:
//  - an unconditional rule silently swallows every conditional rule of the
//    same syscall, whatever the actions (so `allow clone` would erase the
//    CLONE_NEW* guard);
//  - two rules with equal conditions and different actions fail with -EEXIST;
//  - two comparisons on the same argument in one rule fail with -EINVAL;
//  - a rule whose action equals the default action fails with -EACCES.
// So Cocoon resolves overlaps itself: a rule is restricted to the part of the
// argument space that no more restrictive rule claims ("subtraction"), and
// every rule keeps at most one comparison per argument.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/ir/policy_ir.h"

namespace cocoon::backends {

// The conditions of one rule, ANDed; at most one per argument once normalized.
using Conjunction = std::vector<ir::ArgCondition>;

enum class MergeOutcome {
  kMerged,             // one condition (or none) expresses the conjunction
  kEmpty,              // the conjunction matches nothing
  kUnrepresentable,    // true but not expressible as one libseccomp comparison
};

struct MergeResult {
  MergeOutcome outcome = MergeOutcome::kMerged;
  std::optional<ir::ArgCondition> condition;  // set when kMerged (nullopt = always true)
};

// Does `value` satisfy `condition`? (64-bit unsigned, as libseccomp compares.)
bool ConditionMatches(const ir::ArgCondition& condition, uint64_t value);
bool ConjunctionMatches(const Conjunction& conjunction, const uint64_t args[6]);

// a AND b for two conditions on the same argument.
MergeResult MergeSameArg(const ir::ArgCondition& a, const ir::ArgCondition& b);

// Merges comparisons on the same argument and sorts by argument. nullopt with
// `outcome` kEmpty (matches nothing) or kUnrepresentable.
std::optional<Conjunction> Normalize(const Conjunction& conjunction, MergeOutcome* outcome);

// NOT condition, as a disjunction of single conditions (a masked compare
// becomes one condition per mask bit). Empty = the negation is never true.
std::vector<ir::ArgCondition> Negate(const ir::ArgCondition& condition);

// keep AND NOT remove, as a list of normalized conjunctions (a disjunction).
// nullopt when some piece cannot be expressed (the caller reports it).
std::optional<std::vector<Conjunction>> Subtract(const Conjunction& keep, const Conjunction& remove);

}  // namespace cocoon::backends
