#include "compiler/backends/oci/oci_seccomp.h"

#include <map>
#include <tuple>

#include "compiler/backends/oci/oci_common.h"

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
  ordered_json arg = ReservedObject(4);
  arg["index"] = c.arg;
  arg["value"] = c.op == ir::CompareOp::kMaskedEq ? c.mask : c.value;
  arg["valueTwo"] = c.op == ir::CompareOp::kMaskedEq ? c.value : 0;
  arg["op"] = ScmpOp(c.op);
  return arg;
}

struct GroupKey {
  std::string action;
  int errno_ret = 0;
  std::vector<std::tuple<uint8_t, int, uint64_t, uint64_t>> args;  // arg, op, value, mask
  bool operator<(const GroupKey& o) const {
    return std::tie(action, errno_ret, args) < std::tie(o.action, o.errno_ret, o.args);
  }
};

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
  ordered_json out = ReservedObject(4);
  out["defaultAction"] = ScmpAction(rules.default_action, warnings);
  if (out["defaultAction"] == "SCMP_ACT_ERRNO") out["defaultErrnoRet"] = errno_of(rules.default_action);
  ordered_json arches = ordered_json::array();
  for (ir::Arch arch : rules.architectures) arches.push_back(ScmpArch(arch));
  out["architectures"] = std::move(arches);
  // Group names that share (action, errno, conditions); the key orders the
  // entries (action name, errno, then each condition's fields), so the
  // output is stable. JSON is built once per group, not per rule.
  std::map<GroupKey, std::vector<std::string>> groups;
  std::vector<std::string> notify_warnings;
  for (const ir::SyscallRule& rule : rules.rules) {
    GroupKey key{ScmpAction(rule.action, notify_warnings), 0, {}};
    if (key.action == "SCMP_ACT_ERRNO") key.errno_ret = errno_of(rule.action);
    for (const auto& c : rule.conditions) key.args.emplace_back(c.arg, static_cast<int>(c.op), c.value, c.mask);
    groups[std::move(key)].push_back(rule.name);
  }
  if (!notify_warnings.empty()) warnings.push_back(notify_warnings.front());
  ordered_json syscalls = ordered_json::array();
  for (auto& [key, names] : groups) {
    ordered_json entry = ReservedObject(4);
    entry["names"] = std::move(names);
    entry["action"] = key.action;
    if (key.action == "SCMP_ACT_ERRNO") entry["errnoRet"] = key.errno_ret;
    if (!key.args.empty()) {
      ordered_json args = ordered_json::array();
      for (const auto& [arg, op, value, mask] : key.args) {
        args.push_back(ArgJson(ir::ArgCondition{arg, static_cast<ir::CompareOp>(op), value, mask}));
      }
      entry["args"] = std::move(args);
    }
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

std::vector<ir::SyscallRuleProblem> RuleFormProblems(const ir::Policy& policy) {
  std::vector<ir::SyscallRuleProblem> problems;
#ifdef COCOON_HAVE_EFFECTIVE_RULES
  for (EffectiveSyscalls::Error& error : ComputeEffectiveSyscalls(policy.syscalls).errors) {
    // The rule this one overlaps is usually none of the policy's own: the
    // rule form writes Cocoon's built-in guards (the refused socket
    // families, the ioctl, clone and unshare guards) as rules beside it.
    problems.push_back({std::move(error.syscall),
                        "for the OCI and Kubernetes seccomp profile: " + error.message +
                            " (that profile writes Cocoon's built-in guards, such as the socket families it always "
                            "refuses, as rules next to the policy's; the Linux filter checks them first, so "
                            "`--target linux` compiles this policy)",
                        {}});
  }
#else
  (void)policy;
#endif
  return problems;
}

Result<OciSeccompProfile> SeccompProfileFromRules(EffectiveSyscalls rules) {
  // Fail closed, as the BPF back end does: a syscall whose rules could not be
  // made conflict-free has no rules at all in `rules`, so emitting the rest
  // would hand that syscall to the default action (with `default allow`, a
  // denial would silently vanish).
  if (!rules.errors.empty()) return InvalidArgumentError("seccomp profile: " + rules.errors.front().message);
  OciSeccompProfile profile;
  profile.text = SeccompToOci(rules, profile.translation_warnings).dump(2);
  profile.rule_warnings = std::move(rules.warnings);
  return profile;
}

Result<OciSeccompProfile> SeccompProfileFor(const ir::Syscalls& syscalls) {
  COCOON_ASSIGN_OR_RETURN(EffectiveSyscalls rules, EffectiveRulesFor(syscalls));
  return SeccompProfileFromRules(std::move(rules));
}

namespace {

// `text` with `depth` levels of dump(2) indentation added after each line
// break. Line breaks in a dump are structural only: a newline inside a
// string is escaped as \n.
void AppendIndented(std::string_view text, int depth, std::string& out) {
  const std::string indent = "\n" + std::string(static_cast<size_t>(depth) * 2, ' ');
  size_t start = 0;
  for (size_t nl = text.find('\n'); nl != std::string_view::npos; nl = text.find('\n', start)) {
    out.append(text.substr(start, nl - start));
    out.append(indent);
    start = nl + 1;
  }
  out.append(text.substr(start));
}

}  // namespace

std::string DumpWithEmbedded(nlohmann::ordered_json outer, const nlohmann::ordered_json::json_pointer& at,
                             std::string_view inner_text) {
  // A string no policy writes in practice; if one does, the slow path below.
  constexpr char kPlaceholder[] = "\x01cocoon-embedded-json\x01";
  outer[at] = kPlaceholder;
  const std::string token = nlohmann::ordered_json(kPlaceholder).dump();  // quoted and escaped, as dump(2) writes it
  const std::string text = outer.dump(2);
  const size_t found = text.find(token);
  if (found == std::string::npos || text.find(token, found + 1) != std::string::npos) {
    outer[at] = nlohmann::ordered_json::parse(inner_text, nullptr, /*allow_exceptions=*/false);
    return outer.dump(2);
  }
  int depth = 0;
  for (char c : at.to_string()) depth += c == '/' ? 1 : 0;
  std::string out;
  out.reserve(text.size() + inner_text.size() + inner_text.size() / 4);
  out.append(text, 0, found);
  AppendIndented(inner_text, depth, out);
  out.append(text, found + token.size());
  return out;
}

}  // namespace cocoon::backends::oci
