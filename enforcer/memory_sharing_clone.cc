#include "enforcer/memory_sharing_clone.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <utility>

namespace cocoon::enforcer {
// Linux 5.16 limits a core dump to the dumping thread group; before it,
// every process sharing the mm is killed (fs/coredump.c zap_threads), even
// with RLIMIT_CORE 0 (the wait comes before the size check).
bool KernelLimitsCoreDumpsToOneProcess() {
  static const bool limited = [] {
    struct utsname uts {};
    if (uname(&uts) != 0) return false;
    int major = 0;
    int minor = 0;
    if (std::sscanf(uts.release, "%d.%d", &major, &minor) != 2) return false;
    return major > 5 || (major == 5 && minor >= 16);
  }();
  return limited;
}

bool LauncherMayShareMemory() {
  return COCOON_CHILD_SHARES_MEMORY != 0 && geteuid() != 0 && KernelLimitsCoreDumpsToOneProcess();
}

bool ChildMayShareMemory(uid_t sandbox_host_uid, gid_t sandbox_host_gid, bool cgroup_before_exec) {
  return LauncherMayShareMemory() && !cgroup_before_exec && sandbox_host_uid == geteuid() &&
         sandbox_host_gid == getegid();
}

Result<ChildStack> ChildStack::Map() {
  void* base = mmap(nullptr, kGuard + kSize, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (base == MAP_FAILED) return ErrnoError("mmap the sandbox child's stack");
  if (mprotect(base, kGuard, PROT_NONE) != 0) {
    int err = errno;
    munmap(base, kGuard + kSize);
    return ErrnoError("mprotect the child stack's guard page", err);
  }
  return ChildStack(base);
}

ChildStack::ChildStack(ChildStack&& other) noexcept : base_(std::exchange(other.base_, nullptr)) {}

ChildStack& ChildStack::operator=(ChildStack&& other) noexcept {
  if (this != &other) {
    if (base_ != nullptr) munmap(base_, kGuard + kSize);
    base_ = std::exchange(other.base_, nullptr);
  }
  return *this;
}

ChildStack::~ChildStack() {
  if (base_ != nullptr) munmap(base_, kGuard + kSize);
}

// The child returns from the system call on the new stack, where the
// caller's frames do not exist: it must call entry without returning from
// this function, so the whole path is one asm block (as glibc's clone.S and
// musl's __clone do). The kernel sets the child's stack pointer to
// stack + stack_size; it is aligned to 16 bytes anyway before the call, as
// both ABIs require (a fork-style call, without a stack, continues on a copy
// of this frame, whose alignment the compiler did not promise).
long CloneCallingEntry(struct clone_args* args, int (*entry)(void*), void* arg) noexcept {
#if defined(__x86_64__)
  long result;
  register long entry_reg __asm__("r9") = reinterpret_cast<long>(entry);
  register long arg_reg __asm__("r8") = reinterpret_cast<long>(arg);
  __asm__ volatile(
      "syscall\n\t"
      "testq %%rax, %%rax\n\t"
      "jnz 1f\n\t"
      // The child: no frame to unwind to, the argument in rdi, then exit(2)
      // with entry's result should it ever return.
      "xorl %%ebp, %%ebp\n\t"
      "andq $-16, %%rsp\n\t"
      "movq %%r8, %%rdi\n\t"
      "callq *%%r9\n\t"
      "movl %%eax, %%edi\n\t"
      "movl %[exit_nr], %%eax\n\t"
      "syscall\n\t"
      "hlt\n"
      "1:"
      : "=a"(result)
      : "0"(static_cast<long>(SYS_clone3)), "D"(args), "S"(sizeof(*args)), "r"(entry_reg), "r"(arg_reg),
        [exit_nr] "i"(SYS_exit)
      : "rcx", "r11", "memory");
  return result;
#elif defined(__aarch64__)
  register long x8 __asm__("x8") = SYS_clone3;
  register long x0 __asm__("x0") = reinterpret_cast<long>(args);
  register long x1 __asm__("x1") = sizeof(*args);
  register long x2 __asm__("x2") = reinterpret_cast<long>(entry);
  register long x3 __asm__("x3") = reinterpret_cast<long>(arg);
  __asm__ volatile(
      "svc 0\n\t"
      "cbnz x0, 1f\n\t"
      "mov x29, xzr\n\t"
      "mov x30, xzr\n\t"
      "mov x9, sp\n\t"
      "and x9, x9, #-16\n\t"
      "mov sp, x9\n\t"
      "mov x0, x3\n\t"
      "blr x2\n\t"
      "mov x8, %[exit_nr]\n\t"
      "svc 0\n"
      "1:"
      : "+r"(x0)
      : "r"(x8), "r"(x1), "r"(x2), "r"(x3), [exit_nr] "i"(SYS_exit)
      : "x9", "memory", "cc");
  return x0;
#else
#error "memory_sharing_clone.cc: add this architecture's clone3 entry"
#endif
}

}  // namespace cocoon::enforcer
