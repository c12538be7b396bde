// Rebuilds the part of a seccomp program that decides on the syscall number
// alone as a binary search over number ranges.
//
// libseccomp 2.5.4 gives every syscall its own compare: a binary tree of
// `jgt` nodes whose leaves are runs of `jeq nr` (strict: 494 instructions).
// But which action a number gets changes only ~90 times between 0 and 470
// (allowed syscalls come in long runs), so a search over those ranges needs
// ~90 compares in all and ~7 on any path. The kernel verifies and JITs every
// instruction when the filter is loaded, once per launch (~0.5 us each on
// this VM: strict's seccomp() took 0.2-0.28 ms of a 4-5 ms launch), and runs
// the path on every syscall.
//
// How: the instructions reached with the syscall number in A that only
// compare A with constants (jeq/jgt/jge, and ja) form the dispatch region.
// Their outcomes are constant between consecutive compare constants, so the
// region is a function from number ranges to exits (a RET, or the first
// instruction outside the region: argument checks, which still find the
// number in A). That function is evaluated range by range and emitted as a
// balanced search; everything outside the region is kept, in order.
//
// Conservative: any shape it does not expect returns nullopt and the caller
// keeps the program it had. The result is still checked against the rules
// (seccomp_verify.h) like every program Cocoon emits.
#pragma once

#include <optional>

#include "compiler/backends/seccomp/bpf_evaluator.h"

namespace cocoon::backends {

// `program` must have passed ValidateBpf. The result (when shorter) does too.
std::optional<BpfProgram> CompressSyscallDispatch(const BpfProgram& program);

}  // namespace cocoon::backends
