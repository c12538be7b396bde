// Child side of the mount tree (issue 4, step 2). Runs in the fresh mount
// namespace, still seeing the host's tree, with every capability of the new
// user namespace. Raw syscalls only (child_steps.h) on the parent's
// precomputed ChildMountOp list; paths are joined in stack buffers only for
// mkdir -p.
//
// Sequence (each step one mount(2)/syscall, in this order):
//  1. "/" recursively MS_PRIVATE: nothing we mount propagates to the host and
//     host mount events do not reach the sandbox (mount_namespaces(7)).
//  2. A tmpfs on the parent's empty per-user directory: the new root. (Not on
//     /tmp as bwrap does, because bind sources and the staged work dir may
//     live under the host's /tmp and would be shadowed.)
//  3. The plan's ops, parents before children: binds (made ro,nosuid,nodev on
//     EVERY submount with mount_setattr(AT_RECURSIVE), Linux 5.12: a plain
//     MS_REMOUNT|MS_RDONLY only changes the top mount and leaves submounts
//     writable), the work dir, tmpfs, a new procfs (needs a fully visible proc
//     in this namespace: fs/namespace.c mount_too_revealing), device nodes
//     bind-mounted onto empty files (mknod is not allowed in a user namespace),
//     symlinks (/dev/fd..., and a merged-/usr host's /bin -> usr/bin when
//     /usr is bound: child_spec_builder.cc), masks. Each op's mkdir -p starts
//     below the deepest ancestor an earlier op made (existing_parent_len).
//  4. The new root's own tmpfs remounted read-only: nothing but the
//     policy's writable places can be written.
//  5. pivot_root(".", ".") then umount2(".", MNT_DETACH): the old root is
//     stacked under the new one and detached (pivot_root(2) NOTES), so no
//     path reaches the host tree any more.
#include <fcntl.h>
#include <linux/mount.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "enforcer/child_steps.h"

namespace cocoon::enforcer::child {
namespace {

long SetMountAttr(const char* path, uint64_t attr_set, unsigned int flags) noexcept {
  struct mount_attr attr {};
  attr.attr_set = attr_set;
  return sys::Call(SYS_mount_setattr, AT_FDCWD, path, flags, &attr, sizeof(attr));
}

// mkdir that accepts an existing directory: 0 or -errno.
long MakeDirectory(const char* path) noexcept {
  long rc = sys::Call(SYS_mkdirat, AT_FDCWD, path, 0755);
  return rc == -EEXIST ? 0 : rc;
}

enum class MountPoint { kDirectory, kFile, kParentsOnly };

// mkdir -p for the components of `target` below `root_len` bytes (the new
// root, which exists) and below the ancestor an earlier op made (the
// parent's existing_parent_len), then the mount point itself: a directory or
// an empty file. EEXIST is fine everywhere: the parent has checked that
// components inside bind mounts already exist on the host, so nothing is
// created there.
bool MakeMountPoint(const ChildMountOp& op, size_t root_len, MountPoint what, ChildError* error, int index) noexcept {
  char path[PATH_MAX];
  size_t len = strlen(op.target);
  if (len >= sizeof(path)) return Fail(error, ChildStep::kMkdirTarget, ENAMETOOLONG, index);
  memcpy(path, op.target, len + 1);
  for (size_t i = root_len + op.existing_parent_len + 1; i < len; ++i) {
    if (path[i] != '/') continue;
    path[i] = '\0';
    if (!Succeeded(MakeDirectory(path), error, ChildStep::kMkdirTarget, index)) return false;
    path[i] = '/';
  }
  if (what == MountPoint::kParentsOnly) return true;
  if (what == MountPoint::kDirectory) return Succeeded(MakeDirectory(path), error, ChildStep::kMkdirTarget, index);
  long fd = sys::Call(SYS_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    // An existing read-only file (inside a ro bind) is a valid mount point.
    if (fd != -EROFS && fd != -EEXIST && fd != -EACCES) return Fail(error, ChildStep::kMkdirTarget, sys::ErrorOf(fd), index);
    struct stat st;
    if (sys::Call(SYS_newfstatat, AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISDIR(st.st_mode)) {
      return Fail(error, ChildStep::kMkdirTarget, ENOENT, index);
    }
    return true;
  }
  sys::Call(SYS_close, fd);
  return true;
}

bool ApplyOp(const ChildSpec& spec, const ChildMountOp& op, size_t root_len, ChildError* error, int index) noexcept {
  if (op.kind == ChildMountKind::kSymlink) {
    if (!MakeMountPoint(op, root_len, MountPoint::kParentsOnly, error, index)) return false;
    long rc = sys::Call(SYS_symlinkat, op.source, AT_FDCWD, op.target);
    return rc == -EEXIST || Succeeded(rc, error, ChildStep::kSymlink, index);
  }
  if (!op.mount_point_exists &&
      !MakeMountPoint(op, root_len, op.target_is_dir ? MountPoint::kDirectory : MountPoint::kFile, error, index)) {
    return false;
  }
  switch (op.kind) {
    case ChildMountKind::kBind:
      return Succeeded(sys::Mount(op.source, op.target, nullptr, MS_BIND | MS_REC, nullptr), error, ChildStep::kBind, index) &&
             Succeeded(SetMountAttr(op.target, op.attr_set, AT_RECURSIVE), error, ChildStep::kMountAttr, index);
    case ChildMountKind::kDevice:
      return Succeeded(sys::Mount(op.source, op.target, nullptr, MS_BIND, nullptr), error, ChildStep::kDevice, index) &&
             Succeeded(SetMountAttr(op.target, op.attr_set, 0), error, ChildStep::kMountAttr, index);
    case ChildMountKind::kTmpfs:
      return Succeeded(sys::Mount("tmpfs", op.target, "tmpfs", op.flags, op.data), error, ChildStep::kTmpfs, index);
    case ChildMountKind::kWorkDir: {
      WorkMountStep step = WorkMountStep::kNone;
      int err = MountWorkDirInChild(*spec.work_spec, op.target, spec.work_sock, &step);
      if (err != 0) return Fail(error, ChildStep::kWorkDir, err, static_cast<int>(step));
      return true;
    }
    case ChildMountKind::kProc:
      return Succeeded(sys::Mount("proc", op.target, "proc", op.flags, nullptr), error, ChildStep::kProc, index);
    case ChildMountKind::kMaskFile:
      return Succeeded(sys::Mount(op.source, op.target, nullptr, MS_BIND, nullptr), error, ChildStep::kMask, index) &&
             Succeeded(SetMountAttr(op.target, op.attr_set, 0), error, ChildStep::kMountAttr, index);
    case ChildMountKind::kMaskDir:
      return Succeeded(sys::Mount("tmpfs", op.target, "tmpfs", op.flags, op.data), error, ChildStep::kMask, index);
    case ChildMountKind::kSymlink:
      break;
  }
  return true;
}

}  // namespace

bool BuildMountTree(const ChildSpec& spec, ChildError* error) noexcept {
  if (!Succeeded(sys::Mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), error, ChildStep::kMountPrivate) ||
      !Succeeded(sys::Mount("tmpfs", spec.new_root, "tmpfs", MS_NOSUID | MS_NODEV, spec.new_root_data), error,
                 ChildStep::kMountNewRoot)) {
    return false;
  }
  size_t root_len = strlen(spec.new_root);
  for (size_t i = 0; i < spec.mount_count; ++i) {
    if (!ApplyOp(spec, spec.mounts[i], root_len, error, static_cast<int>(i))) return false;
  }
  return Succeeded(SetMountAttr(spec.new_root, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0), error,
                   ChildStep::kRootReadOnly) &&
         Succeeded(sys::Call(SYS_chdir, spec.new_root), error, ChildStep::kPivotRoot) &&
         Succeeded(sys::Call(SYS_pivot_root, ".", "."), error, ChildStep::kPivotRoot) &&
         Succeeded(sys::Call(SYS_umount2, ".", MNT_DETACH), error, ChildStep::kDetachOldRoot) &&
         Succeeded(sys::Call(SYS_chdir, "/"), error, ChildStep::kChdir);
}

}  // namespace cocoon::enforcer::child
