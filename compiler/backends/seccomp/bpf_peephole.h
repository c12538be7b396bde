// A small, conservative clean-up of libseccomp's classic-BPF output that
// shortens the paths the kernel runs, applied before the guards are placed.
// Every program Cocoon emits is still checked afterwards against its rules
// (seccomp_verify.h), so a mistake here fails the compile, never the filter.
//
// Two rewrites, both removing instructions (so jumps only get shorter and
// stay encodable):
//  - a reload: `ld [k]` where every path reaching it already left
//    seccomp_data[k] in A (libseccomp 2.5.4 reloads the syscall number right
//    after its x32 and -1 checks: one instruction on every path);
//  - a test that cannot fail: `ld [k]; and #0; jeq #0, +0, ...` is always
//    true, and is dropped when its fall-through target overwrites A.
//    libseccomp emits it for the upper half of a 64-bit masked compare whose
//    mask has no upper bits (personality's low-32 compare: 3 instructions
//    on personality's path, strict's longest).
#pragma once

#include "compiler/backends/seccomp/bpf_evaluator.h"

namespace cocoon::backends {

// `program` must have passed ValidateBpf; the result does too.
BpfProgram RemoveRedundantInstructions(const BpfProgram& program);

}  // namespace cocoon::backends
