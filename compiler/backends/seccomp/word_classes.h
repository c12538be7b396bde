// Equivalence classes of 32-bit argument words, so that the translation
// validator (seccomp_verify.h) tests one value per class instead of every
// candidate value.
//
// Why: seccomp_data holds each 64-bit argument as two 32-bit words, and a
// filter made only of word loads, AND-with-constant, compare-with-constant
// jumps and constant returns (all that libseccomp and Cocoon's own guards
// emit) sees a word only through the tests it applies to it. The rules see
// it the same way (ConditionMatches on the two halves). Two candidate values
// that every test of either side answers alike are interchangeable: the
// program and the rules give both the same verdict, so checking one is
// checking both. Without this, a `==` on a 32-bit parameter (a masked compare
// whose complement is one single-bit rule per bit, kernel_widths.h) on two
// arguments of one syscall needed tens of millions of evaluations, and the
// policy was refused as too large to verify.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compiler/backends/seccomp/bpf_evaluator.h"
#include "compiler/ir/policy_ir.h"

namespace cocoon::backends {

// One test of a word: (word & mask) OP k.
struct WordTest {
  enum class Op : uint8_t { kEq, kGt, kGe, kSet };
  uint32_t mask = 0xffffffff;
  Op op = Op::kEq;
  uint32_t k = 0;
  bool operator<(const WordTest& o) const {
    return mask != o.mask ? mask < o.mask : op != o.op ? op < o.op : k < o.k;
  }
  bool operator==(const WordTest&) const = default;
};

// The tests applied to each argument word: index 2 * arg for the low word
// (the number itself on a little-endian arch), 2 * arg + 1 for the high one.
struct ArgWordTests {
  std::vector<WordTest> per_word[12];
  void Add(int word, WordTest test);
};

// Adds what ConditionMatches evaluates of `condition`, word by word.
void AddConditionTests(const ir::ArgCondition& condition, ArgWordTests& tests);

// Adds every word test `program` can apply to an argument word when run for
// syscall `nr` on audit arch `audit_arch` (instruction pointer 0, as the
// validator passes it): jumps on the syscall number and arch are followed,
// not recorded. nullopt when the program does anything but load words, AND
// a loaded argument word with a constant, compare with a constant, jump and
// return a constant: then a word may reach a verdict through arithmetic the
// tests do not describe, and no value may stand for another.
std::optional<ArgWordTests> ProgramWordTests(const BpfProgram& program, uint32_t audit_arch, int nr);

// `candidates` with one value per class of `tests` (the smallest), sorted.
std::vector<uint32_t> OnePerClass(const std::vector<uint32_t>& candidates, const std::vector<WordTest>& tests);

// `values` (64-bit arguments) with one value per pair of (high word class,
// low word class), sorted.
std::vector<uint64_t> OnePerClassPair(const std::vector<uint64_t>& values, const std::vector<WordTest>& low_tests,
                                      const std::vector<WordTest>& high_tests);

}  // namespace cocoon::backends
