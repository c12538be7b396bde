#include "compiler/backends/oci/oci_seccomp.h"

#include <map>

namespace cocoon::backends::oci {
namespace {

using nlohmann::ordered_json;

const char* ScmpArch(ir::Arch arch) {
  switch (arch) {
    case ir::Arch::kX86_64: return "SCMP_ARCH_X86_64";
    case ir::Arch::kX32: return "SCMP_ARCH_X32";
    case ir::Arch::kX86: return "SCMP_ARCH_X86";
    case ir::Arch::kAarch64: return "SCMP_ARCH_AARCH64";
  }
  return "SCMP_ARCH_NATIVE";
}

const char* ScmpOp(ir::CompareOp op) {
  switch (op) {
    case ir::CompareOp::kEq: return "SCMP_CMP_EQ";
    case ir::CompareOp::kNe: return "SCMP_CMP_NE";
    case ir::CompareOp::kLt: return "SCMP_CMP_LT";
    case ir::CompareOp::kLe: return "SCMP_CMP_LE";
    case ir::CompareOp::kGt: return "SCMP_CMP_GT";
    case ir::CompareOp::kGe: return "SCMP_CMP_GE";
    case ir::CompareOp::kMaskedEq: return "SCMP_CMP_MASKED_EQ";
  }
  return "SCMP_CMP_EQ";
}

// For SCMP_CMP_MASKED_EQ, runc and crun pass `value` as libseccomp's datum_a
// (the mask) and `valueTwo` as datum_b: (arg & value) == valueTwo.
ordered_json ArgJson(const ir::ArgCondition& c) {
  ordered_json arg;
  arg["index"] = c.arg;
  arg["value"] = c.op == ir::CompareOp::kMaskedEq ? c.mask : c.value;
  arg["valueTwo"] = c.op == ir::CompareOp::kMaskedEq ? c.value : 0;
  arg["op"] = ScmpOp(c.op);
  return arg;
}

}  // namespace

std::string ScmpAction(const ir::Action& action, std::vector<std::string>& warnings) {
  switch (action.kind) {
    case ir::ActionKind::kAllow: return "SCMP_ACT_ALLOW";
    case ir::ActionKind::kErrno: return "SCMP_ACT_ERRNO";
    case ir::ActionKind::kKillProcess: return "SCMP_ACT_KILL_PROCESS";
    case ir::ActionKind::kLog: return "SCMP_ACT_LOG";
    case ir::ActionKind::kTrap: return "SCMP_ACT_TRAP";
    case ir::ActionKind::kNotify:
      warnings.push_back("oci: 'notify' needs a seccomp listener the runtime does not have; it becomes errno EPERM");
      return "SCMP_ACT_ERRNO";
  }
  return "SCMP_ACT_KILL_PROCESS";
}

nlohmann::ordered_json SeccompToOci(const EffectiveSyscalls& rules, std::vector<std::string>& warnings) {
  auto errno_of = [](const ir::Action& a) { return a.kind == ir::ActionKind::kNotify ? 1 : a.errno_value; };
  ordered_json out;
  out["defaultAction"] = ScmpAction(rules.default_action, warnings);
  if (out["defaultAction"] == "SCMP_ACT_ERRNO") out["defaultErrnoRet"] = errno_of(rules.default_action);
  ordered_json arches = ordered_json::array();
  for (ir::Arch arch : rules.architectures) arches.push_back(ScmpArch(arch));
  out["architectures"] = std::move(arches);
  // Group names that share (action, errno, conditions). The key is the
  // serialised entry without names, which also gives a stable order.
  std::map<std::string, std::pair<ordered_json, std::vector<std::string>>> groups;
  std::vector<std::string> notify_warnings;
  for (const ir::SyscallRule& rule : rules.rules) {
    ordered_json entry;
    entry["action"] = ScmpAction(rule.action, notify_warnings);
    if (entry["action"] == "SCMP_ACT_ERRNO") entry["errnoRet"] = errno_of(rule.action);
    if (!rule.conditions.empty()) {
      ordered_json args = ordered_json::array();
      for (const auto& c : rule.conditions) args.push_back(ArgJson(c));
      entry["args"] = std::move(args);
    }
    auto& slot = groups[entry.dump()];
    slot.first = std::move(entry);
    slot.second.push_back(rule.name);
  }
  if (!notify_warnings.empty()) warnings.push_back(notify_warnings.front());
  ordered_json syscalls = ordered_json::array();
  for (auto& [key, group] : groups) {
    ordered_json entry;
    entry["names"] = group.second;
    for (auto& [k, v] : group.first.items()) entry[k] = v;
    syscalls.push_back(std::move(entry));
  }
  out["syscalls"] = std::move(syscalls);
  return out;
}

Result<EffectiveSyscalls> EffectiveRulesFor(const ir::Syscalls& syscalls) {
#ifdef COCOON_HAVE_EFFECTIVE_RULES
  return ComputeEffectiveSyscalls(syscalls);
#else
  return FailedPreconditionError(
      "oci/k8s: this build has no seccomp back end (cocoon_backend_seccomp), so no seccomp profile can be emitted");
#endif
}

}  // namespace cocoon::backends::oci
