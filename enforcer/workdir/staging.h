// The sandbox's work dir: what the parent prepares, what the child mounts,
// and what the parent verifies and commits after the run.
//
// Strategies (ir::WorkMode + size of the host dir):
//  kCopy     (staged, default for small dirs): a tmpfs of size=quota holds a
//            copy of the host work dir plus the --copy files. Writes land on
//            the tmpfs; the quota is a hard limit (ENOSPC). The host dir is
//            never mounted at all.
//  kOverlay  (staged, picked when the host dir holds more than
//            StagingOptions::overlay_threshold_bytes): overlayfs with the host
//            dir as read-only lowerdir and upper/work dirs on the quota tmpfs,
//            so nothing is copied in; only changed files use quota. Overlayfs
//            mounts inside a user namespace since Linux 5.11.
//  kDirect   (ir::WorkMode::kDirect, only when the policy asks): the host dir
//            bind-mounted writable, nosuid,nodev. Quota = RLIMIT_FSIZE only;
//            breakout verification runs after the fact (RemediateDirectTree).
//
// Who does what (the tmpfs must live in the CHILD's mount namespace, so that
// rootless runs work and nothing is mounted on the host; the parent keeps it
// alive after the child exits by holding an fd to it):
//
//  parent, before releasing the child ('G'):  Staging::Prepare(options)  -> plan, child_spec()
//  child, in its private mount namespace, after the new root's tmpfs is
//  mounted at NEW_ROOT and BEFORE pivot_root (async-signal-safe):
//      MountWorkDirInChild(staging.child_spec(), "<NEW_ROOT><work path>", sock, &step)
//        - kCopy: mounts the quota tmpfs (nosuid,nodev) on target;
//          kOverlay: the quota tmpfs on stage_dir, then the overlay on target
//          (over an idmapped host dir: first receives it, tag 'L', from the
//          parent and attaches it at stage_dir/lower);
//          kDirect: binds the host dir on target, nosuid,nodev (recursive)
//          (target must exist: the core mount code mkdirs it);
//        - sends the parent two O_DIRECTORY fds over `sock` (SCM_RIGHTS):
//          [0] the tree to scan later (staged tree / overlay upper),
//          [1] the view to populate (the mounted target);
//        - blocks until the parent writes one byte 'G' on `sock` (population
//          finished) -- any other byte or EOF is an error (returns EPIPE).
//  parent, while the child waits:
//      staging.ReceiveAndPopulate(sock)  -- sends the idmapped lower layer
//        if there is one, receives the fds, copies the host
//        dir (kCopy) and the --copy files in, writes 'G'.
//  parent, after every sandbox process is dead:
//      staging.VerifyAndCommit(cancel, cancel_fd) -> {ScanReport, CommitReport}
//  The Staging destructor closes the fds; the tmpfs disappears with the last
//  reference (the child's mount namespace is gone by then).
//
// --copy files are part of the staged work dir (as if copied in before the
// run), so, like everything else the sandbox leaves there, they are verified
// and committed back to the host work dir.
//
// `sock` is one end of socketpair(AF_UNIX, SOCK_STREAM|SOCK_CLOEXEC) made by
// the core engineer before clone; kDirect sends nothing and does not block.
// Ownership: the parent's fsuid must be mapped in the child's user namespace
// (it is with the usual "sandbox uid -> caller uid" map), otherwise the
// kernel refuses to create files on the child-owned tmpfs (EOVERFLOW).
#pragma once

#include <limits.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/common/status.h"
#include "compiler/ir/policy_ir.h"
#include "enforcer/owned_fd.h"
#include "enforcer/workdir/breakout_scan.h"
#include "enforcer/tmpfs_inodes.h"
#include "enforcer/workdir/commit.h"
#include "enforcer/workdir/scratch_dir.h"

namespace cocoon::enforcer {

// How many entries (files, directories, links) the staged work dir may
// hold: bounded as the bytes are (tmpfs_inodes.h).
inline uint64_t WorkDirEntryLimit(uint64_t quota_bytes) { return TmpfsInodeLimit(quota_bytes); }

enum class StagingStrategy { kAuto, kCopy, kOverlay, kDirect };
enum class StagedCommit { kCommit, kDiscard };

struct StagingOptions {
  std::string host_dir;            // existing host directory (made absolute and canonical)
  ir::WorkMode mode = ir::WorkMode::kStaged;
  uint64_t quota_bytes = 0;        // tmpfs size; 0 = default_quota_bytes
  uint64_t default_quota_bytes = 1ull << 30;  // 1 GiB
  std::vector<ir::Copy> copies;    // host source -> relative destination
  StagingStrategy strategy = StagingStrategy::kAuto;
  // kAuto picks kOverlay when the host dir's regular files exceed this.
  uint64_t overlay_threshold_bytes = 64ull << 20;  // 64 MiB
  // An empty directory is created here as the private mount point of the
  // staging tmpfs inside the child's mount namespace ("": this user's
  // PrivateStateDir).
  std::string state_dir;
  // The HOST uid/gid the sandbox user maps to (IdMaps::sandbox_host_uid).
  // When set (>= 0), the staged work dir's root and everything copied in are
  // chowned to it, so the sandbox user can write its work dir even when the
  // caller is root and the sandbox runs as an unprivileged mapped uid. -1
  // (rootless: the caller's uid IS the sandbox's) leaves the caller as owner.
  // With an owner set, kAuto picks kOverlay for a host dir of another owner
  // only through an idmapped lower layer (idmapped_tree.h) that shows that
  // owner's files as the sandbox's: the overlay shows lower files with their
  // host owners, which the sandbox user could not write. Where idmapped
  // mounts are not available, such a dir is copied.
  int64_t sandbox_host_uid = -1;
  int64_t sandbox_host_gid = -1;
  // Targets of the sandbox's other mounts that lie inside the work dir,
  // relative to it ("main" for a read-only bind at /work/main). The child
  // makes their mount points in the work tree; those the host dir did not
  // have are removed again, when still empty, before verification, so that
  // a bare mount point is never committed (VerifyAndCommit).
  std::vector<std::string> inner_mount_points;
  // Test hook: CommitOptions::after_install_step_for_test of the commit.
  std::function<void(uint64_t)> after_commit_install_step_for_test;
};

// mount(2) copies at most one page of options (copy_mount_options) and cuts
// the rest: the overlay's assembled options must be shorter.
inline constexpr size_t kMountOptionsMax = 4096;

// Fixed buffers the child reads; filled by the parent. No pointers to heap
// memory the child would need to follow besides this struct itself.
struct WorkMountChildSpec {
  StagingStrategy strategy = StagingStrategy::kCopy;  // never kAuto
  char stage_dir[PATH_MAX] = {};      // overlay: empty host dir; the tmpfs goes here (child ns only)
  char tmpfs_data[96] = {};           // "size=<bytes>,nr_inodes=<n>,mode=0755"
  char host_dir[PATH_MAX] = {};       // lowerdir (overlay) / bind source (direct)
  // The overlay's options after its lowerdir: ",upperdir=..,workdir=..,userxattr".
  // The child puts "lowerdir=" in front: lower_dir for an idmapped lower,
  // else /proc/self/fd/N of its own O_PATH open of host_dir, once it has
  // checked that open's device and inode against host_dev/host_ino (below):
  // overlayfs takes paths, and a path names whatever is there when it is
  // looked up; through the magic link it is the directory that was checked.
  char overlay_data[3 * PATH_MAX + 64] = {};
  char upper_dir[PATH_MAX] = {};      // stage_dir + "/upper" (overlay)
  char overlay_work_dir[PATH_MAX] = {};  // stage_dir + "/work" (overlay)
  // Overlay over an idmapped host dir (idmapped_tree.h): the child first
  // receives the detached mount ('L' on the socket) and attaches it here
  // (stage_dir + "/lower"), which is then the overlay's lowerdir.
  bool idmapped_lower = false;
  char lower_dir[PATH_MAX] = {};
  // The device and inode Prepare opened at host_dir. The child looks the
  // path up again (direct mode's bind, the overlay's lower), so it checks
  // that it found this directory and not one put at the path since.
  uint64_t host_dev = 0;
  uint64_t host_ino = 0;
};

// Steps MountWorkDirInChild reports in *failed_step (for the {step, errno}
// message the parent prints).
enum class WorkMountStep : int {
  kNone = 0,
  kMountTmpfs,
  kMkdir,
  kMountOverlay,
  kBindDirect,
  kRemountDirect,
  kOpenFds,
  kSendFds,
  kWaitParent,
  kReceiveLower,
  kAttachLower,
  kCheckDirect,
  kOpenLower,
  kCheckLower,
  kUnbindableStage,
};
const char* WorkMountStepName(WorkMountStep step);

// Child side. Returns 0 or an errno. Async-signal-safe: mount(2), mkdir(2),
// open(2), sendmsg(2), read(2) only.
int MountWorkDirInChild(const WorkMountChildSpec& spec, const char* target, int sock,
                        WorkMountStep* failed_step) noexcept;

// What verification did, also when it stopped part way: a scan that ran
// keeps its findings (they are reported and audited) even if the commit or
// the direct-mode remediation after it failed.
struct StagingResult {
  bool scanned = false;
  ScanReport scan;
  CommitReport commit;
  bool committed = false;  // staged: the verified tree was installed into the host dir
  bool cancelled = false;  // the commit stopped at a cancel request; nothing was committed
  Status error;            // why the scan, commit or remediation did not complete; ok otherwise
  // Direct mode: what the scan flagged that the host dir held before the
  // run, unchanged (change_floor.h): left alone, and not in scan.findings.
  std::vector<BreakoutFinding> preexisting;
};

class Staging {
 public:
  static Result<std::unique_ptr<Staging>> Prepare(const StagingOptions& options);
  ~Staging();
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  StagingStrategy strategy() const { return spec_.strategy; }
  const WorkMountChildSpec& child_spec() const { return spec_; }
  uint64_t quota_bytes() const { return quota_bytes_; }
  // What the sandbox will find different about its work dir, for the
  // Outcome ("" when nothing): entries of other owners a rootless overlay
  // cannot change.
  const std::string& note() const { return note_; }

  // Parent side of the handshake (see above). Blocks until the child sends.
  // `cancel_fd` readable (the launcher's signalfd): the copy-in stops,
  // kUnavailable.
  Status ReceiveAndPopulate(int sock, int cancel_fd = -1);

  // After the run: scan, then commit what passed (staged/overlay), or scan and
  // remediate (direct). Before ReceiveAndPopulate: error kFailedPrecondition.
  // `cancel` / `cancel_fd` stop a staged commit before its install (CommitOptions);
  // `cancel_fd` also stops direct mode's scan (the dir is then unverified).
  // kDiscard: staged modes scan, and commit nothing (the host dir is left
  // as it was; direct mode is not affected).
  StagingResult VerifyAndCommit(const std::atomic<bool>* cancel = nullptr, int cancel_fd = -1,
                                StagedCommit commit = StagedCommit::kCommit);

  // For tests and for a parent that populates by itself: adopt already-open fds.
  void AdoptFds(int tree_fd, int view_fd);

 private:
  Staging() = default;
  Status Populate(int cancel_fd);
  void VerifyDirect(int cancel_fd, StagingResult& result);
  void VerifyAndCommitStaged(const std::atomic<bool>* cancel, int cancel_fd, StagedCommit commit,
                             StagingResult& result);

  StagingOptions options_;
  WorkMountChildSpec spec_;
  uint64_t quota_bytes_ = 0;
  std::unique_ptr<ScratchDir> stage_dir_;  // overlay only: created by Prepare, removed with the Staging
  std::map<std::string, std::string> preexisting_symlinks_;  // host's own links, copied in (kCopy) or by --copy
  StagedOriginals originals_;  // what the copy-in took and left out (kCopy)
  std::vector<std::string> scaffolding_;  // mount points (and parents) the host dir lacks, deepest first
  int tree_fd_ = -1;
  int view_fd_ = -1;
  OwnedFd lower_tree_;  // idmapped overlay only: sent to the child, then closed
  // The host dir as Prepare checked it, open until the Staging is gone: the
  // copy-in reads through it, direct mode's scan and remediation act on it
  // (the directory the sandbox was bound to, not whatever its path names
  // after the run), staged modes hold their flock on it, and it keeps the
  // inode (and any automount) in place, so that its device and inode
  // numbers are still the same when the commit compares them.
  OwnedFd host_dir_fd_;  // its device and inode: spec_.host_dev/host_ino (the commit refuses any other)
  // Direct mode: entries whose ctime is at or after this the run created or
  // changed (change_floor.h); taken in Prepare, before the sandbox exists.
  struct timespec changed_since_ {};
  std::string overlay_declined_;  // why auto mode copied a big dir instead (idmap failed, other owners' entries)
  std::string note_;              // note()
};

}  // namespace cocoon::enforcer
