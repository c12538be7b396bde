#include "compiler/backends/syscall_fidelity.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <utility>
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

// A rule statement the compiled profile's own syscalls block wrote, read
// back from its provenance key: the checker records each under
// "syscalls.rule:NAME ACTION[ argN/OP/VALUE/MASK...]" (a group's as
// "syscalls.group:@GROUP ..."; checker_syscalls.cc RuleOriginKey). Read
// from there, not from policy.syscalls.rules: the checker drops an
// unconditional rule that repeats the default action (`deny ptrace errno
// EPERM` under `default errno EPERM`), and such a rule is not carried out
// on these targets either.
struct OwnStatement {
  std::string target;  // "ptrace" or "@aio"
  bool group = false;
  bool restricts = false;
  std::vector<ir::ArgCondition> conditions;
};

// One "argN/OP/VALUE/MASK"; false when the key is not in that form.
bool ParseCondition(std::string_view text, ir::ArgCondition& condition) {
  unsigned arg = 0, op = 0;
  unsigned long long value = 0, mask = 0;
  int used = 0;
  const std::string copy(text);
  if (std::sscanf(copy.c_str(), "arg%u/%u/%llu/%llu%n", &arg, &op, &value, &mask, &used) != 4 ||
      static_cast<size_t>(used) != copy.size() || arg > 5 || op > static_cast<unsigned>(ir::CompareOp::kMaskedEq)) {
    return false;
  }
  condition = {static_cast<uint8_t>(arg), static_cast<ir::CompareOp>(op), value, mask};
  return true;
}

std::optional<OwnStatement> ParseOwnStatement(std::string_view key) {
  OwnStatement statement;
  for (std::string_view prefix : {std::string_view("syscalls.rule:"), std::string_view("syscalls.group:")}) {
    if (key.starts_with(prefix)) {
      statement.group = prefix == "syscalls.group:";
      key.remove_prefix(prefix.size());
      break;
    }
  }
  if (key.size() == 0) return std::nullopt;
  std::vector<std::string_view> words;
  while (!key.empty()) {
    const size_t space = key.find(' ');
    words.push_back(key.substr(0, space));
    key.remove_prefix(space == std::string_view::npos ? key.size() : space + 1);
  }
  if (words.size() < 2) return std::nullopt;
  statement.target = std::string(words[0]);
  statement.restricts = words[1] != "allow" && words[1] != "log";
  for (size_t i = words[1] == "errno" ? 3 : 2; i < words.size(); ++i) {
    ir::ArgCondition condition;
    if (!ParseCondition(words[i], condition)) return std::nullopt;
    statement.conditions.push_back(condition);
  }
  return statement;
}

std::vector<OwnStatement> OwnStatements(const ir::Policy& policy) {
  std::vector<OwnStatement> out;
  for (const auto& [key, origin] : policy.provenance) {
    if (origin.profile != policy.name) continue;
    if (!key.starts_with("syscalls.rule:") && !key.starts_with("syscalls.group:")) continue;
    if (auto statement = ParseOwnStatement(key)) out.push_back(std::move(*statement));
  }
  return out;
}

// As the policy wrote it: the syscall or the @group, and its conditions.
std::string StatementText(const OwnStatement& statement) {
  std::string text = statement.target;
  for (size_t i = 0; i < statement.conditions.size(); ++i) {
    text += (i == 0 ? " if " : " and ") + ConditionText(statement.conditions[i]);
  }
  return text;
}

const ExpressedDenial* Cover(const std::vector<ExpressedDenial>& expressed, const std::string& name) {
  for (const ExpressedDenial& denial : expressed) {
    const auto names = CapabilitySyscalls(denial.capability);
    if (std::find(names.begin(), names.end(), name) != names.end()) return &denial;
  }
  return nullptr;
}

// Linux's errno names for the values a default is written with; the full
// table is the front end's (frontend/constants.h), not linked here.
std::string LinuxErrnoName(int value) {
  static constexpr std::pair<int, std::string_view> kNames[] = {
      {1, "EPERM"},   {2, "ENOENT"},  {4, "EINTR"},  {5, "EIO"},     {9, "EBADF"},  {11, "EAGAIN"},
      {12, "ENOMEM"}, {13, "EACCES"}, {16, "EBUSY"}, {22, "EINVAL"}, {30, "EROFS"}, {38, "ENOSYS"},
      {95, "EOPNOTSUPP"}, {97, "EAFNOSUPPORT"},
  };
  for (const auto& [number, name] : kNames) {
    if (number == value) return std::string(name);
  }
  return std::to_string(value);
}

// The profile's own `default`, when it refuses: "default kill". A default
// the profile inherited is the parent's, like its rules.
std::string OwnRestrictiveDefault(const ir::Policy& policy) {
  const auto it = policy.provenance.find("syscalls.default");
  if (it == policy.provenance.end() || it->second.profile != policy.name) return "";
  const ir::Action& action = policy.syscalls.default_action;
  if (!Restricts(action)) return "";
  switch (action.kind) {
    case ir::ActionKind::kErrno: return "default errno " + LinuxErrnoName(action.errno_value);
    case ir::ActionKind::kKillProcess: return "default kill";
    case ir::ActionKind::kNotify: return "default notify";
    case ir::ActionKind::kTrap: return "default trap";
    case ir::ActionKind::kAllow:
    case ir::ActionKind::kLog: break;
  }
  return "";
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
  for (const OwnStatement& statement : OwnStatements(policy)) {
    if (!statement.restricts) continue;
    Written w{StatementText(statement)};
    if (!statement.group) {
      const ExpressedDenial* cover = statement.conditions.empty() ? Cover(expressed, statement.target) : nullptr;
      if (cover != nullptr && cover->fidelity == Fidelity::kPartial) partly = true;
      (cover == nullptr ? w.dropped : w.covered) = true;
    } else {
      // No shipped group is made of the mapped calls alone (and the group
      // table is not linked here): some of its calls are always dropped.
      // Those carried out are read from the group's rules that remain.
      w.dropped = true;
      for (const ir::SyscallRule& rule : policy.syscalls.rules) {
        if (rule.group != statement.target || rule.conditions != statement.conditions || !rule.conditions.empty() ||
            !Restricts(rule.action)) {
          continue;
        }
        if (const ExpressedDenial* cover = Cover(expressed, rule.name)) {
          w.covered = true;
          if (cover->fidelity == Fidelity::kPartial) partly = true;
        }
      }
    }
    auto it = std::find_if(written.begin(), written.end(), [&](const Written& x) { return x.text == w.text; });
    if (it == written.end()) {
      written.push_back(w);
    } else {
      it->dropped |= w.dropped;
      it->covered |= w.covered;
    }
  }
  std::vector<std::string> mapped, dropped;
  for (const Written& w : written) {
    if (w.dropped) dropped.push_back(w.text + (w.covered ? " (in part)" : ""));
  }
  std::sort(dropped.begin(), dropped.end());
  const std::string default_text = OwnRestrictiveDefault(policy);
  if (dropped.empty() && !partly && default_text.empty()) return "";
  for (const ExpressedDenial& denial : expressed) {
    std::string names;
    for (std::string_view name : CapabilitySyscalls(denial.capability)) {
      names += (names.empty() ? "" : " ") + std::string(name);
    }
    mapped.push_back(names + " -> " + denial.how);
  }
  std::string text = std::string(target) + ": the 'syscalls' block" + AtPolicyLine(policy, "syscalls") +
                     " is not enforced as written: " + std::string(note);
  if (!default_text.empty()) {
    text += "; " + default_text + AtPolicyLine(policy, "syscalls.default") +
            " is not enforced: every syscall outside the allow list is allowed on this target";
  }
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
