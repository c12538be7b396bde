// A hand-written classic-BPF prefix that denies ioctl(fd, TIOCSTI/TIOCLINUX)
// before libseccomp's program runs.
//
// Why not libseccomp rules: libseccomp 2.5.4 cannot say "allow ioctl except
// these two cmd values" (an unconditional rule swallows the conditional ones
// of the same syscall, rule_algebra.h), so the denial had to be spelled as
// ~130 disjoint masked-compare allow pieces: 361 instructions on ioctl's
// path and most of the filter's build time. The prefix costs 4 instructions
// for any other syscall of a matching architecture and 2 for a foreign one.
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
//    jeq __NR_ioctl, 0, out
//    ld  [24]                     ; low 32 bits of args[1] (little-endian)
//    jeq TIOCSTI, deny, 0
//    jeq TIOCLINUX, deny, out
//  deny: ret ERRNO(EPERM)
//  out:  (instruction 0 of libseccomp's program)
// The kernel truncates ioctl's cmd to unsigned int (fs/ioctl.c: `unsigned
// int, cmd`), so only the low half is compared: 0x1_00005412 is TIOCSTI too.
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

// The prefix for `arches` denying `denied_cmds` with `deny_ret`; every other
// path falls through to the instruction right after it. Empty when
// `denied_cmds` is empty.
Result<BpfProgram> BuildIoctlPrefix(const std::vector<ir::Arch>& arches, const std::vector<uint32_t>& denied_cmds,
                                    uint32_t deny_ret);

// A readable description of the prefix, appended to the PFC text.
std::string DescribeIoctlPrefix(const std::vector<ir::Arch>& arches, const std::vector<uint32_t>& denied_cmds,
                                uint32_t deny_ret, size_t instructions);

}  // namespace cocoon::backends
