// A hand-written classic-BPF prefix that runs before libseccomp's program and
// answers for the prologue guards whose rule form is long:
//  - ioctl(fd, TIOCSTI / TIOCLINUX) -> errno(EPERM);
//  - fcntl(fd, F_SETLEASE, ...) (and i386's fcntl64) -> errno(EPERM): a
//    lease on a file the sandbox shares with the host stalls every host
//    writer's open for up to lease-break-time (effective_rules.h). As a
//    rule it cuts `allow fcntl` into masked pieces, like ioctl's: strict's
//    longest path grew from 24 to 109 instructions;
//  - seccomp(SECCOMP_SET_MODE_FILTER, flags with SECCOMP_FILTER_FLAG_NEW_LISTENER)
//    -> errno(EPERM);
//  - clone / unshare with any CLONE_NEW* bit (one jset on the flags' low half,
//    where every CLONE_NEW* bit lives; as rules: 7 masked compares, the
//    longest path of strict's filter) -> errno(EPERM);
//  - socket(AF_VSOCK / AF_ALG, and AF_NETLINK with the network off, ...) ->
//    errno(EAFNOSUPPORT), what a kernel without the family answers, so
//    programs fall back cleanly (effective_rules.h NetlinkSockets). As
//    rules the refusal of the first two cut `allow socket` into ~120 masked
//    pieces: 838 instructions and a 370-instruction path for strict.
//
// Why not libseccomp rules: libseccomp 2.5.4 cannot say "allow ioctl except
// these two cmd values" (an unconditional rule swallows the conditional ones
// of the same syscall, rule_algebra.h), so the denial had to be spelled as
// ~130 disjoint masked-compare allow pieces: 361 instructions on ioctl's
// path and most of the filter's build time. The seccomp listener guard (a
// conjunction over two arguments) had the same problem: 34 pieces and the
// longest path of strict's filter. The prefix costs 5 instructions for any
// other syscall of a matching architecture and 2 for a foreign one.
//
// Why prepending is safe: classic BPF jumps are relative and forward-only
// (net/core/filter.c bpf_check_classic), so libseccomp's offsets stay valid
// when instructions are put in front of its program, and its program reloads
// everything it tests (its first instruction loads seccomp_data.arch).
//
// Shape, per audit architecture the filter accepts (x86_64 and x32 share
// AUDIT_ARCH_X86_64 and are checked against both ioctl numbers):
//    ld  [4]                      ; seccomp_data.arch
//    jeq AUDIT_ARCH_..., 0, next  ; foreign arch: next block / libseccomp
//    ld  [0]                      ; seccomp_data.nr
//    jeq __NR_ioctl, ioctl, 0
//    jeq __NR_seccomp, seccomp, 0
//    jeq __NR_clone, clone, 0
//    jeq __NR_unshare, clone, 0
//    jeq __NR_socket, socket, 0
//    jeq __NR_fcntl, fcntl, out   ; and __NR_fcntl64 on i386
//  ioctl:
//    ld  [24]                     ; low 32 bits of args[1] (little-endian)
//    jeq TIOCSTI, deny, 0
//    jeq TIOCLINUX, deny, out
//  seccomp:
//    ld  [16]                     ; low 32 bits of args[0]: the operation
//    jeq SECCOMP_SET_MODE_FILTER, 0, out
//    ld  [24]                     ; low 32 bits of args[1]: the flags
//    jset SECCOMP_FILTER_FLAG_NEW_LISTENER, deny, out
//  clone:
//    ld  [16]                     ; low 32 bits of args[0]: the flags
//    jset 0x7E020000, deny, out
//  socket:
//    ld  [16]                     ; low 32 bits of args[0]: the family
//    jeq AF_VSOCK, deny_af, 0
//    jeq AF_ALG, deny_af, out
//  fcntl:
//    ld  [24]                     ; low 32 bits of args[1]: the cmd
//    jeq F_SETLEASE, deny, out
// and, in the AUDIT_ARCH_I386 block with `arch x86` (effective_rules.h
// I386MultiplexerNames), before the other numbers:
//    jeq __NR_socketcall, deny_mux, 0
//    jeq __NR_ipc, deny_mux, 0
//  deny:    ret ERRNO(EPERM)
//  deny_af: ret ERRNO(EAFNOSUPPORT)   (only when the socket guard is on)
//  deny_mux: ret ERRNO(ENOSYS)        (only with the i386 multiplexer guard)
//  out:  (instruction 0 of libseccomp's program)
// The kernel truncates ioctl's and fcntl's cmd, seccomp's op and flags, clone's and
// unshare's flags on their way to 32-bit parameters (fs/ioctl.c `unsigned
// int, cmd`; fs/fcntl.c `unsigned int, cmd`; kernel/seccomp.c `unsigned int, op, unsigned int, flags`;
// net/socket.c `int, family`; kernel/fork.c: clone's flags are an unsigned
// long, but every CLONE_NEW* bit is in the low half, so a set bit there is
// denied whatever the high half says), so only low halves are compared:
// 0x1_00005412 is TIOCSTI too.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/backends/seccomp/bpf_evaluator.h"
#include "compiler/common/status.h"
#include "compiler/ir/policy_ir.h"

namespace cocoon::backends {

// The AUDIT_ARCH_* value the kernel puts in seccomp_data.arch for `arch`
// (x32 reports AUDIT_ARCH_X86_64 and sets the x32 bit in nr).
uint32_t AuditArch(ir::Arch arch);

// The guards the prefix carries (EffectiveSyscalls in PrologueGuardForm::kBpfPrefix).
struct PrefixGuards {
  std::vector<uint32_t> ioctl_denied_cmds;  // low 32 bits of ioctl's arg 1
  bool seccomp_listener = false;            // deny SET_MODE_FILTER + NEW_LISTENER
  uint32_t clone_new_mask = 0;              // deny clone/unshare with any of these flag bits (0: off)
  std::vector<uint32_t> socket_denied_families;  // low 32 bits of socket's arg 0 -> kSocketFamilyDenyRet
  bool i386_multiplexers = false;  // i386 socketcall and ipc -> MultiplexerDenyRet (effective_rules.h)
  std::vector<uint32_t> fcntl_denied_cmds;  // low 32 bits of fcntl's (fcntl64's) arg 1: F_SETLEASE
  bool empty() const {
    return ioctl_denied_cmds.empty() && !seccomp_listener && clone_new_mask == 0 && socket_denied_families.empty() &&
           !i386_multiplexers && fcntl_denied_cmds.empty();
  }
};

// What the prefix answers a refused socket family: errno(EAFNOSUPPORT).
uint32_t SocketFamilyDenyRet();

// What the prefix answers the i386 socketcall and ipc multiplexers:
// errno(ENOSYS), as for clone3 (arguments behind a pointer).
uint32_t MultiplexerDenyRet();

// The prefix for `arches` answering `deny_ret` for the guarded calls (and
// SocketFamilyDenyRet() for the socket families); every
// other path falls through to the instruction right after it. Empty when
// there is nothing to guard.
Result<BpfProgram> BuildGuardPrefix(const std::vector<ir::Arch>& arches, const PrefixGuards& guards,
                                    uint32_t deny_ret);

// A readable description of the prefix, appended to the PFC text.
std::string DescribeGuardPrefix(const std::vector<ir::Arch>& arches, const PrefixGuards& guards, uint32_t deny_ret,
                                size_t instructions);

}  // namespace cocoon::backends
