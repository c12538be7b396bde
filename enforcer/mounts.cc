// Child side of the mount tree (issue 4, step 2). Runs in the fresh mount
// namespace, still seeing the host's tree, with every capability of the new
// user namespace. Async-signal-safe: raw syscalls on the parent's precomputed
// ChildMountOp list; paths are joined in stack buffers only for mkdir -p.
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

int SetMountAttr(const char* path, uint64_t attr_set, unsigned int flags) noexcept {
  struct mount_attr attr {};
  attr.attr_set = attr_set;
  return static_cast<int>(syscall(SYS_mount_setattr, AT_FDCWD, path, flags, &attr, sizeof(attr)));
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
    if (mkdir(path, 0755) != 0 && errno != EEXIST) return Fail(error, ChildStep::kMkdirTarget, errno, index);
    path[i] = '/';
  }
  if (what == MountPoint::kParentsOnly) return true;
  if (what == MountPoint::kDirectory) {
    if (mkdir(path, 0755) != 0 && errno != EEXIST) return Fail(error, ChildStep::kMkdirTarget, errno, index);
    return true;
  }
  int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    // An existing read-only file (inside a ro bind) is a valid mount point.
    if (errno != EROFS && errno != EEXIST && errno != EACCES) return Fail(error, ChildStep::kMkdirTarget, errno, index);
    struct stat st;
    if (lstat(path, &st) != 0 || S_ISDIR(st.st_mode)) return Fail(error, ChildStep::kMkdirTarget, ENOENT, index);
    return true;
  }
  close(fd);
  return true;
}

bool ApplyOp(const ChildSpec& spec, const ChildMountOp& op, size_t root_len, ChildError* error, int index) noexcept {
  if (op.kind == ChildMountKind::kSymlink) {
    if (!MakeMountPoint(op, root_len, MountPoint::kParentsOnly, error, index)) return false;
    if (symlink(op.source, op.target) != 0 && errno != EEXIST) return Fail(error, ChildStep::kSymlink, errno, index);
    return true;
  }
  if (!op.mount_point_exists &&
      !MakeMountPoint(op, root_len, op.target_is_dir ? MountPoint::kDirectory : MountPoint::kFile, error, index)) {
    return false;
  }
  switch (op.kind) {
    case ChildMountKind::kBind:
      if (mount(op.source, op.target, nullptr, MS_BIND | MS_REC, nullptr) != 0) return Fail(error, ChildStep::kBind, errno, index);
      if (SetMountAttr(op.target, op.attr_set, AT_RECURSIVE) != 0) return Fail(error, ChildStep::kMountAttr, errno, index);
      return true;
    case ChildMountKind::kDevice:
      if (mount(op.source, op.target, nullptr, MS_BIND, nullptr) != 0) return Fail(error, ChildStep::kDevice, errno, index);
      if (SetMountAttr(op.target, op.attr_set, 0) != 0) return Fail(error, ChildStep::kMountAttr, errno, index);
      return true;
    case ChildMountKind::kTmpfs:
      if (mount("tmpfs", op.target, "tmpfs", op.flags, op.data) != 0) return Fail(error, ChildStep::kTmpfs, errno, index);
      return true;
    case ChildMountKind::kWorkDir: {
      WorkMountStep step = WorkMountStep::kNone;
      int err = MountWorkDirInChild(*spec.work_spec, op.target, spec.work_sock, &step);
      if (err != 0) return Fail(error, ChildStep::kWorkDir, err, static_cast<int>(step));
      return true;
    }
    case ChildMountKind::kProc:
      if (mount("proc", op.target, "proc", op.flags, nullptr) != 0) return Fail(error, ChildStep::kProc, errno, index);
      return true;
    case ChildMountKind::kMaskFile:
      if (mount(op.source, op.target, nullptr, MS_BIND, nullptr) != 0) return Fail(error, ChildStep::kMask, errno, index);
      if (SetMountAttr(op.target, op.attr_set, 0) != 0) return Fail(error, ChildStep::kMountAttr, errno, index);
      return true;
    case ChildMountKind::kMaskDir:
      if (mount("tmpfs", op.target, "tmpfs", op.flags, op.data) != 0) return Fail(error, ChildStep::kMask, errno, index);
      return true;
    case ChildMountKind::kSymlink:
      break;
  }
  return true;
}

}  // namespace

bool BuildMountTree(const ChildSpec& spec, ChildError* error) noexcept {
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return Fail(error, ChildStep::kMountPrivate, errno);
  if (mount("tmpfs", spec.new_root, "tmpfs", MS_NOSUID | MS_NODEV, spec.new_root_data) != 0) {
    return Fail(error, ChildStep::kMountNewRoot, errno);
  }
  size_t root_len = strlen(spec.new_root);
  for (size_t i = 0; i < spec.mount_count; ++i) {
    if (!ApplyOp(spec, spec.mounts[i], root_len, error, static_cast<int>(i))) return false;
  }
  if (SetMountAttr(spec.new_root, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0) != 0) {
    return Fail(error, ChildStep::kRootReadOnly, errno);
  }
  if (chdir(spec.new_root) != 0) return Fail(error, ChildStep::kPivotRoot, errno);
  if (syscall(SYS_pivot_root, ".", ".") != 0) return Fail(error, ChildStep::kPivotRoot, errno);
  if (umount2(".", MNT_DETACH) != 0) return Fail(error, ChildStep::kDetachOldRoot, errno);
  if (chdir("/") != 0) return Fail(error, ChildStep::kChdir, errno);
  return true;
}

}  // namespace cocoon::enforcer::child
