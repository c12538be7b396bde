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
// When it may share (ChildMayShareMemory), because the kernel treats every
// process using one address space as one for some purposes:
//  - a core-dumping signal kills every process sharing the mm before Linux
//    5.16 ("coredump: Limit coredumps to a single thread group"): a SIGSEGV
//    or SIGQUIT in the child would take the launcher (or a whole `cocoon
//    mcp`) with it. Older kernels get the fork-style clone.
//  - a memory cgroup's OOM killer kills every process sharing the victim's
//    mm: a child that joins (v1) or is born in (v2) the sandbox's memory
//    group before exec, and runs it out of memory in execve, would take the
//    launcher with it. Runs with any cgroup get the fork-style clone.
//  - a credential change sets the mm's dumpable flag (commit_creds): a root
//    launcher's child that drops to host uid 65534 would make the
//    launcher's own memory non-dumpable, or, with fs.suid_dumpable=1,
//    ptrace-able by every host process running as 65534 through the child.
//    So only a child that stays the launcher's own host uid and gid shares
//    (rootless runs: userns.h); root runs get the fork-style clone.
// Sanitizer builds keep the fork-style clone: their runtimes keep per-thread
// state in TLS (ASan's fake stacks, report buffers) and intercept libc calls,
// which a child sharing the thread's TLS would corrupt.
#pragma once

#include <linux/sched.h>
#include <sys/types.h>

#include <cstddef>

#include "compiler/common/status.h"

// CMakeLists.txt sets it to 0 for COCOON_SANITIZE and COCOON_FUZZ builds.
// Also 0 for a sanitizer passed by hand in CMAKE_CXX_FLAGS.
#if !defined(COCOON_CHILD_SHARES_MEMORY) && defined(__SANITIZE_ADDRESS__)
#define COCOON_CHILD_SHARES_MEMORY 0
#endif
#if !defined(COCOON_CHILD_SHARES_MEMORY) && defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define COCOON_CHILD_SHARES_MEMORY 0
#endif
#endif
#ifndef COCOON_CHILD_SHARES_MEMORY
#define COCOON_CHILD_SHARES_MEMORY 1
#endif

namespace cocoon::enforcer {

// Whether a sandbox child may run in the launcher's memory (see above): the
// build allows it, the kernel is 5.16 or newer, the sandbox keeps the
// launcher's host uid and gid (`sandbox_host_uid`, `sandbox_host_gid`), and
// no cgroup is joined before exec (`cgroup_before_exec`).
bool ChildMayShareMemory(uid_t sandbox_host_uid, gid_t sandbox_host_gid, bool cgroup_before_exec);

// The same rule where the ids and cgroups are not planned yet (a child
// started before the plan is parsed): only a non-root launcher's child
// might share; Fits and ChildMayShareMemory decide once they are.
bool LauncherMayShareMemory();

// Linux 5.16+: a core dump kills only the dumping process, not every
// process sharing its memory (the first of the conditions above).
bool KernelLimitsCoreDumpsToOneProcess();

// The child's own stack: an anonymous mapping with an inaccessible guard
// region below it, so an overflow faults in the child instead of writing
// into whatever parent mapping lies below. The guard is 64 KiB, not a page:
// one frame can be larger than a page (two PATH_MAX buffers), and GCC's
// stack-clash probes on aarch64 assume 64 KiB.
class ChildStack {
 public:
  // 256 KiB: the deepest step keeps a page of overlay options and two
  // PATH_MAX buffers; pages are only allocated when touched.
  static constexpr size_t kSize = size_t{256} << 10;
  static constexpr size_t kGuard = size_t{64} << 10;

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
