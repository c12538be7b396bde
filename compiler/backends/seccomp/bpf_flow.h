// Control and data flow of a classic-BPF seccomp program, shared by the
// rewrites that run on libseccomp's output (bpf_peephole.h, bpf_dispatch.h).
// Classic BPF only jumps forward, so one pass in program order sees every
// predecessor of an instruction before the instruction itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "compiler/backends/seccomp/bpf_evaluator.h"

namespace cocoon::backends {

// The instructions control can reach next from `pc` (none after a RET).
std::vector<size_t> BpfSuccessors(const BpfProgram& program, size_t pc);

// What BpfLoadedOffsets says A holds on entry to an instruction.
inline constexpr int64_t kBpfAUnknown = -1;  // nothing known (paths disagree, or not a load)
inline constexpr int64_t kBpfAUnset = -2;    // no path reaches the instruction

// For each instruction: the seccomp_data offset whose word A holds on entry
// on every path (an `ld [k]` and any jumps since), else kBpfAUnknown.
std::vector<int64_t> BpfLoadedOffsets(const BpfProgram& program);

}  // namespace cocoon::backends
