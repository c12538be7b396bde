// Child side of the work dir (see staging.h for the protocol). Runs between
// clone and exec in the sandbox's fresh mount namespace, before pivot_root:
// raw syscalls (enforcer/raw_syscall.h: the child shares the parent's memory
// and errno) on the parent's precomputed WorkMountChildSpec only: no
// allocation, no stdio, no C++ runtime.
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
#include "enforcer/raw_syscall.h"
#include "enforcer/workdir/staging.h"

namespace cocoon::enforcer {
namespace {

int Fail(WorkMountStep* failed_step, WorkMountStep step, int err) noexcept {
  if (failed_step) *failed_step = step;
  return err == 0 ? EIO : err;
}

// The errno of a failed raw call as a step's failure.
int FailOn(long result, WorkMountStep* failed_step, WorkMountStep step) noexcept {
  return Fail(failed_step, step, sys::ErrorOf(result));
}

long OpenDirectory(const char* path) noexcept {
  return sys::Call(SYS_openat, AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

// Appends `text` to out[*used..size); false when it does not fit (with its
// terminating NUL).
bool Append(char* out, size_t size, size_t* used, const char* text) noexcept {
  for (; *text != '\0'; ++text) {
    if (*used + 1 >= size) return false;
    out[(*used)++] = *text;
  }
  out[*used] = '\0';
  return true;
}

// The same for a non-negative number, in decimal.
bool AppendDecimal(char* out, size_t size, size_t* used, long value) noexcept {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = static_cast<char>('0' + value % 10);
    value /= 10;
  } while (value > 0 && n < 23);
  char text[24];
  for (int i = 0; i < n; ++i) text[i] = digits[n - 1 - i];
  text[n] = '\0';
  return Append(out, size, used, text);
}

// Whether the directory at `fd` is the one Prepare checked.
int CheckIdentity(const WorkMountChildSpec& spec, int fd, const char* path, WorkMountStep* failed_step,
                  WorkMountStep step) noexcept {
  struct stat st {};
  long rc = fd >= 0 ? sys::Call(SYS_newfstatat, fd, "", &st, AT_EMPTY_PATH)
                    : sys::Call(SYS_newfstatat, AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW);
  if (rc != 0) return FailOn(rc, failed_step, step);
  // ESTALE: the path's directory is not the one the parent checked.
  if (st.st_dev != spec.host_dev || st.st_ino != spec.host_ino) return Fail(failed_step, step, ESTALE);
  return 0;
}

int WaitForParent(int sock) noexcept {
  char byte = 0;
  long n = sys::CallRestarting(SYS_read, sock, &byte, 1);
  if (n == 1 && byte == 'G') return 0;
  return n < 0 ? sys::ErrorOf(n) : EPIPE;
}

// Direct mode: bind the host dir and set nosuid,nodev on it and every
// submount. mount_setattr (Linux 5.12) only adds attributes, so flags the
// host mount already locks (MNT_LOCK_*) are never in the way, unlike a
// MS_REMOUNT|MS_BIND in a user namespace (mount(2) EPERM).
int MountDirect(const WorkMountChildSpec& spec, const char* target, WorkMountStep* failed_step) noexcept {
  long rc = sys::Mount(spec.host_dir, target, nullptr, MS_BIND | MS_REC, nullptr);
  if (rc != 0) return FailOn(rc, failed_step, WorkMountStep::kBindDirect);
  // mount(2) looked the path up again: the bind must have brought in the
  // directory the parent checked and will scan afterwards, not another one
  // put at the path since.
  int err = CheckIdentity(spec, -1, target, failed_step, WorkMountStep::kCheckDirect);
  if (err != 0) return err;
  struct mount_attr attr {};
  attr.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  rc = sys::Call(SYS_mount_setattr, AT_FDCWD, target, AT_RECURSIVE, &attr, sizeof attr);
  return rc == 0 ? 0 : FailOn(rc, failed_step, WorkMountStep::kRemountDirect);
}

// The parent made the idmapped host dir as a detached mount (idmapped_tree.h)
// and sends it; attached here, in our namespace, because overlayfs takes
// only layers it can reach in the mounter's mount namespace.
int AttachIdmappedLower(const WorkMountChildSpec& spec, int sock, WorkMountStep* failed_step) noexcept {
  int lower = -1;
  int err = ReceiveOneFd(sock, 'L', &lower);
  if (err != 0) return Fail(failed_step, WorkMountStep::kReceiveLower, err);
  long rc = sys::Call(SYS_move_mount, lower, "", AT_FDCWD, spec.lower_dir, MOVE_MOUNT_F_EMPTY_PATH);
  sys::Call(SYS_close, lower);
  return rc == 0 ? 0 : FailOn(rc, failed_step, WorkMountStep::kAttachLower);
}

// Staged modes: returns the fd of the tree the parent scans later.
int MountStaged(const WorkMountChildSpec& spec, const char* target, int sock, int* tree_fd,
                WorkMountStep* failed_step) noexcept {
  const unsigned long flags = MS_NOSUID | MS_NODEV;
  if (spec.strategy == StagingStrategy::kCopy) {
    // The quota tmpfs straight on the target: the tree IS the view.
    long rc = sys::Mount("tmpfs", target, "tmpfs", flags, spec.tmpfs_data);
    if (rc != 0) return FailOn(rc, failed_step, WorkMountStep::kMountTmpfs);
    long fd = OpenDirectory(target);
    if (fd < 0) return FailOn(fd, failed_step, WorkMountStep::kOpenFds);
    *tree_fd = static_cast<int>(fd);
    return 0;
  }
  // Overlay: the quota tmpfs on the private stage dir (a host path, but the
  // mount exists only in this namespace and is unreachable after pivot_root),
  // upper and work dirs on it, the overlay on the target.
  long rc = sys::Mount("tmpfs", spec.stage_dir, "tmpfs", flags, spec.tmpfs_data);
  if (rc != 0) return FailOn(rc, failed_step, WorkMountStep::kMountTmpfs);
  rc = sys::Call(SYS_mkdirat, AT_FDCWD, spec.upper_dir, 0755);
  if (rc == 0) rc = sys::Call(SYS_mkdirat, AT_FDCWD, spec.overlay_work_dir, 0700);
  if (rc == 0 && spec.idmapped_lower) rc = sys::Call(SYS_mkdirat, AT_FDCWD, spec.lower_dir, 0755);
  if (rc != 0) return FailOn(rc, failed_step, WorkMountStep::kMkdir);
  // The options: "lowerdir=" + the lower layer + spec.overlay_data.
  char data[kMountOptionsMax];  // Prepare checked the longest fits
  size_t used = 0;
  long lower = -1;
  bool fits = Append(data, sizeof data, &used, "lowerdir=");
  if (spec.idmapped_lower) {
    int err = AttachIdmappedLower(spec, sock, failed_step);
    if (err != 0) return err;
    fits = fits && Append(data, sizeof data, &used, spec.lower_dir);
  } else {
    // The host dir itself, named through our own open of it once that open
    // is checked to be the directory Prepare scanned.
    lower = sys::Call(SYS_openat, AT_FDCWD, spec.host_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (lower < 0) return FailOn(lower, failed_step, WorkMountStep::kOpenLower);
    int err = CheckIdentity(spec, static_cast<int>(lower), nullptr, failed_step, WorkMountStep::kCheckLower);
    if (err != 0) {
      sys::Call(SYS_close, lower);
      return err;
    }
    fits = fits && Append(data, sizeof data, &used, "/proc/self/fd/") && AppendDecimal(data, sizeof data, &used, lower);
  }
  fits = fits && Append(data, sizeof data, &used, spec.overlay_data);
  rc = fits ? sys::Mount("overlay", target, "overlay", flags, data) : -ENAMETOOLONG;
  if (lower >= 0) sys::Call(SYS_close, lower);
  // Then the stage is made unbindable (not before: overlayfs takes private
  // clones of its layers' mounts, which an unbindable mount refuses). The
  // stage sits on a host path (the state dir, /tmp), and a policy's later
  // recursive bind of a tree holding it (`writable /tmp as /x`) would carry
  // it into the sandbox, whose user owns upper/: whiteouts and opaque
  // xattrs written there directly would become deletions of the host's
  // files at commit. A recursive bind skips an unbindable mount and all
  // below it (the idmapped lower too).
  if (rc != 0) return FailOn(rc, failed_step, WorkMountStep::kMountOverlay);
  rc = sys::Mount(nullptr, spec.stage_dir, nullptr, MS_UNBINDABLE, nullptr);
  if (rc != 0) return FailOn(rc, failed_step, WorkMountStep::kUnbindableStage);
  long fd = OpenDirectory(spec.upper_dir);
  if (fd < 0) return FailOn(fd, failed_step, WorkMountStep::kOpenFds);
  *tree_fd = static_cast<int>(fd);
  return 0;
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
    case WorkMountStep::kReceiveLower: return "receive the idmapped work dir from the supervisor";
    case WorkMountStep::kAttachLower: return "attach the idmapped work dir (move_mount)";
    case WorkMountStep::kUnbindableStage: return "make the overlay's stage unbindable";
    case WorkMountStep::kCheckDirect:
      return "check that the bound work dir is the directory cocoon prepared (it was moved or replaced since: "
             "do not rename or replace a work dir while cocoon starts in it)";
    case WorkMountStep::kOpenLower: return "open the work dir for the overlay's lower layer";
    case WorkMountStep::kCheckLower:
      return "check that the overlay's lower layer is the directory cocoon prepared (it was moved or replaced "
             "since: do not rename or replace a work dir while cocoon starts in it)";
  }
  return "unknown";
}

int MountWorkDirInChild(const WorkMountChildSpec& spec, const char* target, int sock,
                        WorkMountStep* failed_step) noexcept {
  if (spec.strategy == StagingStrategy::kDirect) return MountDirect(spec, target, failed_step);
  int tree_fd = -1;
  int err = MountStaged(spec, target, sock, &tree_fd, failed_step);
  if (err != 0) return err;
  long view = OpenDirectory(target);
  if (view < 0) {
    sys::Call(SYS_close, tree_fd);
    return FailOn(view, failed_step, WorkMountStep::kOpenFds);
  }
  const int handoff[2] = {tree_fd, static_cast<int>(view)};
  err = SendFds(sock, 'F', handoff, 2);
  sys::Call(SYS_close, tree_fd);
  sys::Call(SYS_close, view);
  if (err != 0) return Fail(failed_step, WorkMountStep::kSendFds, err);
  err = WaitForParent(sock);
  if (err != 0) return Fail(failed_step, WorkMountStep::kWaitParent, err);
  return 0;
}

}  // namespace cocoon::enforcer
