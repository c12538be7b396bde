#include "compiler/backends/seccomp/bpf_evaluator.h"

#include <linux/seccomp.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace cocoon::backends {
namespace {

constexpr size_t kMaxInstructions = 4096;  // BPF_MAXINSNS
constexpr uint32_t kScratchSlots = 16;     // BPF_MEMWORDS

// The opcodes kernel/seccomp.c:seccomp_check_filter() lets through.
bool IsSeccompOpcode(uint16_t code) {
  switch (code) {
    case BPF_LD | BPF_W | BPF_ABS:
    case BPF_LD | BPF_W | BPF_LEN:
    case BPF_LDX | BPF_W | BPF_LEN:
    case BPF_RET | BPF_K:
    case BPF_RET | BPF_A:
    case BPF_ALU | BPF_ADD | BPF_K: case BPF_ALU | BPF_ADD | BPF_X:
    case BPF_ALU | BPF_SUB | BPF_K: case BPF_ALU | BPF_SUB | BPF_X:
    case BPF_ALU | BPF_MUL | BPF_K: case BPF_ALU | BPF_MUL | BPF_X:
    case BPF_ALU | BPF_DIV | BPF_K: case BPF_ALU | BPF_DIV | BPF_X:
    case BPF_ALU | BPF_AND | BPF_K: case BPF_ALU | BPF_AND | BPF_X:
    case BPF_ALU | BPF_OR | BPF_K: case BPF_ALU | BPF_OR | BPF_X:
    case BPF_ALU | BPF_XOR | BPF_K: case BPF_ALU | BPF_XOR | BPF_X:
    case BPF_ALU | BPF_LSH | BPF_K: case BPF_ALU | BPF_LSH | BPF_X:
    case BPF_ALU | BPF_RSH | BPF_K: case BPF_ALU | BPF_RSH | BPF_X:
    case BPF_ALU | BPF_NEG:
    case BPF_LD | BPF_IMM:
    case BPF_LDX | BPF_IMM:
    case BPF_MISC | BPF_TAX:
    case BPF_MISC | BPF_TXA:
    case BPF_LD | BPF_MEM:
    case BPF_LDX | BPF_MEM:
    case BPF_ST:
    case BPF_STX:
    case BPF_JMP | BPF_JA:
    case BPF_JMP | BPF_JEQ | BPF_K: case BPF_JMP | BPF_JEQ | BPF_X:
    case BPF_JMP | BPF_JGE | BPF_K: case BPF_JMP | BPF_JGE | BPF_X:
    case BPF_JMP | BPF_JGT | BPF_K: case BPF_JMP | BPF_JGT | BPF_X:
    case BPF_JMP | BPF_JSET | BPF_K: case BPF_JMP | BPF_JSET | BPF_X:
      return true;
    default:
      return false;
  }
}

bool IsConditionalJump(uint16_t code) { return BPF_CLASS(code) == BPF_JMP && BPF_OP(code) != BPF_JA; }

std::string At(size_t pc) { return "instruction " + std::to_string(pc) + ": "; }

Status CheckInstruction(const BpfProgram& program, size_t pc) {
  const sock_filter& insn = program[pc];
  const size_t len = program.size();
  if (!IsSeccompOpcode(insn.code)) return InvalidArgumentError(At(pc) + "opcode not allowed in seccomp");
  if (insn.code == (BPF_LD | BPF_W | BPF_ABS) && ((insn.k & 3) != 0 || insn.k >= sizeof(SeccompData))) {
    return InvalidArgumentError(At(pc) + "load outside struct seccomp_data or unaligned");
  }
  if ((insn.code == (BPF_LD | BPF_MEM) || insn.code == (BPF_LDX | BPF_MEM) || insn.code == BPF_ST ||
       insn.code == BPF_STX) && insn.k >= kScratchSlots) {
    return InvalidArgumentError(At(pc) + "scratch memory index out of range");
  }
  if (insn.code == (BPF_ALU | BPF_DIV | BPF_K) && insn.k == 0) {
    return InvalidArgumentError(At(pc) + "division by constant zero");
  }
  if (insn.code == (BPF_JMP | BPF_JA) && (insn.k >= len || pc + 1 + insn.k >= len)) {
    return InvalidArgumentError(At(pc) + "jump out of range");
  }
  if (IsConditionalJump(insn.code) && (pc + 1 + insn.jt >= len || pc + 1 + insn.jf >= len)) {
    return InvalidArgumentError(At(pc) + "conditional jump out of range");
  }
  return Status::Ok();
}

uint32_t LoadWord(const SeccompData& data, uint32_t offset) {
  uint32_t word;
  std::memcpy(&word, reinterpret_cast<const char*>(&data) + offset, sizeof(word));
  return word;
}

}  // namespace

uint32_t BpfAlu(uint16_t op, uint32_t a, uint32_t operand) {
  switch (op) {
    case BPF_ADD: return a + operand;
    case BPF_SUB: return a - operand;
    case BPF_MUL: return a * operand;
    case BPF_DIV: return operand == 0 ? 0 : a / operand;
    case BPF_AND: return a & operand;
    case BPF_OR: return a | operand;
    case BPF_XOR: return a ^ operand;
    case BPF_LSH: return operand >= 32 ? 0 : a << operand;
    case BPF_RSH: return operand >= 32 ? 0 : a >> operand;
    case BPF_NEG: return 0u - a;
  }
  return a;
}

bool BpfJumpTaken(uint16_t op, uint32_t a, uint32_t operand) {
  switch (op) {
    case BPF_JEQ: return a == operand;
    case BPF_JGE: return a >= operand;
    case BPF_JGT: return a > operand;
    case BPF_JSET: return (a & operand) != 0;
  }
  return false;
}


Result<BpfProgram> ParseBpf(std::string_view bytes) {
  if (bytes.empty() || bytes.size() % sizeof(sock_filter) != 0) {
    return InvalidArgumentError("BPF program size " + std::to_string(bytes.size()) +
                                " is not a positive multiple of 8");
  }
  BpfProgram program(bytes.size() / sizeof(sock_filter));
  std::memcpy(program.data(), bytes.data(), bytes.size());
  return program;
}

Status ValidateBpf(const BpfProgram& program) {
  if (program.empty() || program.size() > kMaxInstructions) {
    return InvalidArgumentError("BPF program has " + std::to_string(program.size()) + " instructions (1..4096)");
  }
  for (size_t pc = 0; pc < program.size(); ++pc) COCOON_RETURN_IF_ERROR(CheckInstruction(program, pc));
  if (BPF_CLASS(program.back().code) != BPF_RET) return InvalidArgumentError("BPF program does not end in RET");
  return Status::Ok();
}

Result<BpfEvaluation> EvaluateBpf(const BpfProgram& program, const SeccompData& data) {
  uint32_t a = 0, x = 0;
  uint32_t mem[kScratchSlots] = {};
  BpfEvaluation result;
  for (size_t pc = 0; pc < program.size(); ++pc) {
    const sock_filter& insn = program[pc];
    ++result.executed;
    const uint16_t code = insn.code;
    switch (BPF_CLASS(code)) {
      case BPF_RET:
        result.ret = BPF_RVAL(code) == BPF_A ? a : insn.k;
        return result;
      case BPF_LD:
        if (BPF_MODE(code) == BPF_ABS) a = LoadWord(data, insn.k);
        else if (BPF_MODE(code) == BPF_LEN) a = sizeof(SeccompData);
        else if (BPF_MODE(code) == BPF_IMM) a = insn.k;
        else if (BPF_MODE(code) == BPF_MEM) a = mem[insn.k % kScratchSlots];
        break;
      case BPF_LDX:
        if (BPF_MODE(code) == BPF_LEN) x = sizeof(SeccompData);
        else if (BPF_MODE(code) == BPF_IMM) x = insn.k;
        else if (BPF_MODE(code) == BPF_MEM) x = mem[insn.k % kScratchSlots];
        break;
      case BPF_ST: mem[insn.k % kScratchSlots] = a; break;
      case BPF_STX: mem[insn.k % kScratchSlots] = x; break;
      case BPF_ALU: a = BpfAlu(BPF_OP(code), a, BPF_SRC(code) == BPF_X ? x : insn.k); break;
      case BPF_MISC:
        if (BPF_MISCOP(code) == BPF_TAX) x = a;
        else a = x;
        break;
      case BPF_JMP:
        if (BPF_OP(code) == BPF_JA) {
          pc += insn.k;
        } else {
          pc += BpfJumpTaken(BPF_OP(code), a, BPF_SRC(code) == BPF_X ? x : insn.k) ? insn.jt : insn.jf;
        }
        break;
    }
  }
  return InvalidArgumentError("BPF program ran off its end");
}

BpfPathStats AnalyzeBpf(const BpfProgram& program) {
  // longest[pc]: most instructions from pc to a RET (of the class), -1 = none.
  const size_t n = program.size();
  std::vector<long> to_allow(n, -1), to_any(n, -1);
  for (size_t i = n; i-- > 0;) {
    const sock_filter& insn = program[i];
    if (BPF_CLASS(insn.code) == BPF_RET) {
      to_any[i] = 1;
      const bool allow = BPF_RVAL(insn.code) == BPF_K && (insn.k & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ALLOW;
      to_allow[i] = allow ? 1 : -1;
      continue;
    }
    std::vector<size_t> next;
    if (BPF_CLASS(insn.code) != BPF_JMP) next = {i + 1};
    else if (BPF_OP(insn.code) == BPF_JA) next = {i + 1 + insn.k};
    else next = {i + 1 + insn.jt, i + 1 + insn.jf};
    for (size_t j : next) {
      if (j >= n) continue;
      if (to_any[j] >= 0) to_any[i] = std::max(to_any[i], to_any[j] + 1);
      if (to_allow[j] >= 0) to_allow[i] = std::max(to_allow[i], to_allow[j] + 1);
    }
  }
  BpfPathStats stats;
  stats.instructions = n;
  if (n > 0) {
    stats.worst_case_allow = to_allow[0] > 0 ? static_cast<size_t>(to_allow[0]) : 0;
    stats.worst_case_any = to_any[0] > 0 ? static_cast<size_t>(to_any[0]) : 0;
  }
  return stats;
}

std::string DescribeSeccompRet(uint32_t ret) {
  switch (ret & SECCOMP_RET_ACTION_FULL) {
    case SECCOMP_RET_ALLOW: return "allow";
    case SECCOMP_RET_ERRNO: return "errno(" + std::to_string(ret & SECCOMP_RET_DATA) + ")";
    case SECCOMP_RET_KILL_PROCESS: return "kill_process";
    case SECCOMP_RET_KILL_THREAD: return "kill_thread";
    case SECCOMP_RET_TRAP: return "trap";
    case SECCOMP_RET_LOG: return "log";
    case SECCOMP_RET_USER_NOTIF: return "notify";
    case SECCOMP_RET_TRACE: return "trace";
  }
  return "unknown(" + std::to_string(ret) + ")";
}

}  // namespace cocoon::backends
