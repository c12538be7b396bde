#include "compiler/backends/seccomp/word_classes.h"

#include <linux/filter.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <map>
#include <set>

#include "compiler/backends/seccomp/bpf_opcodes.h"

namespace cocoon::backends {
namespace {

// Word 2 * arg is the low half of args[arg] only on a little-endian host,
// which is what the evaluator (a memcpy of struct seccomp_data) assumes too.
static_assert(std::endian::native == std::endian::little);

// States the interpretation keeps per instruction before giving up. The
// programs Cocoon emits reach an instruction with one or two; libseccomp's
// linear layout (optimize level 1, what runc and crun build an OCI profile
// with, seccomp_backend.h VerifyRuntimeBuild) joins the ~120 masked guard
// pieces of ioctl or socket with one state per piece's mask. Past the cap
// no value may stand for another, and strict's OCI profile then took 155k
// evaluations for ioctl alone (1.4 s to verify instead of 0.05 s).
constexpr size_t kMaxStatesPerInstruction = 1024;

bool Holds(const WordTest& t, uint32_t word) {
  const uint32_t a = word & t.mask;
  switch (t.op) {
    case WordTest::Op::kEq: return a == t.k;
    case WordTest::Op::kGt: return a > t.k;
    case WordTest::Op::kGe: return a >= t.k;
    case WordTest::Op::kSet: return (a & t.k) != 0;
  }
  return false;
}

// Which tests a word passes: its class.
std::vector<bool> ClassOf(uint32_t word, const std::vector<WordTest>& tests) {
  std::vector<bool> answers(tests.size());
  for (size_t i = 0; i < tests.size(); ++i) answers[i] = Holds(tests[i], word);
  return answers;
}

// The accumulator, abstractly: a known constant (the syscall number, the
// arch, an immediate) or an argument word ANDed with a mask.
struct Accumulator {
  bool is_constant = true;
  uint32_t value = 0;   // constant
  uint32_t offset = 0;  // argument word's offset in seccomp_data
  uint32_t mask = 0xffffffff;
  bool operator<(const Accumulator& o) const {
    if (is_constant != o.is_constant) return is_constant < o.is_constant;
    return is_constant ? value < o.value : offset != o.offset ? offset < o.offset : mask < o.mask;
  }
};

std::optional<WordTest::Op> TestOp(uint16_t op) {
  switch (op) {
    case BPF_JEQ: return WordTest::Op::kEq;
    case BPF_JGE: return WordTest::Op::kGe;
    case BPF_JGT: return WordTest::Op::kGt;
    case BPF_JSET: return WordTest::Op::kSet;
  }
  return std::nullopt;
}

}  // namespace

void ArgWordTests::Add(int word, WordTest test) {
  std::vector<WordTest>& tests = per_word[word];
  if (std::find(tests.begin(), tests.end(), test) == tests.end()) tests.push_back(test);
}

void AddConditionTests(const ir::ArgCondition& c, ArgWordTests& tests) {
  if (c.arg >= 6) return;
  const uint32_t halves[2] = {static_cast<uint32_t>(c.value), static_cast<uint32_t>(c.value >> 32)};
  const uint32_t masks[2] = {static_cast<uint32_t>(c.mask), static_cast<uint32_t>(c.mask >> 32)};
  for (int half = 0; half < 2; ++half) {
    const int word = 2 * c.arg + half;
    switch (c.op) {
      case ir::CompareOp::kEq:
      case ir::CompareOp::kNe:
        tests.Add(word, {0xffffffff, WordTest::Op::kEq, halves[half]});
        break;
      case ir::CompareOp::kLt:
      case ir::CompareOp::kLe:
      case ir::CompareOp::kGt:
      case ir::CompareOp::kGe:
        // A 64-bit order compares the high words, then on a tie the low ones.
        tests.Add(word, {0xffffffff, WordTest::Op::kEq, halves[half]});
        tests.Add(word, {0xffffffff, WordTest::Op::kGt, halves[half]});
        break;
      case ir::CompareOp::kMaskedEq:
        tests.Add(word, {masks[half], WordTest::Op::kEq, halves[half]});
        break;
    }
  }
}

std::optional<ArgWordTests> ProgramWordTests(const BpfProgram& program, uint32_t audit_arch, int nr) {
  SeccompData fixed;  // what is not an argument is known: nr, arch, ip = 0
  fixed.nr = nr;
  fixed.arch = audit_arch;
  std::vector<std::set<Accumulator>> reaching(program.size());
  if (!program.empty()) reaching[0].insert(Accumulator{});  // A starts at 0
  ArgWordTests tests;
  auto reach = [&](size_t pc, const Accumulator& a) {
    if (pc >= program.size()) return false;
    reaching[pc].insert(a);
    return reaching[pc].size() <= kMaxStatesPerInstruction;
  };
  // Classic BPF jumps only forward, so one pass in order sees every state
  // that reaches an instruction before the instruction itself.
  for (size_t pc = 0; pc < program.size(); ++pc) {
    const sock_filter& insn = program[pc];
    const uint16_t code = insn.code;
    for (const Accumulator& a : reaching[pc]) {
      Accumulator next = a;
      bool falls_through = true;
      switch (BPF_CLASS(code)) {
        case BPF_RET:
          if (BPF_RVAL(code) != BPF_K) return std::nullopt;
          falls_through = false;
          break;
        case BPF_LD:
          if (code == (BPF_LD | BPF_W | BPF_ABS)) {
            if (insn.k < bpf::kFirstArgOffset) {
              next = Accumulator{};
              if (insn.k + sizeof(uint32_t) <= sizeof(SeccompData)) {
                std::memcpy(&next.value, reinterpret_cast<const char*>(&fixed) + insn.k, sizeof(uint32_t));
              }
            } else {
              next = Accumulator{false, 0, insn.k, 0xffffffff};
            }
          } else if (code == (BPF_LD | BPF_IMM)) {
            next = Accumulator{true, insn.k, 0, 0xffffffff};
          } else if (code == (BPF_LD | BPF_W | BPF_LEN)) {
            next = Accumulator{true, sizeof(SeccompData), 0, 0xffffffff};
          } else {
            return std::nullopt;  // scratch memory: not followed
          }
          break;
        case BPF_ALU: {
          if (BPF_SRC(code) != BPF_K) return std::nullopt;
          if (a.is_constant) {
            next.value = BpfAlu(BPF_OP(code), a.value, insn.k);
          } else if (BPF_OP(code) == BPF_AND) {
            next.mask = a.mask & insn.k;
          } else {
            return std::nullopt;  // arithmetic on an argument word
          }
          break;
        }
        case BPF_JMP: {
          falls_through = false;
          if (BPF_OP(code) == BPF_JA) {
            if (!reach(pc + 1 + insn.k, a)) return std::nullopt;
            break;
          }
          const std::optional<WordTest::Op> op = TestOp(BPF_OP(code));
          if (BPF_SRC(code) != BPF_K || !op) return std::nullopt;
          if (a.is_constant) {
            if (!reach(pc + 1 + (BpfJumpTaken(BPF_OP(code), a.value, insn.k) ? insn.jt : insn.jf), a)) return std::nullopt;
            break;
          }
          const uint32_t word_offset = a.offset - bpf::kFirstArgOffset;
          if (word_offset % 4 != 0 || word_offset / 4 >= 12) return std::nullopt;
          tests.Add(static_cast<int>(word_offset / 4), {a.mask, *op, insn.k});
          if (!reach(pc + 1 + insn.jt, a) || !reach(pc + 1 + insn.jf, a)) return std::nullopt;
          break;
        }
        default:
          return std::nullopt;  // ST, STX, LDX, TAX, TXA
      }
      if (falls_through && !reach(pc + 1, next)) return std::nullopt;
    }
  }
  return tests;
}

std::vector<uint32_t> OnePerClass(const std::vector<uint32_t>& candidates, const std::vector<WordTest>& tests) {
  std::set<uint32_t> sorted(candidates.begin(), candidates.end());
  std::set<std::vector<bool>> seen;
  std::vector<uint32_t> out;
  for (uint32_t word : sorted) {
    if (seen.insert(ClassOf(word, tests)).second) out.push_back(word);
  }
  return out;
}

std::vector<uint64_t> OnePerClassPair(const std::vector<uint64_t>& values, const std::vector<WordTest>& low_tests,
                                      const std::vector<WordTest>& high_tests) {
  std::set<uint64_t> sorted(values.begin(), values.end());
  std::set<std::pair<std::vector<bool>, std::vector<bool>>> seen;
  std::vector<uint64_t> out;
  for (uint64_t value : sorted) {
    auto key = std::make_pair(ClassOf(static_cast<uint32_t>(value), low_tests),
                              ClassOf(static_cast<uint32_t>(value >> 32), high_tests));
    if (seen.insert(std::move(key)).second) out.push_back(value);
  }
  return out;
}

}  // namespace cocoon::backends
