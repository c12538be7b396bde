// The "inline" placement of the prologue guards (guard_prefix.h lists them):
// instead of a prefix every syscall runs through, each guard sits on the
// permitted paths of the guarded syscalls only.
//
// How: the seccomp back end gives each libseccomp rule of a guarded syscall
// a marker action, SCMP_ACT_TRACE(0xc000 + i), standing for "guard i, then
// the rule's real action" (a guarded syscall without rules gets one
// unconditional marker rule for the default action). Cocoon never emits TRACE
// otherwise. After export, every `ret TRACE(marker)` of libseccomp's program
// becomes a `ja` to a small block appended after the program:
//    ld  [24]                     ; ioctl: low 32 bits of the cmd
//    jeq TIOCSTI, deny, 0
//    jeq TIOCLINUX, deny, 0
//    ret <the rule's action>
//  ...
//    ret ERRNO(EAFNOSUPPORT)      ; socket family refusal (when used)
//    ret ERRNO(EPERM)             ; last instruction: always a deny
// Classic BPF only jumps forward (net/core/filter.c bpf_check_classic) and
// `ja` takes a 32-bit offset, so a jump from anywhere in the program to the
// appended blocks is always encodable; the blocks reload what they test.
//
// What it costs: nothing for any syscall the guards do not concern (the
// prefix costs 7-11 instructions on every path), and the guard block (2-5
// instructions) on a guarded syscall's path.
//
// Semantics: exactly the prefix's. Every call of a guarded syscall must
// reach a marker, so the back end uses this placement only when each
// guarded syscall has no rule or an unconditional one (seccomp_backend.cc
// InlineEligible); otherwise, and whenever it is not shorter, the prefix.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "compiler/backends/seccomp/bpf_evaluator.h"
#include "compiler/backends/seccomp/guard_prefix.h"
#include "compiler/common/status.h"

namespace cocoon::backends {

enum class GuardKind : uint8_t { kIoctl, kSeccomp, kClone, kSocket, kFcntl };

// The guard `guards` puts on syscall `name` (clone and unshare share one,
// fcntl and fcntl64 too),
// or false when none does.
bool GuardFor(std::string_view name, const PrefixGuards& guards, GuardKind* kind);

class GuardMarkers {
 public:
  // The libseccomp action (SCMP_ACT_TRACE) standing for guard `kind`, then
  // `ret` (a SECCOMP_RET_* value); one marker per distinct pair.
  uint32_t Marker(GuardKind kind, uint32_t ret);
  bool empty() const { return entries_.empty(); }

  // `program` (libseccomp's export) with every marker return replaced by a
  // jump to its guard block, the blocks appended, the last instruction a
  // deny. Fails on a TRACE return that is not one of these markers.
  Result<BpfProgram> Inline(const BpfProgram& program, const PrefixGuards& guards, uint32_t deny_ret) const;
  // `program` with every marker return replaced by the rule's own return
  // (for the prefix placement, which answers the guards first).
  Result<BpfProgram> Strip(const BpfProgram& program) const;
  // A legend for the PFC text, which shows the markers as TRACE actions.
  std::string Describe(const PrefixGuards& guards, uint32_t deny_ret) const;

 private:
  Result<size_t> Lookup(uint32_t ret) const;  // index of a marker return
  std::vector<std::pair<GuardKind, uint32_t>> entries_;
};

}  // namespace cocoon::backends
