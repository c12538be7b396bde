#include "enforcer/notify.h"

#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "enforcer/net_broker.h"

namespace cocoon::enforcer {
namespace {

constexpr size_t kMaxDeniedRows = 1024;  // bounded memory under a flood

Result<SupervisedAction> ActionFromName(const std::string& name) {
  if (name == "log") return SupervisedAction::kLog;
  if (name == "notify") return SupervisedAction::kNotify;
  if (name == "kill" || name == "kill_process" || name == "kill_thread" || name == "trap") return SupervisedAction::kKill;
  if (name == "errno") return SupervisedAction::kErrno;
  if (name == "allow") return SupervisedAction::kAllow;
  return InvalidArgumentError("unknown supervised action '" + name + "'");
}

std::string ActionText(const SupervisedRule& rule) {
  switch (rule.action) {
    case SupervisedAction::kLog: return "log";
    case SupervisedAction::kNotify: return "notify";
    case SupervisedAction::kKill: return "kill";
    case SupervisedAction::kAllow: return "allow";
    case SupervisedAction::kErrno: {
      const char* name = strerrorname_np(rule.errno_value);
      return std::string("errno(") + (name ? name : std::to_string(rule.errno_value).c_str()) + ")";
    }
  }
  return "?";
}

bool ConditionHolds(const SupervisedCondition& c, const uint64_t* args) {
  if (c.arg < 0 || c.arg > 5) return false;
  uint64_t v = args[c.arg];
  if (c.op == "eq") return v == c.value;
  if (c.op == "ne") return v != c.value;
  if (c.op == "lt") return v < c.value;
  if (c.op == "le") return v <= c.value;
  if (c.op == "gt") return v > c.value;
  if (c.op == "ge") return v >= c.value;
  if (c.op == "masked_eq") return (v & c.mask) == c.value;
  return false;
}

constexpr int kX32SyscallBit = 0x40000000;  // __X32_SYSCALL_BIT

// The seccomp_data.arch of a sidecar arch name, and the number the kernel
// reports for `nr` there; false for an arch this build does not know.
bool ArchOf(const std::string& name, int nr, uint32_t* arch, int* number) {
  *number = nr;
  if (name == "x86_64") {
    *arch = AUDIT_ARCH_X86_64;
  } else if (name == "x32") {  // same audit arch as x86_64; the number has the x32 bit
    *arch = AUDIT_ARCH_X86_64;
    *number = nr | kX32SyscallBit;
  } else if (name == "x86") {
    *arch = AUDIT_ARCH_I386;
  } else if (name == "aarch64") {
    *arch = AUDIT_ARCH_AARCH64;
  } else {
    return false;
  }
  return true;
}

std::string ArchText(uint32_t arch, int nr) {
  switch (arch) {
    case AUDIT_ARCH_X86_64: return (nr & kX32SyscallBit) != 0 ? "x32" : "x86_64";
    case AUDIT_ARCH_I386: return "x86";
    case AUDIT_ARCH_AARCH64: return "aarch64";
    default: return "arch " + std::to_string(arch);
  }
}

}  // namespace

Result<NotifyTable> ParseSeccompSidecar(std::string_view text) {
  NotifyTable table;
  table.default_rule.action = SupervisedAction::kErrno;
  table.default_rule.errno_value = EPERM;
  if (text.empty()) return InvalidArgumentError("no linux.seccomp.json");
  try {
    auto j = nlohmann::json::parse(text);
    table.needs_listener = j.value("needs_listener", false);
    table.default_supervised = j.value("default_supervised", false);
    for (const auto& name : j.value("architectures", nlohmann::json::array())) {
      AdmittedArch admitted;
      int number = 0;
      if (!ArchOf(name.get<std::string>(), 0, &admitted.arch, &number)) continue;  // never matched: killed
      admitted.x32 = number != 0;
      table.architectures.push_back(admitted);
    }
    const auto& def = j.at("default_action");
    COCOON_ASSIGN_OR_RETURN(table.default_rule.action, ActionFromName(def.at("action").get<std::string>()));
    table.default_rule.errno_value = def.value("errno", EPERM);
    table.default_rule.syscall = "(default)";
    for (const auto& entry : j.value("supervised", nlohmann::json::array())) {
      SupervisedRule rule;
      rule.syscall = entry.at("syscall").get<std::string>();
      COCOON_ASSIGN_OR_RETURN(rule.action, ActionFromName(entry.at("action").get<std::string>()));
      rule.errno_value = entry.value("errno", EPERM);
      for (const auto& c : entry.value("conditions", nlohmann::json::array())) {
        rule.conditions.push_back({c.at("arg").get<int>(), c.at("op").get<std::string>(), c.at("value").get<uint64_t>(),
                                   c.value("mask", uint64_t{0})});
      }
      // One rule per architecture the filter admits: a policy with
      // `arch x86` routes int 0x80 calls here too, under their i386 numbers.
      const nlohmann::json numbers = entry.value("numbers", nlohmann::json::object());
      for (const auto& [arch_name, nr] : numbers.items()) {
        SupervisedRule for_arch = rule;
        if (!ArchOf(arch_name, nr.get<int>(), &for_arch.arch, &for_arch.number)) continue;
        table.rules.push_back(std::move(for_arch));
      }
    }
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("linux.seccomp.json: ") + e.what());
  }
  return table;
}

const SupervisedRule& NotifyResponder::Match(uint32_t arch, int nr, const uint64_t* args) const {
  bool known = false;
  for (const auto& rule : table_.rules) {
    if (rule.arch != arch || rule.number != nr) continue;
    known = true;
    bool all = true;
    for (const auto& c : rule.conditions) all = all && ConditionHolds(c, args);
    if (all) return rule;
  }
  if (known) return table_.default_rule;  // its conditions did not hold, as the filter's did not
  // No rule names (arch, nr). Under `default log` / `default notify` the
  // filter routes every call no rule names to the listener, so this is the
  // default's call: the default rule answers it, on an architecture the
  // filter admits (it kills the others in the kernel, so one from there
  // means the two disagree). The sidecar lists every supervised rule's
  // number on each admitted arch as the filter places it (KernelSyscallNumber),
  // so a supervised rule's call is never taken for the default's here.
  const bool x32 = arch == AUDIT_ARCH_X86_64 && (nr & kX32SyscallBit) != 0;
  if (table_.default_supervised &&
      std::any_of(table_.architectures.begin(), table_.architectures.end(),
                  [&](const AdmittedArch& a) { return a.arch == arch && a.x32 == x32; })) {
    return table_.default_rule;
  }
  // Otherwise the filter sent a call the table has no rule for (another
  // architecture or number than the sidecar lists): the two disagree, so
  // fail closed. Falling back to the default would turn a kill rule into the
  // default action (`default allow`: into allow) for a calling convention
  // the table does not cover.
  static const SupervisedRule kUnknown = [] {
    SupervisedRule unknown;
    unknown.syscall = "(not in the notification table)";
    unknown.action = SupervisedAction::kKill;
    return unknown;
  }();
  return kUnknown;
}

void NotifyResponder::Record(const SupervisedRule& rule, uint32_t arch, int nr, const uint64_t* args) {
  std::string action = ActionText(rule);
  std::string arch_text = ArchText(arch, nr);
  for (auto& row : denied_) {
    if (row.number == nr && row.arch == arch_text && row.action == action) {
      ++row.count;
      return;
    }
  }
  if (denied_.size() >= kMaxDeniedRows) return;
  DeniedSyscall row;
  row.name = rule.number == nr && rule.arch == arch ? rule.syscall : "#" + std::to_string(nr);
  row.arch = std::move(arch_text);
  row.number = nr;
  for (int i = 0; i < 6; ++i) row.args[i] = args[i];
  row.action = action;
  denied_.push_back(std::move(row));
}

bool NotifyResponder::HandleOne(int listener_fd) {
  // Buffers sized as the running kernel says (seccomp(2) SECCOMP_GET_NOTIF_SIZES).
  static const struct seccomp_notif_sizes sizes = [] {
    struct seccomp_notif_sizes s {};
    if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &s) != 0) {
      s.seccomp_notif = sizeof(struct seccomp_notif);
      s.seccomp_notif_resp = sizeof(struct seccomp_notif_resp);
    }
    return s;
  }();
  alignas(8) unsigned char request_buffer[512] = {};
  alignas(8) unsigned char response_buffer[512] = {};
  if (sizes.seccomp_notif > sizeof(request_buffer) || sizes.seccomp_notif_resp > sizeof(response_buffer)) return false;
  auto* request = reinterpret_cast<struct seccomp_notif*>(request_buffer);
  // ENOENT: the task died before we took its call (the kernel drops it); it
  // never ran, and there is nothing to record.
  if (ioctl(listener_fd, SECCOMP_IOCTL_NOTIF_RECV, request) != 0) return true;
  const auto* args = reinterpret_cast<const uint64_t*>(request->data.args);
  const SupervisedRule& rule = Match(request->data.arch, request->data.nr, args);
  if (broker_ != nullptr && request->data.arch == AUDIT_ARCH_X86_64 && request->data.nr == SYS_connect &&
      rule.action == SupervisedAction::kNotify) {
    broker_->HandleConnect(listener_fd, *request);  // answers it, and records its own denials
    return true;
  }
  // Recorded before any answer: a call we received is in denied_syscalls
  // even when its task dies before the answer (SEND then fails with ENOENT).
  Record(rule, request->data.arch, request->data.nr, args);
  if (rule.action == SupervisedAction::kKill) {
    // No answer at all: the caller kills the sandbox while this task is still
    // blocked inside the syscall, so nothing runs after it. Answering first
    // (even with an error) would let the program go on until the SIGKILL
    // lands: a kill rule would then act like an errno rule plus a delay.
    kill_fired_ = true;
    return false;
  }
  auto* response = reinterpret_cast<struct seccomp_notif_resp*>(response_buffer);
  response->id = request->id;
  switch (rule.action) {
    case SupervisedAction::kLog:
    case SupervisedAction::kAllow:
      // Let the kernel run the syscall as if unfiltered (seccomp_unotify(2):
      // safe here because we do not make a security decision on the args).
      response->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
      break;
    case SupervisedAction::kErrno:
      response->error = -rule.errno_value;
      break;
    case SupervisedAction::kNotify:
      response->error = -EPERM;  // deny when unsure
      break;
    case SupervisedAction::kKill:
      break;  // handled above
  }
  ioctl(listener_fd, SECCOMP_IOCTL_NOTIF_SEND, response);
  return true;
}

std::vector<DeniedSyscall> NotifyResponder::TakeDenied() { return std::move(denied_); }

}  // namespace cocoon::enforcer
