#include "compiler/backends/seccomp/bpf_evaluator.h"

#include <linux/seccomp.h>

#include <gtest/gtest.h>

#include "tests/backends/seccomp/bpf_builders.h"

namespace cocoon::backends {
namespace {

using bpf_test::Jump;
using bpf_test::Stmt;

// nr == 39 ? ALLOW : ERRNO(1)
BpfProgram Tiny() {
  return {Stmt(BPF_LD | BPF_W | BPF_ABS, 0), Jump(BPF_JMP | BPF_JEQ | BPF_K, 39, 0, 1),
          Stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW), Stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 1)};
}

TEST(BpfEvaluator, RunsAndCounts) {
  BpfProgram p = Tiny();
  ASSERT_TRUE(ValidateBpf(p).ok());
  SeccompData d;
  d.nr = 39;
  auto r = EvaluateBpf(p, d);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->ret, SECCOMP_RET_ALLOW);
  EXPECT_EQ(r->executed, 3u);
  d.nr = 40;
  EXPECT_EQ(DescribeSeccompRet(EvaluateBpf(p, d)->ret), "errno(1)");
  BpfPathStats s = AnalyzeBpf(p);
  EXPECT_EQ(s.instructions, 4u);
  EXPECT_EQ(s.worst_case_allow, 3u);
  EXPECT_EQ(s.worst_case_any, 3u);
}

TEST(BpfEvaluator, ValidatorRejects) {
  EXPECT_FALSE(ValidateBpf({}).ok());
  BpfProgram no_ret = {Stmt(BPF_LD | BPF_W | BPF_ABS, 0)};
  EXPECT_FALSE(ValidateBpf(no_ret).ok());
  BpfProgram bad_jump = Tiny();
  bad_jump[1].jf = 9;
  EXPECT_FALSE(ValidateBpf(bad_jump).ok());
  BpfProgram unaligned = Tiny();
  unaligned[0].k = 2;
  EXPECT_FALSE(ValidateBpf(unaligned).ok());
  BpfProgram outside = Tiny();
  outside[0].k = 64;
  EXPECT_FALSE(ValidateBpf(outside).ok());
  BpfProgram bad_op = Tiny();
  bad_op[0].code = BPF_LD | BPF_B | BPF_IND;  // packet access is not seccomp
  EXPECT_FALSE(ValidateBpf(bad_op).ok());
  BpfProgram div0 = {Stmt(BPF_ALU | BPF_DIV | BPF_K, 0), Stmt(BPF_RET | BPF_K, 0)};
  EXPECT_FALSE(ValidateBpf(div0).ok());
}

TEST(BpfEvaluator, ParseBytes) {
  EXPECT_FALSE(ParseBpf("1234567").ok());
  EXPECT_FALSE(ParseBpf("").ok());
  BpfProgram p = Tiny();
  std::string bytes(reinterpret_cast<const char*>(p.data()), p.size() * sizeof(sock_filter));
  auto parsed = ParseBpf(bytes);
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->size(), 4u);
}

TEST(BpfEvaluator, Describe) {
  EXPECT_EQ(DescribeSeccompRet(SECCOMP_RET_KILL_PROCESS), "kill_process");
  EXPECT_EQ(DescribeSeccompRet(SECCOMP_RET_USER_NOTIF), "notify");
  EXPECT_EQ(DescribeSeccompRet(SECCOMP_RET_ERRNO | 38), "errno(38)");
}

}  // namespace
}  // namespace cocoon::backends
