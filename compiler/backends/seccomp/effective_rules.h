// The syscall rules every Cocoon filter enforces, whatever the target: the
// compiler-emitted hardening prologue merged with the policy's own rules.
// The seccomp BPF back end and the OCI/Kubernetes back ends both start from
// this list, so the two can never disagree about what is denied.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
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
  // must refuse to emit anything then (fail closed); the checker reports
  // them at the policy's rule for `syscall` (SyscallRuleProblems below).
  struct Error {
    std::string syscall;
    std::string message;
    bool operator==(const Error&) const = default;
  };
  std::vector<Error> errors;
  // PrologueGuardForm::kBpfPrefix only: ioctl commands (compared on the low 32
  // bits of arg 1) that the BPF back end denies with errno(EPERM) in a
  // hand-written prefix that runs before libseccomp's program. The prologue's
  // ioctl rules are then absent from `rules`. Empty in kRules form.
  std::vector<uint32_t> ioctl_denied_cmds;
  // kBpfPrefix only: seccomp(SECCOMP_SET_MODE_FILTER, flags with
  // SECCOMP_FILTER_FLAG_NEW_LISTENER) -> errno(EPERM) in the same prefix
  // (the prologue's rule for it is then absent from `rules`).
  bool seccomp_listener_in_prefix = false;
  // kBpfPrefix only: clone/unshare flags bits (CLONE_NEW*) denied with
  // errno(EPERM) in the same prefix; 0 when the guard is in `rules`.
  uint32_t clone_new_mask_in_prefix = 0;
  // kBpfPrefix only: socket families (low 32 bits of arg 0: AF_VSOCK,
  // AF_ALG, and AF_NETLINK under NetlinkSockets::kRefused) refused with
  // errno(EAFNOSUPPORT) in the same prefix; empty when
  // the refusal is in `rules` (as rules it cuts `allow socket` into ~120
  // masked pieces, the longest path of strict's filter).
  std::vector<uint32_t> socket_denied_families_in_prefix;
  // kBpfPrefix only, with `arch x86`: the i386 socketcall and ipc
  // multiplexers get MultiplexerDenyRet() (errno ENOSYS) in the same prefix,
  // whatever the rules say (see I386MultiplexerNames below). In kRules form
  // they are prologue rules instead.
  bool i386_multiplexers_in_prefix = false;
  // kBpfPrefix only: fcntl / fcntl64 commands (low 32 bits of arg 1: the cmd
  // is an int) refused with errno(EPERM) in the same prefix: F_SETLEASE.
  // Rootless, the sandbox owns the caller's files, a read lease needs only a
  // read-only fd, and a lease stalls every host process (root included) that
  // opens the file for writing for up to lease-break-time (45 s), while
  // SIGIO tells the sandbox who did (fcntl(2) "Leases"). Empty when the
  // refusal is in `rules`.
  std::vector<uint32_t> fcntl_denied_cmds_in_prefix;
};

// The i386 multiplexers socketcall(2) and ipc(2): with SCMP_ARCH_X86,
// libseccomp adds every rule of a socket call (socket, connect, ...) or SysV
// IPC call (semop, shmget, ...) to the multiplexer too, with arg0 rewritten
// to `== SYS_SOCKET` (etc.) and the call's own argument conditions dropped:
// its real arguments sit in memory behind arg1, which seccomp cannot read.
// So `allow socket if arg0 == AF_UNIX`, and the AF_VSOCK/AF_ALG refusal,
// were bypassed by socketcall(SYS_SOCKET, {AF_INET, ...}) through int 0x80.
// Cocoon refuses both multiplexers outright on i386 (errno ENOSYS, as for
// clone3); i386 programs must use the direct socket and IPC syscalls
// (Linux 4.3+), which seccomp filters by argument as usual.
const std::vector<std::string_view>& I386MultiplexerNames();

// How the prologue's ioctl TIOCSTI/TIOCLINUX denial (and, the same way, its
// seccomp NEW_LISTENER denial: 34 pieces as rules) is expressed.
//
// Why two forms: libseccomp cannot say "allow ioctl except these two cmd
// values" (an unconditional rule swallows the conditional ones of the same
// syscall, see rule_algebra.h), so as rules the denial turns the policy's
// `allow ioctl` into ~130 disjoint masked-compare pieces. That is the only
// faithful form for OCI/Kubernetes JSON (runc/crun feed it to libseccomp),
// but in BPF it costs ~300 extra instructions on ioctl's path and most of the
// build time, where a 9-instruction prefix does the same job.
enum class PrologueGuardForm {
  kRules,      // masked-compare rules in `rules` (OCI, Kubernetes)
  kBpfPrefix,  // `ioctl_denied_cmds`, for seccomp_backend's BPF prefix
};

// Prologue (always emitted, see docs/language.md#prologue):
//  - clone3 -> errno(ENOSYS): its flags sit behind a pointer seccomp cannot read;
//  - clone/unshare with any CLONE_NEW* bit (mask 0x7E020000) -> errno(EPERM);
//  - setns, io_uring_*, userfaultfd, bpf, perf_event_open, kexec_*, module
//    calls, open_by_handle_at, keyctl/add_key/request_key -> errno(EPERM)
//    unless the policy reopened them (warns);
//  - personality limited to 0, 8, 0x20000, 0x20008, 0xffffffff (low 32 bits:
//    the kernel's parameter is an unsigned int);
//  - socket(AF_VSOCK / AF_ALG) -> errno(EAFNOSUPPORT), and socket(AF_NETLINK)
//    too under NetlinkSockets::kRefused (the network off, see below);
//  - ioctl TIOCSTI / TIOCLINUX -> errno(EPERM);
//  - fcntl / fcntl64 F_SETLEASE (1024, low 32 bits of arg 1) -> errno(EPERM):
//    a lease on a file shared with the host stalls host writers (see
//    EffectiveSyscalls::fcntl_denied_cmds_in_prefix);
//  - seccomp(SECCOMP_SET_MODE_FILTER) with SECCOMP_FILTER_FLAG_NEW_LISTENER -> errno(EPERM);
//  - with `arch x86`: the i386 socketcall and ipc multiplexers -> errno(ENOSYS)
//    (kRules: errno(EPERM) when the default already is errno(ENOSYS), since
//    runc and libseccomp drop a rule equal to the default, and the
//    multiplexer would then keep libseccomp's folded socket/IPC rules);
//    a warning says so.
//
// Reopening: a prologue-denied name is reopened when it is listed in
// policy.reopened, or when the policy names it singly (rule.group empty) with
// a non-denying action (allow/log/notify). Reached only through a group, the
// prologue denial stays and a warning says so.
//
// personality: non-denying policy rules are narrowed to the safe values,
// compared on the low 32 bits (other values fall to the default action); with
// a permissive default (allow, log, notify), every value whose low 32 bits
// are not a safe value gets errno(EPERM), as moby's profile answers them
// (32 single-compare rules, effective_rules.cc AddPersonalityRefusal); the
// 0xffffffff query stays allowed.
//
// Kernel widths: before anything else, each policy rule's conditions on a
// parameter the kernel reads as 32 (or 16) bits are rewritten to compare
// what the kernel reads (kernel_widths.h); a comparison that cannot be is
// an error in `errors`.
//
// Conflict resolution (deterministic, fail closed): where rules of one
// syscall overlap with different actions, the more restrictive action wins:
// kill > trap > errno > notify > log > allow; between two errno actions the
// prologue's wins, then the lower errno value. Each rule is cut down to the
// argument space no higher-ranked rule claims (rule_algebra.h), so the
// returned rules of one syscall are pairwise disjoint unless they have the
// same action, hold at most one comparison per argument, and none has the
// default action. libseccomp then cannot misorder them.
//
// kBpfPrefix falls back to kRules (per guard) when a policy ioctl / seccomp
// / fcntl rule outranks errno(EPERM) (kill, trap): the rule algebra then decides.
// Otherwise policy ioctl (fcntl, fcntl64) rules that pin arg 1's low 32 bits
// to a denied cmd (strict's own `deny ioctl if arg1 == TIOCSTI ...`) are
// dropped: the prefix answers those calls first, and kept they would split
// `allow ioctl` (`allow fcntl`) again.
//
// ConnectRouting::kSupervisor (`network allow { ... }` policies only): every
// connect(2) the policy permits (allow/log rules, or a permissive default)
// is routed to SECCOMP_RET_USER_NOTIF instead, so the enforcer's connect
// broker (enforcer/net_broker.h) decides. Rules that deny connect still win
// (errno/kill outrank notify). kFilter leaves the rules unchanged, so the
// filters of every other policy stay byte-identical.
enum class ConnectRouting { kFilter, kSupervisor };

// Whether the prologue refuses socket(AF_NETLINK, ...) with
// errno(EAFNOSUPPORT), like AF_VSOCK and AF_ALG. A netlink socket's receive queue
// is charged to no memory cgroup (v1 or v2): a review queued ~1.9 GB of
// unread NETLINK_USERSOCK messages from a sandbox whose 64 MiB memory group
// showed 0 (SO_RCVBUF clamps to 2 x rmem_max, ~8 MiB a socket; strict allows
// 32 processes x 256 fds, ~60 GiB), and NETLINK_ROUTE alone does the same
// (unread NLM_F_ACK errors echo each request). With the network off the
// sandbox's namespace holds only a loopback the enforcer brings up itself
// (with an ioctl, enforcer/net.cc), so netlink has nothing a program needs:
// glibc's getaddrinfo falls back when it cannot open one (AI_ADDRCONFIG then
// assumes IPv4 and IPv6); getifaddrs, if_nameindex and Node's
// os.networkInterfaces() fail with EAFNOSUPPORT instead of listing `lo`. With the
// network on netlink stays: `ip`, getifaddrs and interface lookups are
// real there, and docs/security.md says its queues are not charged to the
// memory limit. Decided by the policy's network, never by its syscall
// rules, so a child profile that allows `socket` (or `default allow`) keeps
// the refusal, and one that turns the network on loses it.
enum class NetlinkSockets { kRefused, kAllowed };
// For the OCI/Kubernetes profile: refused with the network off only. One
// profile serves both, and a Kubernetes allow-list is a NetworkPolicy on
// the pod's real network, where interface lookups are real.
NetlinkSockets NetlinkSocketsFor(const ir::Network& network);
// For `cocoon enforce`'s filter: refused unless the network is on. An
// allow-list runs in the same loopback-only namespace as the network off
// (the connect broker reaches the host from the supervisor,
// docs/security.md "Network allow-lists"), so netlink has nothing to report
// there either and only its uncharged queues would be left.
NetlinkSockets EnforcerNetlinkSocketsFor(const ir::Network& network);

// `netlink` defaults to the refusal, as ir::Network defaults to the network
// off: a caller that forgets it fails closed. The back ends pass
// NetlinkSocketsFor(policy.network).
EffectiveSyscalls ComputeEffectiveSyscalls(const ir::Syscalls& policy,
                                           PrologueGuardForm ioctl_form = PrologueGuardForm::kRules,
                                           ConnectRouting connect = ConnectRouting::kFilter,
                                           NetlinkSockets netlink = NetlinkSockets::kRefused);

// The two forms one `cocoon compile --target all` needs, computed together:
// `bpf` is ComputeEffectiveSyscalls(policy, kBpfPrefix, bpf_connect, netlink)
// (the seccomp back end), `rules` is ComputeEffectiveSyscalls(policy, kRules,
// kFilter, netlink) (OCI, Kubernetes). Equal to those two calls; a syscall whose
// candidate rules are the same in both forms (all but the guarded ioctl,
// fcntl, seccomp, clone, unshare, socket and, for allow-lists, connect) is resolved
// once.
struct EffectiveSyscallForms {
  EffectiveSyscalls bpf;
  EffectiveSyscalls rules;
};
EffectiveSyscallForms ComputeEffectiveSyscallForms(const ir::Syscalls& policy, ConnectRouting bpf_connect,
                                                   NetlinkSockets netlink = NetlinkSockets::kRefused);

// The restrictiveness rank used above (higher is more restrictive); the
// checker uses the same one (policy_ir.h).
using ir::ActionRank;

}  // namespace cocoon::backends
