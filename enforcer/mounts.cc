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
//     writable; set on the detached clone, so the tree is never visible
//     writable even here), the work dir, tmpfs, a new procfs (needs a fully visible proc
//     in this namespace: fs/namespace.c mount_too_revealing), device nodes
//     bind-mounted onto empty files (mknod is not allowed in a user namespace),
//     symlinks (/dev/fd..., and a merged-/usr host's /bin -> usr/bin when
//     /usr is bound: child_spec_builder.cc), masks. Each op's mkdir -p starts
//     below the deepest ancestor an earlier op made (existing_parent_len).
//
//     Host paths are looked up twice: by the parent, which checks them, and
//     here, milliseconds later. Whoever can write in a bound host directory
//     (its owner, a concurrent sandbox with the same writable bind) can swap
//     a checked path for a symlink in between, and mount(2) follows symlinks
//     in both its paths, before pivot_root against the HOST root, while
//     this child still holds the full capabilities of a user namespace that
//     maps host root when cocoon runs as root. So a bind's source is opened
//     with RESOLVE_NO_SYMLINKS and must be the inode the parent stat()ed,
//     and is bound from that fd (open_tree + move_mount, Linux 5.2); a mount
//     point inside a bound host directory is never created, only opened
//     beneath the new root with RESOLVE_NO_SYMLINKS, and mounted on through
//     that fd. A swap then refuses the run instead of redirecting a mount.
//  4. The new root's own tmpfs remounted read-only: nothing but the
//     policy's writable places can be written.
//  5. pivot_root(".", ".") then umount2(".", MNT_DETACH): the old root is
//     stacked under the new one and detached (pivot_root(2) NOTES), so no
//     path reaches the host tree any more.
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
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

long OpenWithoutSymlinks(int dir_fd, const char* path, uint64_t resolve) noexcept {
  struct open_how how {};
  how.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC;
  how.resolve = resolve | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  return sys::Call(SYS_openat2, dir_fd, path, &how, sizeof(how));
}

// A bind's source, as the fd of exactly the directory or file the parent
// checked: its canonical path with no symlink followed (ELOOP otherwise),
// and the same inode (ESTALE otherwise). -errno on failure.
long OpenBindSource(const ChildMountOp& op) noexcept {
  long fd = OpenWithoutSymlinks(AT_FDCWD, op.source, 0);
  if (fd < 0) return fd;
  struct stat st;
  long rc = sys::Call(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH);
  if (rc == 0 && (st.st_dev != op.source_dev || st.st_ino != op.source_ino)) rc = -ESTALE;
  if (rc != 0) {
    sys::Call(SYS_close, fd);
    return rc;
  }
  return fd;
}

// Where an op mounts: by path on the new root's own tmpfs (nobody else can
// reach it), or, inside a bound host directory, an fd opened beneath the
// new root without following symlinks (see the top of this file).
struct MountPointRef {
  int fd = -1;               // >= 0: mount on this fd
  const char* path = nullptr;
};

bool OpenMountPoint(const ChildMountOp& op, int root_fd, size_t root_len, MountPointRef* where, ChildError* error,
                    int index) noexcept {
  where->path = op.target;
  if (!op.target_in_host_tree) return true;
  long fd = OpenWithoutSymlinks(root_fd, op.target + root_len + 1, RESOLVE_BENEATH);
  if (fd < 0) return Fail(error, ChildStep::kMountPoint, sys::ErrorOf(fd), index);
  where->fd = static_cast<int>(fd);
  return true;
}

// Binds the tree at `source_fd` (recursively or just its top mount) with
// `attr_set` on every mount of the clone before it is attached at `where`.
long BindFromFd(int source_fd, bool recursive, uint64_t attr_set, const MountPointRef& where, ChildStep* failed) noexcept {
  *failed = ChildStep::kBind;
  long tree = sys::Call(SYS_open_tree, source_fd, "",
                        OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0));
  if (tree < 0) return tree;
  struct mount_attr attr {};
  attr.attr_set = attr_set;
  long rc = sys::Call(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr, sizeof(attr));
  if (rc != 0) {
    *failed = ChildStep::kMountAttr;
  } else if (where.fd >= 0) {
    rc = sys::Call(SYS_move_mount, tree, "", where.fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
  } else {
    rc = sys::Call(SYS_move_mount, tree, "", AT_FDCWD, where.path, MOVE_MOUNT_F_EMPTY_PATH);
  }
  sys::Call(SYS_close, tree);
  return rc;
}

// mount(2) of a new filesystem (tmpfs, proc) at `where`. Through an fd: as
// the working directory, mounting on "." (mount(2) has no fd form; the cwd
// is reset by the chdir before pivot_root).
long MountFilesystem(const char* source, const char* type, unsigned long flags, const char* data,
                     const MountPointRef& where) noexcept {
  if (where.fd < 0) return sys::Mount(source, where.path, type, flags, data);
  long rc = sys::Call(SYS_fchdir, where.fd);
  return rc != 0 ? rc : sys::Mount(source, ".", type, flags, data);
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

bool ApplyOp(const ChildSpec& spec, const ChildMountOp& op, int root_fd, size_t root_len, ChildError* error,
             int index) noexcept {
  if (op.kind == ChildMountKind::kSymlink) {
    if (!MakeMountPoint(op, root_len, MountPoint::kParentsOnly, error, index)) return false;
    long rc = sys::Call(SYS_symlinkat, op.source, AT_FDCWD, op.target);
    return rc == -EEXIST || Succeeded(rc, error, ChildStep::kSymlink, index);
  }
  if (!op.mount_point_exists &&
      !MakeMountPoint(op, root_len, op.target_is_dir ? MountPoint::kDirectory : MountPoint::kFile, error, index)) {
    return false;
  }
  MountPointRef where;
  if (!OpenMountPoint(op, root_fd, root_len, &where, error, index)) return false;
  bool ok = true;
  switch (op.kind) {
    case ChildMountKind::kBind:
    case ChildMountKind::kDevice:
    case ChildMountKind::kMaskFile: {
      long source = op.kind == ChildMountKind::kBind
                        ? OpenBindSource(op)
                        : sys::Call(SYS_openat, AT_FDCWD, op.source, O_PATH | O_NOFOLLOW | O_CLOEXEC);
      ChildStep step = op.kind == ChildMountKind::kBind     ? ChildStep::kBindSource
                       : op.kind == ChildMountKind::kDevice ? ChildStep::kDevice
                                                            : ChildStep::kMask;
      if (source < 0) {
        ok = Fail(error, step, sys::ErrorOf(source), index);
        break;
      }
      ChildStep failed;
      long rc = BindFromFd(static_cast<int>(source), op.kind == ChildMountKind::kBind, op.attr_set, where, &failed);
      sys::Call(SYS_close, source);
      ok = Succeeded(rc, error, failed == ChildStep::kBind && op.kind != ChildMountKind::kBind ? step : failed, index);
      break;
    }
    case ChildMountKind::kTmpfs:
      ok = Succeeded(MountFilesystem("tmpfs", "tmpfs", op.flags, op.data, where), error, ChildStep::kTmpfs, index);
      break;
    case ChildMountKind::kWorkDir: {
      // The builder never puts the work dir inside a bound host directory.
      WorkMountStep step = WorkMountStep::kNone;
      int err = MountWorkDirInChild(*spec.work_spec, op.target, spec.work_sock, &step);
      if (err != 0) ok = Fail(error, ChildStep::kWorkDir, err, static_cast<int>(step));
      break;
    }
    case ChildMountKind::kProc:
      ok = Succeeded(MountFilesystem("proc", "proc", op.flags, nullptr, where), error, ChildStep::kProc, index);
      break;
    case ChildMountKind::kMaskDir:
      ok = Succeeded(MountFilesystem("tmpfs", "tmpfs", op.flags, op.data, where), error, ChildStep::kMask, index);
      break;
    case ChildMountKind::kSymlink:
      break;
  }
  if (where.fd >= 0) sys::Call(SYS_close, where.fd);
  return ok;
}

}  // namespace

bool BuildMountTree(const ChildSpec& spec, ChildError* error) noexcept {
  if (!Succeeded(sys::Mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr), error, ChildStep::kMountPrivate) ||
      !Succeeded(sys::Mount("tmpfs", spec.new_root, "tmpfs", MS_NOSUID | MS_NODEV, spec.new_root_data), error,
                 ChildStep::kMountNewRoot)) {
    return false;
  }
  size_t root_len = strlen(spec.new_root);
  long root_fd = sys::Call(SYS_openat, AT_FDCWD, spec.new_root, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (!Succeeded(root_fd, error, ChildStep::kMountNewRoot)) return false;
  bool ok = true;
  for (size_t i = 0; ok && i < spec.mount_count; ++i) {
    ok = ApplyOp(spec, spec.mounts[i], static_cast<int>(root_fd), root_len, error, static_cast<int>(i));
  }
  sys::Call(SYS_close, root_fd);
  if (!ok) return false;
  return Succeeded(SetMountAttr(spec.new_root, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0), error,
                   ChildStep::kRootReadOnly) &&
         Succeeded(sys::Call(SYS_chdir, spec.new_root), error, ChildStep::kPivotRoot) &&
         Succeeded(sys::Call(SYS_pivot_root, ".", "."), error, ChildStep::kPivotRoot) &&
         Succeeded(sys::Call(SYS_umount2, ".", MNT_DETACH), error, ChildStep::kDetachOldRoot) &&
         Succeeded(sys::Call(SYS_chdir, "/"), error, ChildStep::kChdir);
}

}  // namespace cocoon::enforcer::child
