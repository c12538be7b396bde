// System calls without libc, for the sandbox child between clone and execve.
//
// The child runs in its parent's address space (memory_sharing_clone.h), on
// a stack of its own but with the parent thread's TLS: glibc's wrappers
// would store errno into the parent thread's errno while that thread runs
// (and checks errno) concurrently, and any libc lock would take the child
// for that thread. So the child's steps call the kernel directly: each call
// returns the result, or -errno, and touches no memory but its arguments.
//
// The Linux ABI, as the kernel's own tools/include/nolibc does it: x86_64
// passes the number in rax and arguments in rdi, rsi, rdx, r10, r8, r9, and
// the `syscall` instruction clobbers rcx and r11; aarch64 passes the number
// in x8 and arguments in x0-x5, and `svc 0` returns in x0 and clobbers
// nothing else.
#pragma once

#include <sys/syscall.h>

#include <cerrno>  // the E* numbers only; errno itself is never touched
#include <type_traits>

namespace cocoon::enforcer::sys {

#if defined(__x86_64__)
inline long Syscall6(long number, long a1, long a2, long a3, long a4, long a5, long a6) noexcept {
  long result;
  register long r10 __asm__("r10") = a4;
  register long r8 __asm__("r8") = a5;
  register long r9 __asm__("r9") = a6;
  __asm__ volatile("syscall"
                   : "=a"(result)
                   : "0"(number), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
                   : "rcx", "r11", "memory");
  return result;
}
#elif defined(__aarch64__)
inline long Syscall6(long number, long a1, long a2, long a3, long a4, long a5, long a6) noexcept {
  register long x8 __asm__("x8") = number;
  register long x0 __asm__("x0") = a1;
  register long x1 __asm__("x1") = a2;
  register long x2 __asm__("x2") = a3;
  register long x3 __asm__("x3") = a4;
  register long x4 __asm__("x4") = a5;
  register long x5 __asm__("x5") = a6;
  __asm__ volatile("svc 0"
                   : "+r"(x0)
                   : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
                   : "memory", "cc");
  return x0;
}
#else
#error "raw_syscall.h: add this architecture's system call convention"
#endif

// Any argument that converts to long: integers, enums, pointers, nullptr.
template <typename T>
inline long Arg(T value) noexcept {
  if constexpr (std::is_null_pointer_v<T>) {
    return 0;
  } else if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<long>(value);
  } else {
    return static_cast<long>(value);
  }
}

template <typename... Args>
inline long Call(long number, Args... args) noexcept {
  static_assert(sizeof...(Args) <= 6, "Linux system calls take at most six arguments");
  long a[6] = {Arg(args)...};
  return Syscall6(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}

// The errno of a failed call (its result negated), or 0 on success.
inline int ErrorOf(long result) noexcept { return result < 0 && result > -4096 ? static_cast<int>(-result) : 0; }

// Retries a call interrupted by a signal.
template <typename... Args>
inline long CallRestarting(long number, Args... args) noexcept {
  long result;
  do {
    result = Call(number, args...);
  } while (result == -EINTR);
  return result;
}

inline long Mount(const char* source, const char* target, const char* type, unsigned long flags,
                  const void* data) noexcept {
  return Call(SYS_mount, source, target, type, flags, data);
}

[[noreturn]] inline void ExitGroup(int status) noexcept {
  Call(SYS_exit_group, status);
  // Only a seccomp filter that denies exit_group gets here: the child's
  // filter is in place between seccomp() and execve, and a policy without a
  // syscalls section fails every call with ENOSYS, execve and exit_group
  // included. Looping on exit_group spun a CPU until the supervisor's start
  // deadline (30 s); an illegal instruction ends the process (SIGILL)
  // without a system call.
  for (;;) __builtin_trap();
}

}  // namespace cocoon::enforcer::sys
