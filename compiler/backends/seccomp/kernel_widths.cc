#include "compiler/backends/seccomp/kernel_widths.h"

#include <cstdio>

#include "compiler/backends/seccomp/rule_algebra.h"
#include "compiler/syscalls/syscall_arg_widths.h"

namespace cocoon::backends {
namespace {

using ir::ActionKind;
using ir::ArgCondition;
using ir::CompareOp;

// At most this many rules out of one policy rule (as the checker's own
// expansion limit for `in`/`or`/masked `!=`).
constexpr size_t kMaxFittedRules = 64;

enum class Fit {
  kWithin,     // allow: never more than the kernel reading allows
  kCover,      // kill/trap/errno/notify, and log over an allow: every kernel-equal value, and all it matched before
  kLogWithin,  // log over a deny: == masked == < <= as kCover, != > >= as kWithin
};

Fit FitFor(const ir::Action& action, LogOver log_over) {
  if (action.kind == ActionKind::kAllow) return Fit::kWithin;
  if (action.kind == ActionKind::kLog && log_over == LogOver::kDeny) return Fit::kLogWithin;
  return Fit::kCover;
}

std::string Hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

// [lo, hi] (hi <= low_mask) as aligned power-of-two blocks, each one masked
// compare on the low bits, plus `upper` in the mask (value 0 there): upper =
// ~low_mask requires the upper bits to be zero, upper = 0 ignores them.
void AppendBlocks(uint8_t arg, uint64_t lo, uint64_t hi, uint64_t low_mask, uint64_t upper,
                  std::vector<ArgCondition>& out) {
  if (lo > hi) return;
  for (;;) {
    uint64_t size = 1;
    while (size <= low_mask && (lo & (2 * size - 1)) == 0 && lo + 2 * size - 1 <= hi) size *= 2;
    out.push_back({arg, CompareOp::kMaskedEq, lo, upper | (low_mask & ~(size - 1))});
    if (lo + size - 1 == hi) return;
    lo += size;
  }
}

// The alternatives (ORed) replacing `c`, a condition on a parameter the
// kernel reads as the bits of `low` (2^w - 1). Empty: never true.
std::vector<ArgCondition> Alternatives(const ArgCondition& c, uint64_t low, Fit fit) {
  const uint64_t upper = ~low;
  const uint64_t v = c.value;
  std::vector<ArgCondition> out;
  switch (c.op) {
    case CompareOp::kEq:
      if (fit == Fit::kWithin) return {c};
      return {{c.arg, CompareOp::kMaskedEq, v & low, low}};
    case CompareOp::kMaskedEq:
      if (fit == Fit::kWithin || (c.mask & low) == 0) return {c};
      return {{c.arg, CompareOp::kMaskedEq, v & low, c.mask & low}};
    case CompareOp::kLt:
      if (fit == Fit::kWithin) return {c};
      if (v > 0) AppendBlocks(c.arg, 0, v - 1, low, 0, out);
      return out;
    case CompareOp::kLe:
      if (fit == Fit::kWithin) return {c};
      AppendBlocks(c.arg, 0, v, low, 0, out);
      return out;
    case CompareOp::kGt:
    case CompareOp::kGe:
      if (fit == Fit::kCover) return {c};
      // [v or v+1, low] with zero upper bits (v <= low: no overflow).
      AppendBlocks(c.arg, c.op == CompareOp::kGt ? v + 1 : v, low, low, upper, out);
      return out;
    case CompareOp::kNe:
      if (fit == Fit::kCover) return {c};
      if (v > 0) out.push_back({c.arg, CompareOp::kLt, v, 0});
      if (v < low) AppendBlocks(c.arg, v + 1, low, low, upper, out);
      return out;
  }
  return {c};
}

}  // namespace

KernelWidthFit FitToKernelWidths(const ir::SyscallRule& rule, LogOver log_over) {
  KernelWidthFit fit_result;
  auto narrow_bits = [&](const ArgCondition& c) { return syscalls::KernelArgBits(rule.name, c.arg); };
  bool any_narrow = false;
  for (const ArgCondition& c : rule.conditions) {
    const int bits = narrow_bits(c);
    if (bits >= 64) continue;
    any_narrow = true;
    const uint64_t low = (uint64_t{1} << bits) - 1;
    if (c.op != CompareOp::kEq && c.op != CompareOp::kMaskedEq && c.value > low) {
      fit_result.error = "syscall rule " + rule.name + ": the kernel reads arg" + std::to_string(c.arg) + " of " +
                         rule.name + " as a " + std::to_string(bits) + "-bit value, so comparing it with " +
                         Hex(c.value) + " (wider than " + Hex(low) + ") cannot work";
      return fit_result;
    }
  }
  MergeOutcome outcome;
  const std::optional<Conjunction> conditions = any_narrow ? Normalize(rule.conditions, &outcome) : std::nullopt;
  if (!conditions) {
    fit_result.rules.push_back(rule);
    return fit_result;
  }
  const Fit fit = FitFor(rule.action, log_over);
  std::vector<Conjunction> products = {{}};
  for (const ArgCondition& c : *conditions) {
    const int bits = narrow_bits(c);
    if (bits >= 64) {
      for (Conjunction& p : products) p.push_back(c);
      continue;
    }
    const uint64_t low = (uint64_t{1} << bits) - 1;
    std::vector<Conjunction> next;
    for (const ArgCondition& alternative : Alternatives(c, low, fit)) {
      for (const Conjunction& p : products) {
        next.push_back(p);
        next.back().push_back(alternative);
      }
    }
    if (next.size() > kMaxFittedRules) {
      fit_result.error = "syscall rule " + rule.name + ": comparing only the " + std::to_string(bits) +
                         " bits the kernel reads of its arguments needs more than " +
                         std::to_string(kMaxFittedRules) + " seccomp rules; use == or in {...}";
      return fit_result;
    }
    products = std::move(next);
  }
  for (Conjunction& p : products) {
    fit_result.rules.push_back(ir::SyscallRule{rule.name, rule.action, std::move(p), rule.group});
  }
  return fit_result;
}

}  // namespace cocoon::backends
