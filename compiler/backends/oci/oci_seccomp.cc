#include "compiler/backends/oci/oci_seccomp.h"

#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "compiler/backends/oci/oci_common.h"
#ifdef COCOON_HAVE_EFFECTIVE_RULES
#include "compiler/backends/seccomp/seccomp_backend.h"
#endif

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

// The profile's `syscalls[]` entries: the rules grouped by (action, errno,
// conditions), keyed in the order they are written, which is also the order
// runc and crun add them to libseccomp (VerifyRuntimeBuild).
using ProfileEntries = std::map<GroupKey, std::vector<const ir::SyscallRule*>>;

// What the profile writes for `action` (notify has no listener there).
ir::Action ActionAsWritten(const ir::Action& action) {
  if (action.kind != ir::ActionKind::kNotify) return action;
  return ir::Action{ir::ActionKind::kErrno, 1};
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

namespace {

// Group names that share (action, errno, conditions); the key orders the
// entries (action name, errno, then each condition's fields), so the output
// is stable. JSON is built once per group, not per rule.
ProfileEntries GroupIntoEntries(const EffectiveSyscalls& rules, std::vector<std::string>& warnings) {
  ProfileEntries groups;
  std::vector<std::string> notify_warnings;
  for (const ir::SyscallRule& rule : rules.rules) {
    const ir::Action written = ActionAsWritten(rule.action);
    GroupKey key{ScmpAction(rule.action, notify_warnings), 0, {}};
    if (key.action == "SCMP_ACT_ERRNO") key.errno_ret = written.errno_value;
    for (const auto& c : rule.conditions) key.args.emplace_back(c.arg, static_cast<int>(c.op), c.value, c.mask);
    groups[std::move(key)].push_back(&rule);
  }
  if (!notify_warnings.empty()) warnings.push_back(notify_warnings.front());
  return groups;
}

// `rules` as the runtime reads them from the profile: in the entries' order,
// with the actions written there.
EffectiveSyscalls AsTheRuntimeReadsThem(const EffectiveSyscalls& rules) {
  std::vector<std::string> ignored;
  const ProfileEntries entries = GroupIntoEntries(rules, ignored);
  EffectiveSyscalls read;
  read.default_action = ActionAsWritten(rules.default_action);
  read.architectures = rules.architectures;
  read.rules.reserve(rules.rules.size());
  for (const auto& [key, entry_rules] : entries) {
    for (const ir::SyscallRule* rule : entry_rules) {
      read.rules.push_back(*rule);
      read.rules.back().action = ActionAsWritten(rule->action);
    }
  }
  return read;
}

}  // namespace

nlohmann::ordered_json SeccompToOci(const EffectiveSyscalls& rules, std::vector<std::string>& warnings) {
  ordered_json out = ReservedObject(4);
  out["defaultAction"] = ScmpAction(rules.default_action, warnings);
  if (out["defaultAction"] == "SCMP_ACT_ERRNO") out["defaultErrnoRet"] = ActionAsWritten(rules.default_action).errno_value;
  ordered_json arches = ordered_json::array();
  for (ir::Arch arch : rules.architectures) arches.push_back(ScmpArch(arch));
  out["architectures"] = std::move(arches);
  ordered_json syscalls = ordered_json::array();
  for (auto& [key, entry_rules] : GroupIntoEntries(rules, warnings)) {
    ordered_json names = ordered_json::array();
    for (const ir::SyscallRule* rule : entry_rules) names.push_back(rule->name);
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

Result<EffectiveSyscalls> EffectiveRulesFor(const ir::Policy& policy) {
#ifdef COCOON_HAVE_EFFECTIVE_RULES
  return ComputeEffectiveSyscalls(policy.syscalls, PrologueGuardForm::kRules, ConnectRouting::kFilter,
                                  NetlinkSocketsFor(policy.network));
#else
  return FailedPreconditionError(
      "oci/k8s: this build has no seccomp back end (cocoon_backend_seccomp), so no seccomp profile can be emitted");
#endif
}

namespace {

// Why a profile the runtime would build wrongly is refused, and what to do.
constexpr char kRuntimeBuildAdvice[] =
    "runc and crun build this profile themselves with libseccomp 2.5.4 (its entries in the file's order, "
    "libseccomp's linear layout); Cocoon builds it the same way and checks that program before emitting the "
    "profile. Split or narrow the rule (fewer comparisons per rule, no range comparisons on one argument across "
    "rules of different actions), or use `--target linux` / `cocoon enforce`, whose filter Cocoon builds and "
    "verifies itself";

// VerifyRuntimeBuild for the profile `rules` is written as (kRules form),
// whose text is `profile_text`.
//
// The last answer is kept: `cocoon compile --target oci|k8s` asks twice for
// one profile (RuleFormProblems in the checker, then SeccompProfileFromRules),
// and the check costs most of that compile (strict: ~0.6 s, nearly all in
// ioctl's ~120 guard pieces and socket's ~300: with the network off the
// socket guard refuses AF_NETLINK too, which took `cocoon compile --target
// oci` for strict from ~0.11 s to ~0.16 s here). The key is the profile's
// text, which is everything the runtime builds from.
Status CheckRuntimeBuild(const EffectiveSyscalls& rules, const std::string& profile_text,
                         std::string* failed_syscall) {
#ifdef COCOON_HAVE_EFFECTIVE_RULES
  struct Answer {
    std::string profile_text;
    Status status;
    std::string failed_syscall;
  };
  static std::mutex last_mutex;
  static std::optional<Answer> last;
  {
    std::lock_guard<std::mutex> lock(last_mutex);
    if (last && last->profile_text == profile_text) {
      if (failed_syscall != nullptr) *failed_syscall = last->failed_syscall;
      return last->status;
    }
  }
  Answer answer{profile_text, Status::Ok(), ""};
  answer.status = VerifyRuntimeBuild(AsTheRuntimeReadsThem(rules), &answer.failed_syscall);
  if (!answer.status.ok()) {
    answer.status =
        FailedPreconditionError("for the OCI and Kubernetes seccomp profile: " + answer.status.message());
  }
  if (failed_syscall != nullptr) *failed_syscall = answer.failed_syscall;
  Status status = answer.status;
  std::lock_guard<std::mutex> lock(last_mutex);
  last = std::move(answer);
  return status;
#else
  (void)rules, (void)profile_text, (void)failed_syscall;
  return Status::Ok();
#endif
}

}  // namespace

std::vector<ir::SyscallRuleProblem> RuleFormProblems(const ir::Policy& policy) {
  std::vector<ir::SyscallRuleProblem> problems;
#ifdef COCOON_HAVE_EFFECTIVE_RULES
  EffectiveSyscalls rules = ComputeEffectiveSyscalls(policy.syscalls, PrologueGuardForm::kRules, ConnectRouting::kFilter,
                                                     NetlinkSocketsFor(policy.network));
  if (rules.errors.empty()) {
    std::vector<std::string> ignored;
    const std::string text = SeccompToOci(rules, ignored).dump(2);
    std::string failed;  // empty: about no one syscall, reported at the profile
    if (Status built = CheckRuntimeBuild(rules, text, &failed); !built.ok()) {
      problems.push_back({failed, built.message(), kRuntimeBuildAdvice});
    }
  }
  for (EffectiveSyscalls::Error& error : rules.errors) {
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
  // Fail closed on the runtime's side too: a profile whose rules runc/crun's
  // libseccomp would miscompile is not emitted (VerifyRuntimeBuild).
  OciSeccompProfile profile;
  profile.text = SeccompToOci(rules, profile.translation_warnings).dump(2);
  if (Status built = CheckRuntimeBuild(rules, profile.text, nullptr); !built.ok()) {
    return FailedPreconditionError(built.message() + ". " + kRuntimeBuildAdvice);
  }
  profile.rule_warnings = std::move(rules.warnings);
  return profile;
}

Result<OciSeccompProfile> SeccompProfileFor(const ir::Policy& policy) {
  COCOON_ASSIGN_OR_RETURN(EffectiveSyscalls rules, EffectiveRulesFor(policy));
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
