// Internal to the enforcer: the child-side steps RunChild strings together.
// Every function makes raw system calls (raw_syscall.h: the child runs in
// the parent's memory and must not touch errno or libc state,
// memory_sharing_clone.h) on precomputed data, and returns false after
// filling *error with the failing step and errno.
#pragma once

#include "enforcer/child_spec.h"
#include "enforcer/raw_syscall.h"

namespace cocoon::enforcer::child {

// Private propagation, the new root tmpfs, every mount op, the new root made
// read-only, pivot_root into it and the old root detached (mounts.cc).
bool BuildMountTree(const ChildSpec& spec, ChildError* error) noexcept;

// Brings up "lo" in the fresh network namespace (net.cc).
bool BringUpLoopback(ChildError* error) noexcept;

// Network allow-lists: listens on 127.0.0.1:0 inside the namespace and sends
// that socket to the parent's connect broker over spec.broker_sock (net.cc).
bool SendBrokerListener(const ChildSpec& spec, ChildError* error) noexcept;

// Supplementary groups (as root), gid, uid, in the first user namespace;
// dumpable again (caps.cc).
bool BecomeSandboxUser(const ChildSpec& spec, ChildError* error) noexcept;

// Sets user.max_user_namespaces to 1 in the sandbox's first user namespace
// (the nested namespace is the last one) and caps its inotify instances and
// watches, through the /proc just mounted at `proc_mount` (nested_userns.cc).
// Called by BuildMountTree.
bool LimitUserNamespaceCounters(const char* proc_mount, ChildError* error) noexcept;

// unshare(CLONE_NEWUSER) and maps for the sandbox's own ids only: the
// namespaces and mounts made so far stay owned by the first user namespace
// (nested_userns.cc). After BecomeSandboxUser, before DropPrivileges.
bool EnterNestedUserNamespace(const ChildSpec& spec, ChildError* error) noexcept;

// Securebits, bounding and ambient sets, capset(0), no_new_privs (caps.cc).
bool DropPrivileges(const ChildSpec& spec, ChildError* error) noexcept;

// Landlock ruleset from the spec's rules, restrict_self (landlock.cc).
bool ApplyLandlock(const ChildSpec& spec, ChildError* error) noexcept;

// Loads the BPF program; with a listener, hands its fd to the parent through
// the shared page, announcing it on the error pipe `error_fd` first
// (seccomp_loader.cc). Must be the last step before execve.
bool LoadSeccomp(const ChildSpec& spec, int error_fd, ChildError* error) noexcept;

inline bool Fail(ChildError* error, ChildStep step, int err, int detail = 0) noexcept {
  error->step = static_cast<int>(step);
  error->err = err;
  error->detail = detail;
  return false;
}

// True when a raw call succeeded; otherwise records its errno for `step`.
inline bool Succeeded(long result, ChildError* error, ChildStep step, int detail = 0) noexcept {
  int err = sys::ErrorOf(result);
  return err == 0 || Fail(error, step, err, detail);
}

}  // namespace cocoon::enforcer::child
