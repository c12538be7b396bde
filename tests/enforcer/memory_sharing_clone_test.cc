// The child that starts a sandbox may run in its parent's memory until
// execve (memory_sharing_clone.h). These tests check what that rests on:
// raw system calls leave the shared errno alone, the child really runs on
// its own stack in the parent's memory, a child overrunning its stack faults
// on the guard region instead of writing into the parent's memory, the
// fork-style path works, and the rule of when to share. Unit tests: plain
// clones, no namespaces (the launch's own child: started_child_test.cc).
#include <linux/sched.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "enforcer/memory_sharing_clone.h"
#include "enforcer/raw_syscall.h"

namespace cocoon::enforcer {
namespace {

TEST(RawSyscallTest, ReturnsMinusErrnoAndLeavesErrnoAlone) {
  errno = 12345;
  EXPECT_EQ(sys::Call(SYS_close, -1), -EBADF);
  EXPECT_EQ(errno, 12345) << "a raw call wrote errno";
  EXPECT_EQ(sys::ErrorOf(sys::Call(SYS_openat, AT_FDCWD, "/nonexistent/cocoon", 0)), ENOENT);
  EXPECT_EQ(sys::Call(SYS_getpid), getpid());
  EXPECT_EQ(sys::ErrorOf(sys::Call(SYS_getpid)), 0);
  EXPECT_EQ(errno, 12345);
}

int WaitForExitStatus(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

#if COCOON_CHILD_SHARES_MEMORY

struct SharedProbe {
  std::atomic<int> written{0};
  std::atomic<uintptr_t> child_stack_address{0};
};

int WriteIntoParent(void* arg) {
  auto* probe = static_cast<SharedProbe*>(arg);
  int local = 0;
  probe->child_stack_address.store(reinterpret_cast<uintptr_t>(&local));
  probe->written.store(42);
  // A failing call, as the sandbox child's mkdir of an existing directory:
  // it must not reach the parent's errno.
  sys::Call(SYS_close, -1);
  return 7;
}

long CloneWithStack(const ChildStack& stack, int (*entry)(void*), void* arg, int* pidfd) {
  struct clone_args args {};
  args.flags = CLONE_VM | CLONE_PIDFD | CLONE_CLEAR_SIGHAND;
  args.pidfd = reinterpret_cast<uint64_t>(pidfd);
  args.exit_signal = SIGCHLD;
  args.stack = reinterpret_cast<uint64_t>(stack.base());
  args.stack_size = stack.size();
  return CloneCallingEntry(&args, entry, arg);
}

TEST(MemorySharingCloneTest, TheChildRunsInTheParentsMemoryOnItsOwnStack) {
  auto stack = ChildStack::Map();
  ASSERT_TRUE(stack.ok()) << stack.status().ToString();
  SharedProbe probe;
  int pidfd = -1;
  errno = 0;
  long pid = CloneWithStack(*stack, WriteIntoParent, &probe, &pidfd);
  ASSERT_GT(pid, 0) << "clone3: " << -pid;
  int status = WaitForExitStatus(static_cast<pid_t>(pid));
  close(pidfd);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 7) << "the entry's result is the exit status";
  EXPECT_EQ(probe.written.load(), 42) << "the child's write did not reach the parent: not CLONE_VM";
  auto base = reinterpret_cast<uintptr_t>(stack->base());
  uintptr_t local = probe.child_stack_address.load();
  EXPECT_GE(local, base);
  EXPECT_LT(local, base + stack->size()) << "the child did not run on its own stack";
  EXPECT_EQ(errno, 0) << "the child's failed call changed the parent's errno";
}

// Deep enough to run through 256 KiB of stack. Frames are small (a frame
// spanning two pages could skip the page below the guard: the compiler's
// stack-clash probe would fault further down first), and each writes every
// 64th byte of its own, so no page it passes is left untouched.
int Recurse(int depth) {
  volatile char frame[512];
  for (size_t i = 0; i < sizeof(frame); i += 64) frame[i] = static_cast<char>(depth);
  int below = depth > 0 ? Recurse(depth - 1) : 0;
  return below + frame[0] + frame[sizeof(frame) - 64];
}

int OverflowTheStack(void*) { return Recurse(1 << 20); }

TEST(MemorySharingCloneTest, AStackOverflowFaultsOnTheGuardPageAndSparesTheParent) {
  if (!KernelLimitsCoreDumpsToOneProcess()) {
    GTEST_SKIP() << "NOT TESTED HERE: before Linux 5.16 the child's SIGSEGV would kill this test process too "
                    "(core dumps kill every process sharing the memory); the launcher shares only on 5.16+";
  }
  auto stack = ChildStack::Map();
  ASSERT_TRUE(stack.ok()) << stack.status().ToString();
  // A page of ours right below the guard region: an unguarded overflow
  // would run into it (the child shares our memory) before faulting anywhere.
  constexpr size_t kPage = 4096;
  char* victim_at = static_cast<char*>(stack->base()) - ChildStack::kGuard - kPage;
  void* victim = mmap(victim_at, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  ASSERT_EQ(victim, static_cast<void*>(victim_at)) << "the page below the child's stack is taken; rerun";
  memset(victim, 0x5a, kPage);
  int pidfd = -1;
  long pid = CloneWithStack(*stack, OverflowTheStack, nullptr, &pidfd);
  ASSERT_GT(pid, 0) << "clone3: " << -pid;
  int status = WaitForExitStatus(static_cast<pid_t>(pid));
  close(pidfd);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the child did not die of its overflow, status " << status;
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  size_t changed = 0;
  for (size_t i = 0; i < kPage; ++i) changed += static_cast<unsigned char>(victim_at[i]) != 0x5a;
  EXPECT_EQ(changed, 0u) << "the child's overflow wrote into the parent's memory below its stack";
  munmap(victim, kPage);
}

#else

TEST(MemorySharingCloneTest, SanitizerBuildsUseAForkStyleClone) {
  GTEST_SKIP() << "NOT TESTED HERE: sanitizer builds start the sandbox child with a fork-style clone "
                  "(memory_sharing_clone.h); the plain build runs the shared-memory tests";
}

#endif

int ExitWithSeven(void*) { return 7; }

// The path sanitizer builds, root launches, cgroup runs and old kernels
// take: CloneCallingEntry without a stack continues on a copy of this frame.
TEST(MemorySharingCloneTest, AForkStyleCloneRunsTheEntryInACopy) {
  struct clone_args args {};
  args.flags = CLONE_CLEAR_SIGHAND;
  args.exit_signal = SIGCHLD;
  long pid = CloneCallingEntry(&args, ExitWithSeven, nullptr);
  ASSERT_GT(pid, 0) << "clone3: " << -pid;
  int status = WaitForExitStatus(static_cast<pid_t>(pid));
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 7);
}

// When the launch may share (memory_sharing_clone.h): never as root, never
// for a sandbox running as another host user or in a cgroup.
TEST(MemorySharingCloneTest, OnlyAChildThatStaysTheLaunchersUserAndJoinsNoCgroupShares) {
  EXPECT_FALSE(ChildMayShareMemory(geteuid(), getegid(), /*cgroup_before_exec=*/true));
  EXPECT_FALSE(ChildMayShareMemory(geteuid() + 1, getegid(), false));
  EXPECT_FALSE(ChildMayShareMemory(geteuid(), getegid() + 1, false));
  if (geteuid() == 0) {
    EXPECT_FALSE(LauncherMayShareMemory()) << "a root launcher's child drops to host uid 65534";
    EXPECT_FALSE(ChildMayShareMemory(0, 0, false));
  } else {
    EXPECT_EQ(ChildMayShareMemory(geteuid(), getegid(), false), LauncherMayShareMemory());
  }
}

}  // namespace
}  // namespace cocoon::enforcer
