// Child side: the second, nested user namespace the command runs in, as
// bubblewrap does when it switches to the sandbox's uid.
//
// Why a second one: every other namespace of the sandbox (mount, pid, net,
// uts, ipc, cgroup) and so every mount the child made is owned by the first
// user namespace, where the child held all capabilities to build them. The
// command then runs in a child of that namespace: capabilities are only ever
// checked against the owning namespace or its ancestors, so nothing the
// command could hold in its own namespace (it drops everything anyway:
// caps.cc) counts for umount, remount, pivot_root, sethostname or network
// configuration. The dropped capabilities, locked securebits,
// no_new_privs and the seccomp filter each already refuse these; this holds
// even if all of them were bypassed. The nested namespace also maps only the
// sandbox's own uid and gid: as root, the first namespace maps host root
// (userns.h says why the parent needs that) and the command no longer sees
// it; files of unmapped owners show as the overflow id 65534.
//
// Kernel rules this relies on (user_namespaces(7)):
//  - unshare(CLONE_NEWUSER) needs no capability, but the caller's euid and
//    egid must be mapped in the current namespace: BecomeSandboxUser runs
//    first, in the first namespace.
//  - afterwards the caller has every capability in the new namespace, and
//    with it may write its own maps, provided each maps one id to its own
//    id in the parent namespace; an unprivileged gid_map also needs
//    setgroups "deny" first.
//  - the maps are opened through /proc/self after the unshare: the target
//    namespace is fixed when the file is opened. /proc is the sandbox's own
//    (mounted by BuildMountTree, which every plan includes).
//  - unshare also resets securebits and fills every capability set of the
//    new namespace: DropPrivileges must come after this step.
#include <fcntl.h>
#include <sched.h>
#include <sys/syscall.h>

#include <cerrno>

#include "enforcer/child_steps.h"

namespace cocoon::enforcer::child {
namespace {

bool WriteSelfProcFile(const char* path, const char* text, size_t len, int which, ChildError* error) noexcept {
  long fd = sys::Call(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CLOEXEC);
  if (!Succeeded(fd, error, ChildStep::kNestedIdMaps, which)) return false;
  // One write: the kernel takes a map only whole, in a single write(2).
  long n = sys::CallRestarting(SYS_write, fd, text, len);
  sys::Call(SYS_close, fd);
  if (n < 0) return Fail(error, ChildStep::kNestedIdMaps, sys::ErrorOf(n), which);
  if (static_cast<size_t>(n) != len) return Fail(error, ChildStep::kNestedIdMaps, EIO, which);
  return true;
}

}  // namespace

// The user.max_* counters are per user namespace, and what a namespace's
// processes hold counts against the limit of every ancestor too (inc_ucount
// walks up the chain, charging each level to the namespace's owner). Written
// through the sandbox's fresh /proc right after it is mounted: the files are
// per namespace by whoever opens them, and /proc/sys is made read-only later.
//  - max_user_namespaces = 1 admits the nested namespace the command runs in
//    and nothing below it: a user namespace made by the command fails with
//    ENOSPC in the kernel, whatever a seccomp filter lets through
//    (bubblewrap's --disable-userns). The seccomp prologue denies namespace
//    creation first, with EPERM (compiler/backends/seccomp).
//  - inotify instances and watches: as root, the sandbox's namespace is
//    owned by root, so they are charged to host root's own limits (128
//    instances): one sandbox took them all, and root daemons that open one
//    failed for its whole run. Capped here, a sandbox holds a small share.
//    A kernel without inotify has no such files: nothing to cap.
bool LimitUserNamespaceCounters(const char* proc_mount, ChildError* error) noexcept {
  // An absolute walk enters the proc mount just made over proc_mount (a
  // walk from a cwd on the mount point would stay on the covered directory).
  long proc = sys::Call(SYS_openat, AT_FDCWD, proc_mount, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (!Succeeded(proc, error, ChildStep::kUserNamespaceLimit)) return false;
  // One walk to sys/user (a /proc/sys lookup is a table search per level).
  long user = sys::Call(SYS_openat, proc, "sys/user", O_PATH | O_DIRECTORY | O_CLOEXEC);
  sys::Call(SYS_close, proc);
  if (!Succeeded(user, error, ChildStep::kUserNamespaceLimit)) return false;
  struct Counter {
    const char* file;
    const char* value;
    bool optional;
  };
  static constexpr Counter kCounters[] = {{"max_user_namespaces", "1", false},
                                          {"max_inotify_instances", "16", true},
                                          {"max_inotify_watches", "8192", true}};
  bool ok = true;
  for (int i = 0; ok && i < static_cast<int>(sizeof kCounters / sizeof kCounters[0]); ++i) {
    const Counter& counter = kCounters[i];
    long fd = sys::Call(SYS_openat, user, counter.file, O_WRONLY | O_CLOEXEC);
    if (fd == -ENOENT && counter.optional) continue;
    if (fd < 0) {
      ok = Fail(error, ChildStep::kUserNamespaceLimit, sys::ErrorOf(fd), i);
      break;
    }
    size_t len = 0;
    while (counter.value[len] != '\0') ++len;
    long n = sys::CallRestarting(SYS_write, fd, counter.value, len);
    sys::Call(SYS_close, fd);
    if (n < 0) ok = Fail(error, ChildStep::kUserNamespaceLimit, sys::ErrorOf(n), i);
    else if (static_cast<size_t>(n) != len) ok = Fail(error, ChildStep::kUserNamespaceLimit, EIO, i);
  }
  sys::Call(SYS_close, user);
  return ok;
}

bool EnterNestedUserNamespace(const ChildSpec& spec, ChildError* error) noexcept {
  static constexpr char kDeny[] = "deny";
  return Succeeded(sys::Call(SYS_unshare, CLONE_NEWUSER), error, ChildStep::kNestedUserNamespace) &&
         WriteSelfProcFile("/proc/self/setgroups", kDeny, sizeof(kDeny) - 1, 0, error) &&
         WriteSelfProcFile("/proc/self/gid_map", spec.nested_gid_map, spec.nested_gid_map_len, 1, error) &&
         WriteSelfProcFile("/proc/self/uid_map", spec.nested_uid_map, spec.nested_uid_map_len, 2, error);
}

}  // namespace cocoon::enforcer::child
