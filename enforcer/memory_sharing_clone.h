// Starting the sandbox's first process without copying the parent's memory.
//
// A fork-style clone copies the parent's page tables (~0.1 ms for the
// launcher), makes every page the parent writes afterwards a copy-on-write
// fault (~2-4 us each on this VM; the parent builds the spec while the child
// makes its namespaces), and makes the child's execve tear the copy down
// again, on the launch's critical path. posix_spawn(3) avoids all three with
// CLONE_VM|CLONE_VFORK. We cannot suspend the parent (CLONE_VFORK): it
// prepares the run while the child unshares. So the child runs in the
// parent's memory, on a stack of its own, concurrently with the parent,
// until execve gives it a fresh address space.
//
// What that demands of the child (child_main.cc and the steps it calls):
//  - raw system calls only (raw_syscall.h): it shares the calling thread's
//    TLS, so a glibc wrapper would write the parent's errno and a libc lock
//    would take the child for the parent thread;
//  - no allocation, and no writes to memory but its own stack and the
//    shared pages meant for it (the listener handoff);
//  - everything it reads (its ChildBootstrap, the spec arena) stays mapped
//    and unchanged until it has exec'd or died: StartedChild owns them and
//    reaps the child before unmapping anything.
//
// Sanitizer builds keep the fork-style clone: their runtimes keep per-thread
// state in TLS (ASan's fake stacks, report buffers) and intercept libc calls,
// which a child sharing the thread's TLS would corrupt.
#pragma once

#include <linux/sched.h>

#include <cstddef>

#include "compiler/common/status.h"

namespace cocoon::enforcer {

// CMakeLists.txt sets it to 0 for COCOON_SANITIZE and COCOON_FUZZ builds.
#ifndef COCOON_CHILD_SHARES_MEMORY
#define COCOON_CHILD_SHARES_MEMORY 1
#endif

// The child's own stack: an anonymous mapping with an inaccessible guard
// page below it, so an overflow faults in the child instead of writing into
// whatever parent mapping lies below.
class ChildStack {
 public:
  // 256 KiB: the deepest step keeps two PATH_MAX buffers; pages are only
  // allocated when touched.
  static constexpr size_t kSize = size_t{256} << 10;

  static Result<ChildStack> Map();
  ChildStack(ChildStack&& other) noexcept;
  ChildStack& operator=(ChildStack&& other) noexcept;
  ChildStack(const ChildStack&) = delete;
  ChildStack& operator=(const ChildStack&) = delete;
  ~ChildStack();

  // For clone_args.stack / stack_size: the usable part, above the guard.
  void* base() const { return base_ == nullptr ? nullptr : static_cast<char*>(base_) + kGuard; }
  size_t size() const { return kSize; }

 private:
  static constexpr size_t kGuard = 4096;
  explicit ChildStack(void* base) : base_(base) {}
  void* base_ = nullptr;
};

// clone3 with `args` (the caller sets flags, pidfd, cgroup...). With a
// stack (args->stack, args->stack_size set), the child starts on it and
// calls entry(arg), then exits with its result; entry must never return
// into the caller's frames (they are the parent's). Returns the child's pid
// to the parent, or -errno.
long CloneCallingEntry(struct clone_args* args, int (*entry)(void*), void* arg) noexcept;

}  // namespace cocoon::enforcer
