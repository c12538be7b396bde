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
//     Every other mount point (and symlink) is created one directory fd at
//     a time beneath the new root, with no symlink followed, and mounted on
//     through its fd: those inside the work dir sit on the host's own files,
//     whose symlinks (`vendor -> /etc`) must not redirect a mkdir.
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

// Opens `name` in `dir_fd` as a directory that is not a symlink, making it
// first when it is missing: an fd, or -errno (ELOOP for a symlink: O_PATH |
// O_NOFOLLOW opens the link itself rather than failing).
// ChildMountOp::owner_uid: what the child makes in the work dir is the
// sandbox user's. Best effort: a failure leaves the owner the child built
// the tree as, which is no wider access for anyone.
void GiveToSandboxUser(const ChildMountOp& op, long fd) noexcept {
  if (op.owner_uid < 0 || fd < 0) return;
  sys::Call(SYS_fchownat, fd, "", op.owner_uid, op.owner_gid, AT_EMPTY_PATH);
}

long MakeAndOpenDirectory(int dir_fd, const char* name, const ChildMountOp& op) noexcept {
  long made = sys::Call(SYS_mkdirat, dir_fd, name, 0755);
  if (made != 0 && made != -EEXIST) return made;
  long fd = OpenWithoutSymlinks(dir_fd, name, RESOLVE_BENEATH);
  if (made == 0) GiveToSandboxUser(op, fd);
  if (fd < 0 || made == 0) return fd;
  struct stat st;  // it was there already: it may be the host's symlink or file
  long rc = sys::Call(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH);
  if (rc == 0 && !S_ISDIR(st.st_mode)) rc = S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
  if (rc != 0) {
    sys::Call(SYS_close, fd);
    return rc;
  }
  return fd;
}

// The directory that holds an op's mount point, open (O_PATH) with no
// symlink followed, and the mount point's name in it.
struct MountPointParent {
  int fd = -1;
  bool owned = false;  // false: the new root's fd, not ours to close
  const char* name = nullptr;
  ~MountPointParent() {
    if (owned) sys::Call(SYS_close, fd);
  }
};

// mkdir -p for the components of `target` below the new root and below the
// ancestor an earlier op made (existing_parent_len), one directory fd at a
// time: every component is opened beneath the new root with no symlink
// followed (ELOOP otherwise). Mount points inside the work dir sit on the
// host's own files (a staged copy, an overlay of the host dir, or the host
// dir itself in direct mode), which may hold symlinks the host user or an
// earlier sandbox made: a path-based mkdir would follow `vendor -> /etc` to
// the host's /etc before pivot_root, as host root when cocoon runs as root.
bool OpenMountPointParent(const ChildMountOp& op, int root_fd, size_t root_len, MountPointParent* parent,
                          ChildError* error, int index) noexcept {
  char path[PATH_MAX];
  const char* relative = op.target + root_len + 1;  // the sandbox path without its leading '/'
  size_t len = strlen(relative);
  if (len >= sizeof(path)) return Fail(error, ChildStep::kMkdirTarget, ENAMETOOLONG, index);
  memcpy(path, relative, len + 1);
  parent->fd = root_fd;
  size_t begin = 0;
  if (op.existing_parent_len > 0) {  // "/a/b" made earlier: open "a/b"
    begin = op.existing_parent_len;
    path[begin - 1] = '\0';
    long fd = OpenWithoutSymlinks(root_fd, path, RESOLVE_BENEATH);
    if (fd >= 0) {  // O_PATH | O_NOFOLLOW opens a symlink swapped in since as itself
      parent->fd = static_cast<int>(fd);
      parent->owned = true;
      struct stat st;
      long rc = sys::Call(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH);
      if (rc == 0 && !S_ISDIR(st.st_mode)) rc = S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
      fd = rc;
    }
    if (fd < 0) return Fail(error, ChildStep::kMkdirTarget, sys::ErrorOf(fd), index);
  }
  for (size_t end = begin;; ++end) {
    if (path[end] != '/' && path[end] != '\0') continue;
    if (path[end] == '\0') {
      parent->name = relative + begin;
      return true;
    }
    path[end] = '\0';
    long fd = MakeAndOpenDirectory(parent->fd, path + begin, op);
    if (fd < 0) return Fail(error, ChildStep::kMkdirTarget, sys::ErrorOf(fd), index);
    if (parent->owned) sys::Call(SYS_close, parent->fd);
    parent->fd = static_cast<int>(fd);
    parent->owned = true;
    begin = end + 1;
  }
}

// Creates the mount point itself in its parent (a directory or an empty
// file, never through a symlink) and opens it for the mount.
bool MakeMountPoint(const ChildMountOp& op, const MountPointParent& parent, MountPointRef* where, ChildError* error,
                    int index) noexcept {
  long fd;
  if (op.target_is_dir) {
    fd = MakeAndOpenDirectory(parent.fd, parent.name, op);
  } else {
    // O_EXCL: an existing entry is never opened for writing (a FIFO there
    // would block the child, a device would be opened on the host); it is
    // opened O_PATH below and must be a regular file.
    fd = sys::Call(SYS_openat, parent.fd, parent.name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    GiveToSandboxUser(op, fd);
    if (fd >= 0) sys::Call(SYS_close, fd);
    // An existing (possibly read-only) file is a valid mount point; a symlink
    // there is refused below (ELOOP).
    if (fd >= 0 || fd == -EROFS || fd == -EEXIST || fd == -EACCES) fd = OpenWithoutSymlinks(parent.fd, parent.name, RESOLVE_BENEATH);
    if (fd >= 0) {
      struct stat st;
      long rc = sys::Call(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH);
      if (rc == 0 && !S_ISREG(st.st_mode)) rc = S_ISLNK(st.st_mode) ? -ELOOP : -EISDIR;
      if (rc != 0) {
        sys::Call(SYS_close, fd);
        fd = rc;
      }
    }
  }
  if (fd < 0) return Fail(error, ChildStep::kMkdirTarget, sys::ErrorOf(fd), index);
  where->path = op.target;
  where->fd = static_cast<int>(fd);
  return true;
}

bool ApplyOp(const ChildSpec& spec, const ChildMountOp& op, int root_fd, size_t root_len, ChildError* error,
             int index) noexcept {
  MountPointRef where;
  if (op.kind == ChildMountKind::kSymlink || !op.mount_point_exists) {
    MountPointParent parent;
    if (!OpenMountPointParent(op, root_fd, root_len, &parent, error, index)) return false;
    if (op.kind == ChildMountKind::kSymlink) {
      long rc = sys::Call(SYS_symlinkat, op.source, parent.fd, parent.name);
      return rc == -EEXIST || Succeeded(rc, error, ChildStep::kSymlink, index);
    }
    if (!MakeMountPoint(op, parent, &where, error, index)) return false;
  } else if (!OpenMountPoint(op, root_fd, root_len, &where, error, index)) {
    return false;
  }
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
      ok = Succeeded(MountFilesystem("proc", "proc", op.flags, nullptr, where), error, ChildStep::kProc, index) &&
           LimitUserNamespaceCounters(op.target, error);
      break;
    case ChildMountKind::kMaskDir:
      ok = Succeeded(MountFilesystem("tmpfs", "tmpfs", op.flags, op.data, where), error, ChildStep::kMask, index);
      break;
    case ChildMountKind::kReadOnlyInPlace: {
      // Recursive: a policy's `hide` below this entry (a mask mounted by an
      // earlier op) stays on top of it in the read-only copy.
      long self = OpenWithoutSymlinks(root_fd, op.target + root_len + 1, RESOLVE_BENEATH);
      if (self < 0) {
        ok = Fail(error, ChildStep::kReadOnlyPath, sys::ErrorOf(self), index);
        break;
      }
      MountPointRef onto{static_cast<int>(self), op.target};
      ChildStep failed;
      long rc = BindFromFd(static_cast<int>(self), true, op.attr_set, onto, &failed);
      sys::Call(SYS_close, self);
      ok = Succeeded(rc, error, failed == ChildStep::kBind ? ChildStep::kReadOnlyPath : failed, index);
      break;
    }
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
