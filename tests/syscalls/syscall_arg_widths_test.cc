#include "compiler/syscalls/syscall_arg_widths.h"

#include <gtest/gtest.h>

#include "compiler/syscalls/syscall_groups.h"

namespace cocoon::syscalls {
namespace {

TEST(SyscallArgWidths, SortedUniqueKnownAndNarrow) {
  const auto& table = ArgWidthTable();
  ASSERT_FALSE(table.empty());
  for (size_t i = 0; i < table.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(table[i - 1].name, table[i].name);
    }
    EXPECT_TRUE(IsKnownSyscall(table[i].name, {ir::Arch::kX86_64})) << table[i].name;
    bool narrow = false;
    for (uint8_t bits : table[i].bits) {
      EXPECT_TRUE(bits == 16 || bits == 32 || bits == 64) << table[i].name;
      narrow |= bits < 64;
    }
    EXPECT_TRUE(narrow) << table[i].name;
  }
}

TEST(SyscallArgWidths, TheParametersPoliciesRestrict) {
  for (int arg : {0, 1, 2}) EXPECT_EQ(KernelArgBits("socket", arg), 32);
  EXPECT_EQ(KernelArgBits("socket", 3), 64);
  EXPECT_EQ(KernelArgBits("ioctl", 1), 32);
  EXPECT_EQ(KernelArgBits("ioctl", 2), 64);  // unsigned long arg
  EXPECT_EQ(KernelArgBits("prctl", 0), 32);
  EXPECT_EQ(KernelArgBits("prctl", 1), 64);
  EXPECT_EQ(KernelArgBits("personality", 0), 32);
  EXPECT_EQ(KernelArgBits("setsockopt", 2), 32);
  EXPECT_EQ(KernelArgBits("kill", 1), 32);
  EXPECT_EQ(KernelArgBits("openat", 3), 16);  // umode_t
  EXPECT_EQ(KernelArgBits("clone", 0), 64);   // unsigned long flags
  EXPECT_EQ(KernelArgBits("nosuchcall", 0), 64);
  EXPECT_EQ(KernelArgBits("socket", 6), 64);
  EXPECT_EQ(KernelArgBits("socket", -1), 64);
}

}  // namespace
}  // namespace cocoon::syscalls
