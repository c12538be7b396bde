#include "compiler/backends/seccomp/rule_algebra.h"

#include <algorithm>
#include <limits>
#include <tuple>

namespace cocoon::backends {
namespace {

using ir::ArgCondition;
using ir::CompareOp;

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

ArgCondition Make(uint8_t arg, CompareOp op, uint64_t value, uint64_t mask = 0) {
  return ArgCondition{arg, op, value, mask};
}

// A closed interval [lo, hi]; the range operators and Eq are intervals.
struct Interval {
  uint64_t lo = 0;
  uint64_t hi = kMax;
  bool empty = false;
};

std::optional<Interval> AsInterval(const ArgCondition& c) {
  switch (c.op) {
    case CompareOp::kEq: return Interval{c.value, c.value};
    case CompareOp::kLt: return c.value == 0 ? Interval{1, 0, true} : Interval{0, c.value - 1};
    case CompareOp::kLe: return Interval{0, c.value};
    case CompareOp::kGt: return c.value == kMax ? Interval{1, 0, true} : Interval{c.value + 1, kMax};
    case CompareOp::kGe: return Interval{c.value, kMax};
    case CompareOp::kMaskedEq:
      if (c.mask == kMax) return Interval{c.value, c.value};
      return std::nullopt;
    case CompareOp::kNe: return std::nullopt;
  }
  return std::nullopt;
}

MergeResult FromInterval(uint8_t arg, Interval in) {
  if (in.empty || in.lo > in.hi) return {MergeOutcome::kEmpty, std::nullopt};
  if (in.lo == 0 && in.hi == kMax) return {MergeOutcome::kMerged, std::nullopt};
  if (in.lo == in.hi) return {MergeOutcome::kMerged, Make(arg, CompareOp::kEq, in.lo)};
  if (in.lo == 0) return {MergeOutcome::kMerged, Make(arg, CompareOp::kLe, in.hi)};
  if (in.hi == kMax) return {MergeOutcome::kMerged, Make(arg, CompareOp::kGe, in.lo)};
  return {MergeOutcome::kUnrepresentable, std::nullopt};
}

// Ne(x) AND interval: only expressible when x is outside or at an end.
MergeResult NeAndInterval(uint8_t arg, uint64_t x, Interval in) {
  if (in.empty || x < in.lo || x > in.hi) return FromInterval(arg, in);
  if (in.lo == in.hi) return {MergeOutcome::kEmpty, std::nullopt};
  if (x == in.lo) return FromInterval(arg, Interval{in.lo + 1, in.hi});
  if (x == in.hi) return FromInterval(arg, Interval{in.lo, in.hi - 1});
  if (in.lo == 0 && in.hi == kMax) return {MergeOutcome::kMerged, Make(arg, CompareOp::kNe, x)};
  return {MergeOutcome::kUnrepresentable, std::nullopt};
}

bool Impossible(const ArgCondition& c) {
  return c.op == CompareOp::kMaskedEq && (c.value & ~c.mask) != 0;
}

bool Trivial(const ArgCondition& c) {
  return (c.op == CompareOp::kMaskedEq && c.mask == 0 && c.value == 0) ||
         (c.op == CompareOp::kGe && c.value == 0) || (c.op == CompareOp::kLe && c.value == kMax);
}

}  // namespace

bool ConditionMatches(const ArgCondition& c, uint64_t v) {
  switch (c.op) {
    case CompareOp::kEq: return v == c.value;
    case CompareOp::kNe: return v != c.value;
    case CompareOp::kLt: return v < c.value;
    case CompareOp::kLe: return v <= c.value;
    case CompareOp::kGt: return v > c.value;
    case CompareOp::kGe: return v >= c.value;
    case CompareOp::kMaskedEq: return (v & c.mask) == c.value;
  }
  return false;
}

bool ConjunctionMatches(const Conjunction& conjunction, const uint64_t args[6]) {
  return std::all_of(conjunction.begin(), conjunction.end(),
                     [&](const ArgCondition& c) { return c.arg < 6 && ConditionMatches(c, args[c.arg]); });
}

MergeResult MergeSameArg(const ArgCondition& a, const ArgCondition& b) {
  if (Impossible(a) || Impossible(b)) return {MergeOutcome::kEmpty, std::nullopt};
  if (a == b) return {MergeOutcome::kMerged, a};
  // An equality pins the value: the conjunction is that value or nothing.
  if (a.op == CompareOp::kEq || b.op == CompareOp::kEq) {
    const ArgCondition& eq = a.op == CompareOp::kEq ? a : b;
    const ArgCondition& other = a.op == CompareOp::kEq ? b : a;
    if (ConditionMatches(other, eq.value)) return {MergeOutcome::kMerged, eq};
    return {MergeOutcome::kEmpty, std::nullopt};
  }
  if (a.op == CompareOp::kMaskedEq && b.op == CompareOp::kMaskedEq) {
    if (((a.value ^ b.value) & a.mask & b.mask) != 0) return {MergeOutcome::kEmpty, std::nullopt};
    return {MergeOutcome::kMerged, Make(a.arg, CompareOp::kMaskedEq, a.value | b.value, a.mask | b.mask)};
  }
  if (a.op == CompareOp::kMaskedEq || b.op == CompareOp::kMaskedEq) {
    const ArgCondition& masked = a.op == CompareOp::kMaskedEq ? a : b;
    const ArgCondition& other = a.op == CompareOp::kMaskedEq ? b : a;
    // Ne(x) where x cannot match the masked compare adds nothing.
    if (other.op == CompareOp::kNe && !ConditionMatches(masked, other.value)) {
      return {MergeOutcome::kMerged, masked};
    }
    return {MergeOutcome::kUnrepresentable, std::nullopt};
  }
  if (a.op == CompareOp::kNe && b.op == CompareOp::kNe) return {MergeOutcome::kUnrepresentable, std::nullopt};
  if (a.op == CompareOp::kNe) return NeAndInterval(a.arg, a.value, *AsInterval(b));
  if (b.op == CompareOp::kNe) return NeAndInterval(a.arg, b.value, *AsInterval(a));
  Interval ia = *AsInterval(a);
  Interval ib = *AsInterval(b);
  return FromInterval(a.arg, Interval{std::max(ia.lo, ib.lo), std::min(ia.hi, ib.hi), ia.empty || ib.empty});
}

std::optional<Conjunction> Normalize(const Conjunction& conjunction, MergeOutcome* outcome) {
  *outcome = MergeOutcome::kMerged;
  std::vector<std::optional<ArgCondition>> per_arg(6);
  for (const ArgCondition& c : conjunction) {
    if (c.arg >= 6 || Impossible(c)) {
      *outcome = MergeOutcome::kEmpty;
      return std::nullopt;
    }
    if (Trivial(c)) continue;
    if (!per_arg[c.arg]) {
      per_arg[c.arg] = c;
      continue;
    }
    MergeResult merged = MergeSameArg(*per_arg[c.arg], c);
    if (merged.outcome != MergeOutcome::kMerged) {
      *outcome = merged.outcome;
      return std::nullopt;
    }
    per_arg[c.arg] = merged.condition;
  }
  Conjunction out;
  for (const auto& c : per_arg) {
    if (c) out.push_back(*c);
  }
  return out;
}

std::vector<ArgCondition> Negate(const ArgCondition& c) {
  switch (c.op) {
    case CompareOp::kEq: return {Make(c.arg, CompareOp::kNe, c.value)};
    case CompareOp::kNe: return {Make(c.arg, CompareOp::kEq, c.value)};
    case CompareOp::kLt: return {Make(c.arg, CompareOp::kGe, c.value)};
    case CompareOp::kLe: return {Make(c.arg, CompareOp::kGt, c.value)};
    case CompareOp::kGt: return {Make(c.arg, CompareOp::kLe, c.value)};
    case CompareOp::kGe: return {Make(c.arg, CompareOp::kLt, c.value)};
    case CompareOp::kMaskedEq: {
      if (Impossible(c)) return {Make(c.arg, CompareOp::kMaskedEq, 0, 0)};  // always true
      // (a & m) != v  <=>  some bit b of m differs from v's bit b.
      std::vector<ArgCondition> out;
      for (int bit = 0; bit < 64; ++bit) {
        const uint64_t b = uint64_t{1} << bit;
        if ((c.mask & b) != 0) out.push_back(Make(c.arg, CompareOp::kMaskedEq, (c.value & b) ^ b, b));
      }
      return out;
    }
  }
  return {};
}

std::optional<std::vector<Conjunction>> Subtract(const Conjunction& keep, const Conjunction& remove) {
  // Disjoint already? Then nothing to take away.
  Conjunction both = keep;
  both.insert(both.end(), remove.begin(), remove.end());
  MergeOutcome outcome;
  if (!Normalize(both, &outcome) && outcome == MergeOutcome::kEmpty) return std::vector<Conjunction>{keep};
  // keep AND NOT(r1 AND r2 ...) = OR_i (keep AND NOT r_i).
  std::vector<Conjunction> out;
  for (const ArgCondition& r : remove) {
    for (const ArgCondition& negated : Negate(r)) {
      Conjunction piece = keep;
      piece.push_back(negated);
      std::optional<Conjunction> normalized = Normalize(piece, &outcome);
      if (normalized) {
        if (std::find(out.begin(), out.end(), *normalized) == out.end()) out.push_back(*normalized);
      } else if (outcome == MergeOutcome::kUnrepresentable) {
        return std::nullopt;
      }
    }
  }
  return out;
}

}  // namespace cocoon::backends
