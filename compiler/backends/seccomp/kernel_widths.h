// Policy rules rewritten to compare what the kernel reads of a narrow
// syscall parameter (syscalls::KernelArgBits: 32-bit `int`/`unsigned int`,
// 16-bit `umode_t`), not the whole 64-bit register seccomp sees.
//
// Why: the kernel casts each argument register to the declared parameter
// type, so socket(0x100000010, SOCK_RAW, 0) opens an AF_NETLINK (16) socket.
// A 64-bit `deny socket if arg0 == AF_NETLINK` never sees it (confirmed
// under the real kernel). What each action needs, for a parameter of w bits
// (W = 2^w - 1, the "upper bits" are those above W):
//
//  - allow: match only values whose kernel reading the rule allows, so the
//    rule may match less, never more (fails closed). `==`, masked `==`, `<`
//    and `<=` already do; `!=`, `>` and `>=` would also match
//    0x1_00000005 for `!= 5`, so they are cut to values with zero upper
//    bits (a few masked-compare rules, one per aligned block of the range).
//  - kill, trap, errno, notify (stricter than anything they can be carved
//    out of): match every value whose kernel reading matches, and at least
//    what the 64-bit comparison matched. `==` and masked `==` compare the low
//    w bits of both sides; `<`, `<=` become masked blocks that ignore the
//    upper bits; `!=`, `>`, `>=` stay as written (they already match every
//    value with upper bits set, beyond what the kernel reads: fail closed).
//  - log (it allows, and it is stricter than allow): when the syscall is
//    permitted anyway underneath it (a permissive default, or an
//    unconditional allow/log of it), as kill & co., so no call the kernel
//    reads as matching escapes the record; otherwise `==`, masked `==`, `<`,
//    `<=` as kill & co. (exact on the low bits) and `!=`, `>`, `>=` as allow,
//    so it never allows what the default would deny.
//
// A masked compare whose mask has no bit below w tests only bits the kernel
// ignores; it is kept as written (`deny ioctl if (arg1 & 0xffffffff00000000)
// != 0` still denies such calls). A `!=`/`<`/`<=`/`>`/`>=` constant wider
// than the parameter is an error: what the kernel reads can never (or
// always) satisfy it, which is not what the author meant.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/policy_ir.h"

namespace cocoon::backends {

struct KernelWidthFit {
  std::vector<ir::SyscallRule> rules;  // replacing the rule (empty: it can never match)
  std::string error;                   // non-empty: refuse the policy
};

// What lies under a log rule: kAllow when the policy permits the syscall
// anyway (permissive default, or an unconditional allow/log rule of it).
enum class LogOver { kAllow, kDeny };

// `rule` unchanged (one element) when it has no condition on a narrow
// parameter, or when its conditions do not normalize (the conflict
// resolution reports those).
KernelWidthFit FitToKernelWidths(const ir::SyscallRule& rule, LogOver log_over);

}  // namespace cocoon::backends
