// Translation validation: checks a BPF program (guard prefix + libseccomp) against the
// effective rules it was built from, by running the userspace evaluator on
// the boundary values of every condition.
//
// Why: libseccomp 2.5.4 miscompiles some rule sets. Found by
// tests/backends/seccomp's random differential test: for read() with rules
// {a0 <= 2 && (a1 & 0xff) == 0xff -> notify} and {a0 > 0x100000000 -> allow},
// the generated code falls from the first chain (after loading a1 into the
// accumulator) into the second chain's "a0.hi32 > 1" test, which assumes the
// accumulator still holds a0.hi32, so read(0, 2, ...) is allowed. The PFC
// dump is right; the BPF is not. Cocoon never emits a program it has not
// checked this way.
#pragma once

#include <string>

#include "compiler/backends/seccomp/bpf_evaluator.h"
#include "compiler/backends/seccomp/effective_rules.h"
#include "compiler/common/status.h"

namespace cocoon::backends {

// `expected_ret(action)` maps an IR action to the SECCOMP_RET_* value the
// program should return (routing applied). `ioctl_deny_ret` is what ioctl
// with a cmd in rules.ioctl_denied_cmds (low 32 bits of arg 1) must get,
// and fcntl / fcntl64 with one in rules.fcntl_denied_cmds_in_prefix, before any rule (the guard prefix and the inline guards of guard_inline.h
// give the same answers). Checks the rules and the prefix's guards on every
// architecture of the filter (i386 with the zero-extended 32-bit arguments
// its tasks pass, and its socketcall/ipc multiplexers refused, see
// effective_rules.h); returns the first disagreement, and the name of the
// syscall whose rules it is about in `*failed_syscall` (when non-null and
// the disagreement is about a syscall's rules).
Status VerifyBpfAgainstRules(const BpfProgram& program, const EffectiveSyscalls& rules,
                             uint32_t (*expected_ret)(const ir::Action&, bool routed), bool routed,
                             uint32_t ioctl_deny_ret, std::string* failed_syscall = nullptr);

// The syscalls whose rules VerifyBpfAgainstRules would refuse as too large
// to verify completely (one problem per syscall, named as in the policy):
// the front end reports them at `cocoon check`, at the rule's statement,
// rather than leaving them to fail `cocoon compile`. Evaluates nothing.
std::vector<ir::SyscallRuleProblem> UnverifiableSyscalls(const EffectiveSyscalls& rules);

}  // namespace cocoon::backends
