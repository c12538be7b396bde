#include "compiler/backends/seccomp/word_classes.h"

#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "tests/backends/seccomp/bpf_builders.h"

namespace cocoon::backends {
namespace {

using Op = WordTest::Op;

using bpf_test::Jump;
using bpf_test::Stmt;

// read (0): (arg1 & 0xff) == 7 -> errno; write (1): arg0 > 5 -> kill; else allow.
BpfProgram TwoSyscallProgram() {
  return {
      Stmt(BPF_LD | BPF_W | BPF_ABS, 0),              // 0: nr
      Jump(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 4),       // 1: read -> 2, else 6
      Stmt(BPF_LD | BPF_W | BPF_ABS, 24),             // 2: args[1] low word
      Stmt(BPF_ALU | BPF_AND | BPF_K, 0xff),          // 3
      Jump(BPF_JMP | BPF_JEQ | BPF_K, 7, 0, 4),       // 4: -> 5, else 9
      Stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1),   // 5
      Stmt(BPF_LD | BPF_W | BPF_ABS, 16),             // 6: args[0] low word
      Jump(BPF_JMP | BPF_JGT | BPF_K, 5, 0, 1),       // 7: -> 8, else 9
      Stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),  // 8
      Stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),       // 9
  };
}

TEST(WordClasses, TheProgramsTestsAreThoseOnTheSyscallsOwnPath) {
  const BpfProgram program = TwoSyscallProgram();
  auto read_tests = ProgramWordTests(program, AUDIT_ARCH_X86_64, 0);
  ASSERT_TRUE(read_tests.has_value());
  EXPECT_EQ(read_tests->per_word[2], (std::vector<WordTest>{{0xff, Op::kEq, 7}}));  // arg1, low word
  EXPECT_TRUE(read_tests->per_word[0].empty());  // write's test is not on read's path
  auto write_tests = ProgramWordTests(program, AUDIT_ARCH_X86_64, 1);
  ASSERT_TRUE(write_tests.has_value());
  EXPECT_EQ(write_tests->per_word[0], (std::vector<WordTest>{{0xffffffff, Op::kGt, 5}}));
  EXPECT_TRUE(write_tests->per_word[2].empty());
}

// A word reaching a jump through arithmetic other than AND could take any
// value: no value may stand for another, so no classes are given.
TEST(WordClasses, ArithmeticOnAWordGivesNoClasses) {
  BpfProgram program = TwoSyscallProgram();
  program[3] = Stmt(BPF_ALU | BPF_ADD | BPF_K, 1);
  EXPECT_FALSE(ProgramWordTests(program, AUDIT_ARCH_X86_64, 0).has_value());
  // The same instruction off read's path does not matter to read...
  EXPECT_TRUE(ProgramWordTests(program, AUDIT_ARCH_X86_64, 1).has_value());
  // ...but scratch memory and the X register are not followed at all.
  BpfProgram uses_x = TwoSyscallProgram();
  uses_x[3] = Stmt(BPF_MISC | BPF_TAX, 0);
  EXPECT_FALSE(ProgramWordTests(uses_x, AUDIT_ARCH_X86_64, 0).has_value());
  BpfProgram returns_a = TwoSyscallProgram();
  returns_a[5] = Stmt(BPF_RET | BPF_A, 0);
  EXPECT_FALSE(ProgramWordTests(returns_a, AUDIT_ARCH_X86_64, 0).has_value());
}

TEST(WordClasses, OneValuePerClass) {
  const std::vector<uint32_t> candidates = {10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0};
  EXPECT_EQ(OnePerClass(candidates, {{0xffffffff, Op::kEq, 5}}), (std::vector<uint32_t>{0, 5}));
  EXPECT_EQ(OnePerClass(candidates, {{0xffffffff, Op::kEq, 5}, {0xffffffff, Op::kGt, 5}}),
            (std::vector<uint32_t>{0, 5, 6}));
  EXPECT_EQ(OnePerClass(candidates, {{1, Op::kEq, 0}}), (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(OnePerClass(candidates, {{0xffffffff, Op::kSet, 0xc}}), (std::vector<uint32_t>{0, 4}));
  EXPECT_EQ(OnePerClass(candidates, {}), (std::vector<uint32_t>{0}));
  // Every class a candidate falls in keeps a value.
  EXPECT_EQ(OnePerClass(candidates, {{0xffffffff, Op::kGe, 3}, {0xe, Op::kEq, 8}}),
            (std::vector<uint32_t>{0, 3, 8}));
}

TEST(WordClasses, PairsOfClassesForSixtyFourBitValues) {
  const std::vector<uint64_t> values = {0, 1, 2, uint64_t{1} << 32, (uint64_t{1} << 32) | 1, uint64_t{7} << 32};
  // Only the low word is tested: the high word is one class.
  EXPECT_EQ(OnePerClassPair(values, {{0xffffffff, Op::kEq, 1}}, {}), (std::vector<uint64_t>{0, 1}));
  // Both words are tested.
  EXPECT_EQ(OnePerClassPair(values, {{0xffffffff, Op::kEq, 1}}, {{0xffffffff, Op::kEq, 0}}),
            (std::vector<uint64_t>{0, 1, uint64_t{1} << 32, (uint64_t{1} << 32) | 1}));
}

TEST(WordClasses, ConditionsTestTheWordsTheyCompare) {
  ArgWordTests tests;
  AddConditionTests({2, ir::CompareOp::kGe, 0x500000007ULL, 0}, tests);
  EXPECT_EQ(tests.per_word[4], (std::vector<WordTest>{{0xffffffff, Op::kEq, 7}, {0xffffffff, Op::kGt, 7}}));
  EXPECT_EQ(tests.per_word[5], (std::vector<WordTest>{{0xffffffff, Op::kEq, 5}, {0xffffffff, Op::kGt, 5}}));
  AddConditionTests({1, ir::CompareOp::kMaskedEq, 0x10, 0xffffffff00000010ULL}, tests);
  EXPECT_EQ(tests.per_word[2], (std::vector<WordTest>{{0x10, Op::kEq, 0x10}}));
  EXPECT_EQ(tests.per_word[3], (std::vector<WordTest>{{0xffffffff, Op::kEq, 0}}));
}

}  // namespace
}  // namespace cocoon::backends
