// linux.seccomp.json: the table the enforcer's supervisor uses to turn a
// seccomp user notification back into the policy's action (format in
// seccomp_backend.h).
#include <nlohmann/json.hpp>

#include "compiler/backends/seccomp/seccomp_backend.h"
#include "compiler/syscalls/syscall_groups.h"

namespace cocoon::backends {
namespace {

using nlohmann::json;

const char* ActionName(ir::ActionKind kind) {
  switch (kind) {
    case ir::ActionKind::kAllow: return "allow";
    case ir::ActionKind::kErrno: return "errno";
    case ir::ActionKind::kKillProcess: return "kill";
    case ir::ActionKind::kLog: return "log";
    case ir::ActionKind::kNotify: return "notify";
    case ir::ActionKind::kTrap: return "trap";
  }
  return "unknown";
}

const char* OpName(ir::CompareOp op) {
  switch (op) {
    case ir::CompareOp::kEq: return "eq";
    case ir::CompareOp::kNe: return "ne";
    case ir::CompareOp::kLt: return "lt";
    case ir::CompareOp::kLe: return "le";
    case ir::CompareOp::kGt: return "gt";
    case ir::CompareOp::kGe: return "ge";
    case ir::CompareOp::kMaskedEq: return "masked_eq";
  }
  return "unknown";
}

json ActionJson(const ir::Action& action) {
  json j = {{"action", ActionName(action.kind)}};
  if (action.kind == ir::ActionKind::kErrno) j["errno"] = action.errno_value;
  return j;
}

json StatsJson(const BpfPathStats& s) {
  return {{"instructions", s.instructions},
          {"worst_case_allow", s.worst_case_allow},
          {"worst_case_any", s.worst_case_any}};
}

bool Supervised(ir::ActionKind kind) {
  return kind == ir::ActionKind::kLog || kind == ir::ActionKind::kNotify || kind == ir::ActionKind::kKillProcess;
}

json SupervisedEntry(const ir::SyscallRule& rule, const std::vector<ir::Arch>& arches) {
  json numbers = json::object();
  for (ir::Arch arch : arches) {
    // The number the filter places the rule on (libseccomp puts i386 socket
    // rules on the direct syscall, 359, not only on socketcall): under a
    // supervised default the enforcer would take an unlisted one for the
    // default's call (enforcer/notify.cc, Match).
    const int nr = syscalls::KernelSyscallNumber(rule.name, arch);
    if (nr >= 0) numbers[std::string(syscalls::ArchName(arch))] = nr;
  }
  json conditions = json::array();
  for (const ir::ArgCondition& c : rule.conditions) {
    json cj = {{"arg", c.arg}, {"op", OpName(c.op)}, {"value", c.value}};
    if (c.op == ir::CompareOp::kMaskedEq) cj["mask"] = c.mask;
    conditions.push_back(std::move(cj));
  }
  return {{"syscall", rule.name},
          {"action", ActionName(rule.action.kind)},
          {"numbers", std::move(numbers)},
          {"conditions", std::move(conditions)}};
}

}  // namespace

std::string SeccompSidecarJson(const EffectiveSyscalls& rules, const CompiledSeccompFilter& filter,
                               SupervisedRouting routing) {
  json arches = json::array();
  for (ir::Arch arch : rules.architectures) arches.push_back(std::string(syscalls::ArchName(arch)));
  json supervised = json::array();
  for (const ir::SyscallRule& rule : rules.rules) {
    if (Supervised(rule.action.kind)) supervised.push_back(SupervisedEntry(rule, rules.architectures));
  }
  json stats = StatsJson(filter.stats);
  stats["optimize"] = filter.optimize_level;
  if (filter.linear_stats.instructions > 0) stats["linear"] = StatsJson(filter.linear_stats);
  if (filter.binary_tree_stats.instructions > 0) stats["binary_tree"] = StatsJson(filter.binary_tree_stats);
  // Where the prologue guards sit (guard_inline.h / guard_prefix.h) and what
  // libseccomp's own program costs (the reference for issue 3's 1.5x bound).
  stats["guards"] = filter.guards_inline ? "inline" : filter.prefix_instructions > 0 ? "prefix" : "none";
  stats["libseccomp"] = StatsJson(filter.libseccomp_stats);
  const json doc = {
      {"format", "cocoon.seccomp.v1"},
      {"architectures", std::move(arches)},
      {"bad_arch_action", "kill_process"},
      {"default_action", ActionJson(rules.default_action)},
      {"default_supervised",
       routing == SupervisedRouting::kRouteToNotify && Supervised(rules.default_action.kind)},
      {"routing", routing == SupervisedRouting::kRouteToNotify ? "user_notif" : "native"},
      {"needs_listener", filter.needs_listener},
      {"supervised", std::move(supervised)},
      {"stats", std::move(stats)},
      {"rules", rules.rules.size()},
      {"warnings", rules.warnings},
  };
  return doc.dump(2) + "\n";
}

}  // namespace cocoon::backends
