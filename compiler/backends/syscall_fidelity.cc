#include "compiler/backends/syscall_fidelity.h"

#include <algorithm>
#include <cstdio>
#include <span>

#include "compiler/backends/policy_origin.h"

namespace cocoon::backends {
namespace {

constexpr std::string_view kExecSyscalls[] = {"execve", "execveat"};
constexpr std::string_view kForkSyscalls[] = {"clone", "clone3", "fork", "vfork"};
constexpr std::string_view kSocketSyscalls[] = {"socket"};
constexpr std::string_view kConnectSyscalls[] = {"connect"};
constexpr std::string_view kBindSyscalls[] = {"bind"};
constexpr std::string_view kListenSyscalls[] = {"listen"};

std::span<const std::string_view> CapabilitySyscalls(SyscallCapability capability) {
  switch (capability) {
    case SyscallCapability::kExec: return kExecSyscalls;
    case SyscallCapability::kFork: return kForkSyscalls;
    case SyscallCapability::kSocket: return kSocketSyscalls;
    case SyscallCapability::kConnect: return kConnectSyscalls;
    case SyscallCapability::kBind: return kBindSyscalls;
    case SyscallCapability::kListen: return kListenSyscalls;
  }
  return {};
}

// allow and log let the call through; every other action refuses it.
bool Restricts(const ir::Action& action) {
  return action.kind != ir::ActionKind::kAllow && action.kind != ir::ActionKind::kLog;
}

bool SyscallDenied(const ir::Syscalls& syscalls, std::string_view name) {
  bool any = false, unconditional_denial = false;
  for (const ir::SyscallRule& rule : syscalls.rules) {
    if (rule.name != name) continue;
    any = true;
    if (!Restricts(rule.action)) return false;
    if (rule.conditions.empty()) unconditional_denial = true;
  }
  return any ? unconditional_denial : Restricts(syscalls.default_action);
}

// Written by the compiled profile's own syscalls block: the checker records
// each rule's statement under "syscalls.rule:NAME ACTION..." (a group's as
// "syscalls.group:@GROUP ACTION...") in the provenance.
bool OwnRule(const ir::Policy& policy, const ir::SyscallRule& rule) {
  const std::string prefix = (rule.group.empty() ? "syscalls.rule:" + rule.name : "syscalls.group:" + rule.group) + " ";
  for (auto it = policy.provenance.lower_bound(prefix);
       it != policy.provenance.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    if (it->second.profile == policy.name) return true;
  }
  return false;
}

// Small numbers in decimal, the rest (flags, ioctl requests) in hex.
std::string Number(uint64_t value) {
  if (value < 256) return std::to_string(value);
  char text[24];
  std::snprintf(text, sizeof(text), "0x%llx", static_cast<unsigned long long>(value));
  return text;
}

std::string ConditionText(const ir::ArgCondition& c) {
  static constexpr const char* kOps[] = {"==", "!=", "<", "<=", ">", ">="};
  const std::string arg = "arg" + std::to_string(c.arg);
  if (c.op == ir::CompareOp::kMaskedEq) return arg + " & " + Number(c.mask) + " == " + Number(c.value);
  return arg + " " + kOps[static_cast<int>(c.op)] + " " + Number(c.value);
}

// As the policy wrote it: the syscall, or the @group it came from.
std::string RuleText(const ir::SyscallRule& rule) {
  std::string text = rule.group.empty() ? rule.name : rule.group;
  for (size_t i = 0; i < rule.conditions.size(); ++i) {
    text += (i == 0 ? " if " : " and ") + ConditionText(rule.conditions[i]);
  }
  return text;
}

}  // namespace

bool PolicyDenies(const ir::Policy& policy, SyscallCapability capability) {
  for (std::string_view name : CapabilitySyscalls(capability)) {
    if (!SyscallDenied(policy.syscalls, name)) return false;
  }
  return true;
}

std::string UnexpressedSyscallsWarning(const ir::Policy& policy, std::string_view target,
                                       const std::vector<ExpressedDenial>& expressed, std::string_view note) {
  // Per statement as written (a group's rules together): whether some of
  // its rules are dropped, and whether some are carried out.
  struct Written {
    std::string text;
    bool dropped = false;
    bool covered = false;
  };
  std::vector<Written> written;
  bool partly = false;  // an own rule is mapped to a form that lets part of it through
  for (const ir::SyscallRule& rule : policy.syscalls.rules) {
    if (!Restricts(rule.action) || !OwnRule(policy, rule)) continue;
    const ExpressedDenial* cover = nullptr;
    for (const ExpressedDenial& denial : expressed) {
      const auto names = CapabilitySyscalls(denial.capability);
      if (rule.conditions.empty() && std::find(names.begin(), names.end(), rule.name) != names.end()) cover = &denial;
    }
    if (cover != nullptr && cover->fidelity == Fidelity::kPartial) partly = true;
    const std::string text = RuleText(rule);
    auto it = std::find_if(written.begin(), written.end(), [&](const Written& w) { return w.text == text; });
    if (it == written.end()) it = written.insert(written.end(), Written{text});
    (cover == nullptr ? it->dropped : it->covered) = true;
  }
  std::vector<std::string> mapped, dropped;
  for (const Written& w : written) {
    if (w.dropped) dropped.push_back(w.text + (w.covered ? " (in part)" : ""));
  }
  std::sort(dropped.begin(), dropped.end());
  if (dropped.empty() && !partly) return "";
  for (const ExpressedDenial& denial : expressed) {
    std::string names;
    for (std::string_view name : CapabilitySyscalls(denial.capability)) {
      names += (names.empty() ? "" : " ") + std::string(name);
    }
    mapped.push_back(names + " -> " + denial.how);
  }
  std::string text = std::string(target) + ": the 'syscalls' block" + AtPolicyLine(policy, "syscalls") +
                     " is not enforced as written: " + std::string(note);
  if (!mapped.empty()) {
    text += "; it takes effect only as";
    for (size_t i = 0; i < mapped.size(); ++i) text += (i == 0 ? " " : "; ") + mapped[i];
  }
  if (dropped.empty()) return text;
  std::string list;
  for (const std::string& rule : dropped) list += (list.empty() ? "" : ", ") + rule;
  return text + "; these of the profile's own rules are not enforced at all: " + list;
}

}  // namespace cocoon::backends
