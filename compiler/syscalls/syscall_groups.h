// The shipped table of named syscall groups (systemd-style: @mount, @module,
// @debug, @keyring, @raw-io, @clock, @reboot, @swap, @obsolete, ...), and the
// lookup of syscall names against libseccomp's table.
//
// docs/language.md reproduces this table; a test keeps the two in sync.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/policy_ir.h"

namespace cocoon::syscalls {

struct SyscallGroup {
  std::string_view name;         // with the leading '@'
  std::string_view description;  // one line, for docs and `cocoon explain`
  std::vector<std::string_view> members;  // syscall names and/or other @groups
};

// Every shipped group, sorted by name.
const std::vector<SyscallGroup>& AllGroups();

// nullptr when the group does not exist.
const SyscallGroup* FindGroup(std::string_view name);

// Flattens nested groups; sorted, unique. Members unknown to libseccomp for
// every architecture are dropped. Empty for an unknown group. Computed once
// per process for every group.
const std::vector<std::string>& ExpandGroup(std::string_view name);

// True if libseccomp knows the syscall on at least one of the architectures.
bool IsKnownSyscall(std::string_view name, const std::vector<ir::Arch>& arches);

// Every syscall name libseccomp knows for x86_64 (for did-you-mean).
const std::vector<std::string>& KnownSyscallNames();

// Syscalls the compiler's hardening prologue denies (errno EPERM) unless the
// policy deliberately reopens them: setns, io_uring_*, userfaultfd, bpf,
// perf_event_open, kexec_*, the module calls, open_by_handle_at and the
// keyring calls. Sorted. The checker puts a policy `allow`/`log`/`notify` of
// one of these into ir::Syscalls::reopened (and warns); the back ends keep the
// denial for any name not listed there.
const std::vector<std::string_view>& PrologueDeniedSyscalls();
bool IsPrologueDenied(std::string_view name);
// What `cocoon compile` and `cocoon check` both say about a policy rule that
// reopens one of them: "policy reopens bpf, which the prologue denies by default".
std::string ReopenWarning(std::string_view name);

// The prologue's fixed answer to a syscall, whatever the policy says (no rule
// reopens it), or null: clone3 fails with errno ENOSYS (its flags are behind
// a pointer seccomp cannot read; glibc then falls back to clone). The back
// end adds it (effective_rules.cc); the checker and `explain` say which
// policy rules it overrides (a policy rule wins only with an action that
// ir::ActionOutranks it: the prologue wins ties).
const ir::Action* PrologueFixedAnswer(std::string_view name);

// The argument values the prologue answers the same way whatever the policy
// says (docs/language.md, Prologue). The back end builds its guards from
// these (effective_rules.cc); the checker and `explain` use them to say
// which policy rules never apply.
namespace prologue {
// CLONE_NEWNS|CLONE_NEWCGROUP|CLONE_NEWUTS|CLONE_NEWIPC|CLONE_NEWUSER|
// CLONE_NEWPID|CLONE_NEWNET, as in sandboxed-api's policy.cc.
inline constexpr uint64_t kCloneNewMask = 0x7E020000;
inline constexpr uint64_t kLow32 = 0xffffffffULL;
inline constexpr uint64_t kTiocsti = 0x5412;  // <asm-generic/ioctls.h>
inline constexpr uint64_t kTioclinux = 0x541C;
// <linux/fcntl.h>: F_LINUX_SPECIFIC_BASE + 0. fcntl's cmd is an int (the
// kernel's parameter is `unsigned int cmd`), so only the low 32 bits count.
inline constexpr uint64_t kFSetLease = 1024;
inline constexpr uint64_t kAfNetlink = 16;  // <linux/socket.h>
inline constexpr uint64_t kAfAlg = 38;
inline constexpr uint64_t kAfVsock = 40;
inline constexpr uint64_t kSetModeFilter = 1;         // SECCOMP_SET_MODE_FILTER
inline constexpr uint64_t kFilterFlagNewListener = 8;  // SECCOMP_FILTER_FLAG_NEW_LISTENER
}  // namespace prologue

// One fixed answer of the prologue to a call whose arguments match every
// condition ((arg & mask) == value, kMaskedEq), e.g. ioctl(_, TIOCSTI).
struct PrologueArgGuard {
  std::string_view syscall;
  std::vector<ir::ArgCondition> conditions;
  ir::Action action;
  std::string what;  // "TIOCSTI (pushes input into the terminal)"
};
// Every such guard: clone/unshare with a CLONE_NEW* flag, ioctl TIOCSTI and
// TIOCLINUX, fcntl (and i386's fcntl64) F_SETLEASE, socket AF_VSOCK and
// AF_ALG (and AF_NETLINK when `netlink_refused`: the network off), and
// seccomp creating a listener.
std::vector<PrologueArgGuard> PrologueArgGuards(bool netlink_refused);

// libseccomp's architecture token (SCMP_ARCH_*) and the AUDIT_ARCH_* value the
// kernel puts in seccomp_data.arch, for one IR architecture.
uint32_t ScmpArchToken(ir::Arch arch);
// "x86_64", "x32", "x86", "aarch64" (the names policies and JSON use).
std::string_view ArchName(ir::Arch arch);

// The syscall number of `name` on `arch`, or a negative value when libseccomp
// does not know it there (libseccomp uses values below -1 for multiplexed
// calls such as socket() on x86, which go through socketcall).
int ResolveSyscall(std::string_view name, ir::Arch arch);

// The number the kernel uses for `name` on `arch`: ResolveSyscall's, except
// where libseccomp resolves a multiplexed call to a pseudo number (socket,
// connect, semop, shmget, ... on x86) although the arch also has a direct
// syscall for it (i386 socket is 359 since Linux 4.3): then the direct one,
// on which libseccomp also places the call's rules with their conditions.
// Negative when the arch has no such syscall.
int KernelSyscallNumber(std::string_view name, ir::Arch arch);

}  // namespace cocoon::syscalls
