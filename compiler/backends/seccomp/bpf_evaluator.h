// A userspace model of the kernel's seccomp classic-BPF interpreter, a
// validator with the kernel's rules (net/core/filter.c sk_chk_filter plus
// kernel/seccomp.c seccomp_check_filter), and a static analysis of the
// longest path to each kind of return. Used by tests (fake syscalls against a
// compiled filter, as Chromium's bpf_dsl tests do), for the stats Cocoon
// reports, and by the fuzzer.
#pragma once

#include <linux/filter.h>

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "compiler/common/status.h"

namespace cocoon::backends {

// Same layout as the kernel's struct seccomp_data (<linux/seccomp.h>).
struct SeccompData {
  int32_t nr = 0;
  uint32_t arch = 0;
  uint64_t instruction_pointer = 0;
  uint64_t args[6] = {0, 0, 0, 0, 0, 0};
};
static_assert(sizeof(SeccompData) == 64, "must match struct seccomp_data");

using BpfProgram = std::vector<sock_filter>;

// Raw bytes (linux.seccomp.bpf) <-> instructions.
Result<BpfProgram> ParseBpf(std::string_view bytes);

// Checks what the kernel checks when loading: 1..4096 instructions, only the
// opcodes seccomp accepts, aligned in-range loads of seccomp_data, scratch
// memory indices < 16, jumps inside the program, no division by constant
// zero, and a RET as the last instruction.
Status ValidateBpf(const BpfProgram& program);

struct BpfEvaluation {
  uint32_t ret = 0;         // the SECCOMP_RET_* value returned
  size_t executed = 0;      // instructions run, the RET included
};

// One ALU operation (BPF_OP of the opcode) and one conditional jump's test,
// as the kernel computes them (division by zero gives 0, shifts past 31 give 0).
uint32_t BpfAlu(uint16_t op, uint32_t a, uint32_t operand);
bool BpfJumpTaken(uint16_t op, uint32_t a, uint32_t operand);

// Runs the program (which must have passed ValidateBpf).
Result<BpfEvaluation> EvaluateBpf(const BpfProgram& program, const SeccompData& data);

// Static analysis over the program's DAG (classic BPF only jumps forward):
// the largest number of instructions any path runs before a RET of the given
// class. Paths are not checked for feasibility, so these are upper bounds.
struct BpfPathStats {
  size_t instructions = 0;          // static length
  size_t worst_case_allow = 0;      // longest path ending in RET ALLOW (0 if none)
  size_t worst_case_any = 0;        // longest path to any RET
};
BpfPathStats AnalyzeBpf(const BpfProgram& program);

// "allow", "errno(38)", "kill_process", "kill_thread", "trap", "log",
// "notify", "trace" for a SECCOMP_RET_* value.
std::string DescribeSeccompRet(uint32_t ret);

}  // namespace cocoon::backends
