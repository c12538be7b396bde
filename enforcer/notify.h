// Seccomp user notification (issue 4, "Denied syscalls"): the supervisor's
// answers to the syscalls the filter routed to SECCOMP_RET_USER_NOTIF (the
// policy's log, notify and kill rules; see compiler/backends/seccomp/
// seccomp_backend.h for the sidecar format). Allowed syscalls never reach
// here: the filter answers them in the kernel.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/common/status.h"
#include "enforcer/outcome.h"

namespace cocoon::enforcer {

class NetBroker;

enum class SupervisedAction { kLog, kNotify, kKill, kErrno, kAllow };

struct SupervisedCondition {
  int arg = 0;
  std::string op;  // eq ne lt le gt ge masked_eq
  uint64_t value = 0;
  uint64_t mask = 0;
};

struct SupervisedRule {
  std::string syscall;
  uint32_t arch = 0;  // AUDIT_ARCH_*, as seccomp_data.arch reports it
  int number = -1;    // on that arch (an x32 call's carries __X32_SYSCALL_BIT)
  SupervisedAction action = SupervisedAction::kKill;
  int errno_value = 0;
  std::vector<SupervisedCondition> conditions;
};

// A calling convention the filter admits: seccomp_data.arch, and whether its
// numbers carry __X32_SYSCALL_BIT (x32 shares x86_64's audit arch).
struct AdmittedArch {
  uint32_t arch = 0;
  bool x32 = false;
};

struct NotifyTable {
  std::vector<SupervisedRule> rules;  // first match wins
  SupervisedRule default_rule;        // when nothing matches
  bool needs_listener = false;
  // The sidecar's "default_supervised": the filter routes every call no rule
  // names (on an admitted arch) to the listener, so such a call gets
  // default_rule. When false, a notification no rule lists means the filter
  // and the table disagree, and it is killed.
  bool default_supervised = false;
  std::vector<AdmittedArch> architectures;  // the sidecar's "architectures"
};

// Parses linux.seccomp.json.
Result<NotifyTable> ParseSeccompSidecar(std::string_view json);

// Receives and answers notifications; records coalesced DeniedSyscall rows.
class NotifyResponder {
 public:
  explicit NotifyResponder(NotifyTable table) : table_(std::move(table)) {}
  // Handles one pending notification. Returns false when a kill rule fired:
  // that notification is left unanswered, and the caller must kill the
  // sandbox at once (the offending task stays blocked in the syscall).
  bool HandleOne(int listener_fd);
  std::vector<DeniedSyscall> TakeDenied();
  // Network allow-lists: connect(2) notifications whose rule says "notify"
  // go to the broker (net_broker.h) instead of the EPERM answer. Not owned.
  void AttachBroker(NetBroker* broker) { broker_ = broker; }
  bool kill_fired() const { return kill_fired_; }

 private:
  const SupervisedRule& Match(uint32_t arch, int nr, const uint64_t* args) const;
  void Record(const SupervisedRule& rule, uint32_t arch, int nr, const uint64_t* args);

  NotifyTable table_;
  std::vector<DeniedSyscall> denied_;
  bool kill_fired_ = false;
  NetBroker* broker_ = nullptr;
};

}  // namespace cocoon::enforcer
