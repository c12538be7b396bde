// bpf_dispatch.h: the number-only part of a program rebuilt as a range
// search gives the same answer for every number (and arguments) it did, is
// shorter, and shapes it does not expect are left alone.
#include "compiler/backends/seccomp/bpf_dispatch.h"

#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <stddef.h>

#include <random>
#include <vector>

namespace cocoon::backends {
namespace {

constexpr uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr uint32_t kEnosys = SECCOMP_RET_ERRNO | 38;
constexpr uint32_t kEperm = SECCOMP_RET_ERRNO | 1;

sock_filter LoadNr() { return BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)); }

// libseccomp's shape in miniature: arch check, then one `jeq nr` per
// syscall with its own return, then the default.
BpfProgram OneCompareEach(const std::vector<std::pair<uint32_t, uint32_t>>& rules, uint32_t default_ret) {
  BpfProgram p;
  p.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
  p.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
  p.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
  p.push_back(LoadNr());
  for (const auto& [nr, ret] : rules) {
    p.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1));
    p.push_back(BPF_STMT(BPF_RET | BPF_K, ret));
  }
  p.push_back(BPF_STMT(BPF_RET | BPF_K, default_ret));
  return p;
}

uint32_t Ret(const BpfProgram& p, uint32_t nr, uint64_t arg0 = 0, uint32_t arch = AUDIT_ARCH_X86_64) {
  SeccompData data;
  data.nr = static_cast<int32_t>(nr);
  data.arch = arch;
  data.args[0] = arg0;
  auto result = EvaluateBpf(p, data);
  EXPECT_TRUE(result.ok());
  return result.ok() ? result->ret : 0xdeadbeef;
}

std::vector<uint32_t> Probes() {
  std::vector<uint32_t> probes;
  for (uint32_t nr = 0; nr < 1100; ++nr) probes.push_back(nr);
  for (uint32_t nr : {0x3fffffffu, 0x40000000u, 0x40000001u, 0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu}) {
    probes.push_back(nr);
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 5000; ++i) probes.push_back(static_cast<uint32_t>(rng()));
  return probes;
}

TEST(BpfDispatch, RunsOfOneActionBecomeRanges) {
  // 0-199 allowed except 50 (EPERM) and 120-129 (EPERM): five ranges.
  std::vector<std::pair<uint32_t, uint32_t>> rules;
  for (uint32_t nr = 0; nr < 200; ++nr) {
    rules.push_back({nr, nr == 50 || (nr >= 120 && nr < 130) ? kEperm : kAllow});
  }
  BpfProgram p = OneCompareEach(rules, kEnosys);
  ASSERT_TRUE(ValidateBpf(p).ok());
  auto compressed = CompressSyscallDispatch(p);
  ASSERT_TRUE(compressed.has_value());
  ASSERT_TRUE(ValidateBpf(*compressed).ok());
  EXPECT_LT(compressed->size(), 20u) << "was " << p.size();
  for (uint32_t nr : Probes()) ASSERT_EQ(Ret(*compressed, nr), Ret(p, nr)) << nr;
  EXPECT_EQ(Ret(*compressed, 1, 0, AUDIT_ARCH_AARCH64), SECCOMP_RET_KILL_PROCESS);
  EXPECT_LE(AnalyzeBpf(*compressed).worst_case_any, 4u + 4u) << "arch check, load, ~log2(5) compares, ret";
  EXPECT_EQ(compressed->back().k, kEnosys) << "the program still ends in its default deny";
}

TEST(BpfDispatch, ArgumentChecksAreKeptAndStillSeeTheNumber) {
  // nr 16 (ioctl) allowed unless arg0 == 0x5412 (then EPERM); 0-40 allowed.
  BpfProgram p;
  p.push_back(LoadNr());
  for (uint32_t nr = 0; nr <= 40; ++nr) {
    if (nr == 16) {
      p.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 16, 0, 4));
      p.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])));
      p.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x5412, 0, 1));
      p.push_back(BPF_STMT(BPF_RET | BPF_K, kEperm));
      p.push_back(BPF_STMT(BPF_RET | BPF_K, kAllow));
      continue;
    }
    p.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1));
    p.push_back(BPF_STMT(BPF_RET | BPF_K, kAllow));
  }
  p.push_back(BPF_STMT(BPF_RET | BPF_K, kEnosys));
  ASSERT_TRUE(ValidateBpf(p).ok());
  auto compressed = CompressSyscallDispatch(p);
  ASSERT_TRUE(compressed.has_value());
  EXPECT_LT(compressed->size(), p.size() / 4);
  for (uint32_t nr : Probes()) {
    for (uint64_t arg : {uint64_t{0}, uint64_t{0x5412}, uint64_t{0x5413}}) {
      ASSERT_EQ(Ret(*compressed, nr, arg), Ret(p, nr, arg)) << nr << " " << arg;
    }
  }
  EXPECT_EQ(Ret(*compressed, 16, 0x5412), kEperm);
}

TEST(BpfDispatch, CodeAlsoReachedWithoutTheNumberIsLeftAlone) {
  // The arch check jumps past the number load into the compare chain, where
  // A then holds the arch: from there on the chain is not a function of the
  // number, so only its first compare could be rebuilt, which gains nothing.
  BpfProgram p;
  p.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
  p.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 3));
  p.push_back(LoadNr());
  for (uint32_t nr = 0; nr < 10; ++nr) {
    p.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1));
    p.push_back(BPF_STMT(BPF_RET | BPF_K, kAllow));
  }
  p.push_back(BPF_STMT(BPF_RET | BPF_K, kEnosys));
  ASSERT_TRUE(ValidateBpf(p).ok());
  EXPECT_FALSE(CompressSyscallDispatch(p).has_value());
}

TEST(BpfDispatch, BitTestsOnTheNumberEndTheRegion) {
  // A jset on the number is not constant between compare constants; it is
  // kept as an exit of the region, reached with the number still in A.
  BpfProgram p;
  p.push_back(LoadNr());
  p.push_back(BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x40000000, 0, 1));
  p.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
  for (uint32_t nr = 0; nr < 30; ++nr) {
    p.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 1));
    p.push_back(BPF_STMT(BPF_RET | BPF_K, nr % 7 == 0 ? kEperm : kAllow));
  }
  p.push_back(BPF_STMT(BPF_RET | BPF_K, kEnosys));
  ASSERT_TRUE(ValidateBpf(p).ok());
  auto compressed = CompressSyscallDispatch(p);
  if (compressed) {
    for (uint32_t nr : Probes()) ASSERT_EQ(Ret(*compressed, nr), Ret(p, nr)) << nr;
  }
}

}  // namespace
}  // namespace cocoon::backends
