// The syscall rules every Cocoon filter enforces, whatever the target: the
// compiler-emitted hardening prologue merged with the policy's own rules.
// The seccomp BPF back end and the OCI/Kubernetes back ends both start from
// this list, so the two can never disagree about what is denied.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/policy_ir.h"

namespace cocoon::backends {

struct EffectiveSyscalls {
  ir::Action default_action;
  std::vector<ir::SyscallRule> rules;  // prologue + policy, conflict-free, sorted
  std::vector<ir::Arch> architectures;
  std::vector<std::string> warnings;   // e.g. "policy reopens bpf"
  // Non-empty when the rules cannot be expressed faithfully as seccomp rules
  // (e.g. `arg0 > 2 and arg0 < 9`: one comparison per argument). Back ends
  // must refuse to emit anything then (fail closed).
  std::vector<std::string> errors;
};

// Prologue (always emitted, see docs/language.md#prologue):
//  - clone3 -> errno(ENOSYS): its flags sit behind a pointer seccomp cannot read;
//  - clone/unshare with any CLONE_NEW* bit (mask 0x7E020000) -> errno(EPERM);
//  - setns, io_uring_*, userfaultfd, bpf, perf_event_open, kexec_*, module
//    calls, open_by_handle_at, keyctl/add_key/request_key -> errno(EPERM)
//    unless the policy reopened them (warns);
//  - personality limited to 0, 8, 0x20000, 0x20008, 0xffffffff;
//  - ioctl TIOCSTI / TIOCLINUX -> errno(EPERM);
//  - seccomp(SECCOMP_SET_MODE_FILTER) with SECCOMP_FILTER_FLAG_NEW_LISTENER -> errno(EPERM).
//
// Reopening: a prologue-denied name is reopened when it is listed in
// policy.reopened, or when the policy names it singly (rule.group empty) with
// a non-denying action (allow/log/notify). Reached only through a group, the
// prologue denial stays and a warning says so.
//
// personality: non-denying policy rules are narrowed to the safe values
// (other values fall to the default action); with a permissive default, every
// value with a low-32 bit outside 0x20008 gets errno(EPERM) (the 0xffffffff
// query is then denied too).
//
// Conflict resolution (deterministic, fail closed): where rules of one
// syscall overlap with different actions, the more restrictive action wins:
// kill > trap > errno > notify > log > allow; between two errno actions the
// prologue's wins, then the lower errno value. Each rule is cut down to the
// argument space no higher-ranked rule claims (rule_algebra.h), so the
// returned rules of one syscall are pairwise disjoint unless they have the
// same action, hold at most one comparison per argument, and none has the
// default action. libseccomp then cannot misorder them.
EffectiveSyscalls ComputeEffectiveSyscalls(const ir::Syscalls& policy);

// The restrictiveness rank used above (higher is more restrictive).
int ActionRank(const ir::Action& action);

}  // namespace cocoon::backends
