// Child side of the work dir (see staging.h for the protocol). Runs between
// clone and exec in the sandbox's fresh mount namespace, before pivot_root:
// raw syscalls on the parent's precomputed WorkMountChildSpec only
// (signal-safety(7)): no allocation, no stdio, no C++ runtime.
#include <fcntl.h>
#include <linux/mount.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "enforcer/fd_passing.h"
#include "enforcer/workdir/staging.h"

namespace cocoon::enforcer {
namespace {

int Fail(WorkMountStep* failed_step, WorkMountStep step, int err) noexcept {
  if (failed_step) *failed_step = step;
  return err == 0 ? EIO : err;
}

int WaitForParent(int sock) noexcept {
  char byte = 0;
  for (;;) {
    ssize_t n = read(sock, &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n == 1 && byte == 'G') return 0;
    return n < 0 ? errno : EPIPE;
  }
}

// Direct mode: bind the host dir and set nosuid,nodev on it and every
// submount. mount_setattr (Linux 5.12) only adds attributes, so flags the
// host mount already locks (MNT_LOCK_*) are never in the way, unlike a
// MS_REMOUNT|MS_BIND in a user namespace (mount(2) EPERM).
int MountDirect(const WorkMountChildSpec& spec, const char* target, WorkMountStep* failed_step) noexcept {
  if (mount(spec.host_dir, target, nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    return Fail(failed_step, WorkMountStep::kBindDirect, errno);
  }
  struct mount_attr attr {};
  attr.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  if (syscall(SYS_mount_setattr, AT_FDCWD, target, AT_RECURSIVE, &attr, sizeof attr) != 0) {
    return Fail(failed_step, WorkMountStep::kRemountDirect, errno);
  }
  return 0;
}

// Staged modes: returns the fd of the tree the parent scans later.
int MountStaged(const WorkMountChildSpec& spec, const char* target, int* tree_fd, WorkMountStep* failed_step) noexcept {
  const unsigned long flags = MS_NOSUID | MS_NODEV;
  if (spec.strategy == StagingStrategy::kCopy) {
    // The quota tmpfs straight on the target: the tree IS the view.
    if (mount("tmpfs", target, "tmpfs", flags, spec.tmpfs_data) != 0) {
      return Fail(failed_step, WorkMountStep::kMountTmpfs, errno);
    }
    *tree_fd = open(target, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    return *tree_fd < 0 ? Fail(failed_step, WorkMountStep::kOpenFds, errno) : 0;
  }
  // Overlay: the quota tmpfs on the private stage dir (a host path, but the
  // mount exists only in this namespace and is unreachable after pivot_root),
  // upper and work dirs on it, the overlay on the target.
  if (mount("tmpfs", spec.stage_dir, "tmpfs", flags, spec.tmpfs_data) != 0) {
    return Fail(failed_step, WorkMountStep::kMountTmpfs, errno);
  }
  if (mkdir(spec.upper_dir, 0755) != 0 || mkdir(spec.overlay_work_dir, 0700) != 0) {
    return Fail(failed_step, WorkMountStep::kMkdir, errno);
  }
  if (mount("overlay", target, "overlay", flags, spec.overlay_data) != 0) {
    return Fail(failed_step, WorkMountStep::kMountOverlay, errno);
  }
  *tree_fd = open(spec.upper_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  return *tree_fd < 0 ? Fail(failed_step, WorkMountStep::kOpenFds, errno) : 0;
}

}  // namespace

const char* WorkMountStepName(WorkMountStep step) {
  switch (step) {
    case WorkMountStep::kNone: return "none";
    case WorkMountStep::kMountTmpfs: return "mount the work dir tmpfs";
    case WorkMountStep::kMkdir: return "create overlay upper/work dirs";
    case WorkMountStep::kMountOverlay: return "mount the work dir overlay";
    case WorkMountStep::kBindDirect: return "bind the host work dir (direct mode)";
    case WorkMountStep::kRemountDirect: return "set nosuid,nodev on the direct work dir";
    case WorkMountStep::kOpenFds: return "open the staged tree";
    case WorkMountStep::kSendFds: return "hand the staged tree to the supervisor";
    case WorkMountStep::kWaitParent: return "wait for the supervisor to fill the work dir";
  }
  return "unknown";
}

int MountWorkDirInChild(const WorkMountChildSpec& spec, const char* target, int sock,
                        WorkMountStep* failed_step) noexcept {
  if (spec.strategy == StagingStrategy::kDirect) return MountDirect(spec, target, failed_step);
  int tree_fd = -1;
  int err = MountStaged(spec, target, &tree_fd, failed_step);
  if (err != 0) return err;
  int view_fd = open(target, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (view_fd < 0) {
    err = errno;
    close(tree_fd);
    return Fail(failed_step, WorkMountStep::kOpenFds, err);
  }
  const int handoff[2] = {tree_fd, view_fd};
  err = SendFds(sock, 'F', handoff, 2);
  close(tree_fd);
  close(view_fd);
  if (err != 0) return Fail(failed_step, WorkMountStep::kSendFds, err);
  err = WaitForParent(sock);
  if (err != 0) return Fail(failed_step, WorkMountStep::kWaitParent, err);
  return 0;
}

}  // namespace cocoon::enforcer
