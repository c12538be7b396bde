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
EffectiveSyscalls ComputeEffectiveSyscalls(const ir::Syscalls& policy);

}  // namespace cocoon::backends
