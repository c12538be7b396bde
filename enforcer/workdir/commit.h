// Committing a verified staged tree back to the host work dir.
//
// How (staged copy mode):
//  1. Build the complete new contents in a fresh directory next to the host
//     work dir (same parent, same filesystem): "<parent>/.cocoon-commit-<H>-XXXXXX",
//     H from the work dir's name (SweepAbandonedCommitDirs finds them by it).
//     Every file is created with openat(O_CREAT|O_EXCL|O_NOFOLLOW|O_WRONLY)
//     relative to its parent dir fd and written through fds (sendfile), so a
//     link planted anywhere cannot redirect a write. Permissions are copied
//     masked to 0777, directories to 01777 (setuid/setgid never reach the host; the sticky bit, which only restricts, is kept on directories); a root
//     committer gives everything to the host work dir's owner (fchownat
//     AT_SYMLINK_NOFOLLOW), otherwise ownership is the committer's. Symlinks that passed the scan are recreated;
//     devices, FIFOs, sockets, escaping links and flagged files are left out.
//     Hardlinks inside the tree become independent copies, and sparse files
//     are written out in full: both count against CommitOptions::max_bytes.
//     A file the sandbox left untouched is instead the host's original,
//     hard-linked (CommitOptions::originals): its inode, times, owner and
//     mode stay; so do the host's FIFOs, sockets and devices, which the
//     copy-in left out and the sandbox never saw.
//  2. Its entries go into the host work dir, each by one renameat2 (a name
//     both have: RENAME_EXCHANGE; a new name: RENAME_NOREPLACE), and the
//     host's entries the new tree has no name for come out into it
//     (install_entries.h). The work dir itself is not replaced: its
//     inode, owner and mode stay, and so does the working directory of a
//     shell in it (`cocoon run --work .`). Each entry (a directory with all
//     below it) changes in one step; the set of entries changes one entry
//     after another, renames only, while every signal that could end or
//     stop cocoon stays held (HostChangeSignalHold, install_entries.h).
//     A failed rename undoes those before it.
//     Where an unprivileged committer cannot move every entry (decided
//     before: CheckInstallPossible, e.g. a root-owned build/ in its work
//     dir), the whole work dir is swapped for the new tree instead, in one
//     renameat2 RENAME_EXCHANGE as before: its inode changes, and
//     CommitReport::note says so.
//  3. The old entries (now in the temporary directory) are removed.
// An interruption (error, SIGINT/SIGTERM via the cancel flag) before step 2
// removes the temporary directory and leaves the host work dir exactly as it
// was: an interrupted run commits nothing.
//
// Overlay mode (upper dir of an overlayfs whose lower is the host work dir):
// step 1 instead hardlinks every original file of the host dir into the new
// directory (no data copied, originals never opened for writing), then applies
// the upper layer: whiteouts (char 0:0) delete, opaque directories replace,
// files and symlinks from the upper replace by rename. Steps 2-3 are the same.
//
// Caveats, documented: directories below the work dir are made again, so
// their inodes change (the work dir's own does not). A reader listing the
// work dir during step 2 may see some entries new and others old. A work dir
// that is itself a mount point cannot receive entries from beside it:
// CommitStagedTree then fails with kFailedPrecondition and commits nothing.
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <functional>
#include <map>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "compiler/common/status.h"
#include "enforcer/outcome.h"
#include "enforcer/poll_now.h"
#include "enforcer/workdir/breakout_scan.h"

namespace cocoon::enforcer {

enum class CommitSource {
  kStagedTree,    // the tree is the complete new contents
  kOverlayUpper,  // the tree is an overlayfs upper layer over host_dir
};

// What the copy-in took from the host work dir (staged copy mode), so that
// what the sandbox left untouched goes back as the host's own original --
// same inode, times, owner and mode, hard-linked like the overlay mode's
// originals -- and not as a fresh copy; and so that what the copy-in could
// not take (FIFOs, sockets, devices: the sandbox never saw them) stays.
struct StagedOriginals {
  struct File {
    dev_t host_dev = 0;
    ino_t host_ino = 0;
    ino_t staged_ino = 0;
    off_t staged_size = 0;
    struct timespec staged_mtime {};  // set to the host file's mtime at copy-in
    struct timespec staged_ctime {};  // any change by the sandbox moves it
  };
  struct Special {
    dev_t host_dev = 0;
    ino_t host_ino = 0;
  };
  std::map<std::string, File> files;        // relative path -> a regular file copied in
  std::map<std::string, Special> not_copied;  // relative path -> a FIFO, socket or device left out
  // Every entry of the host dir as the copy-in saw it: its inode and ctime
  // (which any change to the entry moves, and a directory's with every
  // name added, removed or renamed in it). The commit replaces the whole
  // host dir, so a change made on the host during the run would be lost:
  // the commit compares first and refuses (Committer::CheckHostUnchanged),
  // when host_entries_recorded.
  bool host_entries_recorded = false;
  struct Seen {
    ino_t ino = 0;
    struct timespec ctime {};
    mode_t mode = 0;  // and its owner: a directory the commit makes again keeps them
    uid_t uid = 0;
    gid_t gid = 0;
    // Its mtime and size: a top-level entry the install moves out had its
    // ctime moved by that rename, so an edit made in place on the host after
    // the last check shows only in these (and rename(2) moves neither).
    struct timespec mtime {};
    off_t size = 0;
  };
  std::map<std::string, Seen> host_entries;
};


inline constexpr uint64_t kCancelFdPollEntries = 64;

// Which directory a work dir path named when the run was prepared. A path
// names whatever is there when it is looked up: the commit and direct mode's
// remediation act on the directory the run was prepared (and, in direct
// mode, bound) with, and refuse a different one put at the same path while
// the sandbox ran.
struct HostDirIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  static HostDirIdentity Of(const struct stat& st) { return {st.st_dev, st.st_ino}; }
  bool Matches(const struct stat& st) const { return st.st_dev == dev && st.st_ino == ino; }
};

struct CommitOptions {
  CommitSource source = CommitSource::kStagedTree;
  // The host work dir as the run was prepared with it; unset: whatever the
  // path names when the commit starts. A different directory at the path
  // (when the commit starts, or just before the install) fails the commit
  // with kFailedPrecondition and commits nothing; the install itself goes
  // through the directory opened, never the path again.
  std::optional<HostDirIdentity> expected_host_dir;
  // Checked between entries; when it becomes true the commit stops, removes
  // its temporary directory and returns kUnavailable ("commit cancelled").
  const std::atomic<bool>* cancel = nullptr;
  // The same for an fd (the launcher's signalfd for SIGINT/SIGTERM/SIGHUP):
  // readable means cancel. Polled every kCancelFdPollEntries entries, never
  // read, so the signal stays pending for the caller to see.
  int cancel_fd = -1;
  // Most bytes of file contents the commit may write to the host (0: no
  // limit); the staging passes the disk quota. Past it the commit fails with
  // kResourceExhausted and commits nothing: the sandbox's tmpfs counts the
  // blocks a file uses, but the host receives a sparse file in full and each
  // hardlink name as its own copy.
  uint64_t max_bytes = 0;
  // Staged copy mode: the copy-in's record (see StagedOriginals); null: every
  // file is copied.
  const StagedOriginals* originals = nullptr;
  // Staged copy mode: the host's own symlinks as the copy-in found them
  // (relative path -> target). One still at its path with its target is
  // the host's, whatever it points at; every other symlink the commit
  // writes must resolve inside the new tree (see Committer::ConfineNewSymlinks).
  const std::map<std::string, std::string>* host_symlinks = nullptr;
  // Staged copy mode, root: the sandbox user's host uid. What it owns in
  // the staged tree goes to the work dir's owner; what another user owns
  // (kept so by the copy-in) keeps its owner.
  std::optional<uid_t> sandbox_uid;
  // Test hook: fail (as if interrupted) after this many entries are written.
  // 0 = never.
  uint64_t fail_after_entries = 0;
  // Test hook: fail an install step (as a failed rename would) after this
  // many, so that the steps before it are undone. 0 = never.
  uint64_t fail_install_after_steps = 0;
  // Test hook: runs just before the install (to replace the host dir there).
  std::function<void()> before_install_for_test;
  // Test hook: runs after each install step (InstallOptions::after_step_for_test).
  std::function<void(uint64_t)> after_install_step_for_test;
  // Test hook: runs after the last checks, just before a whole-dir swap's
  // renameat2 (to replace the work dir, or change it, there).
  std::function<void()> before_whole_dir_swap_for_test;
};

struct CommitReport {
  uint64_t files = 0;        // regular files written or linked
  uint64_t directories = 0;
  uint64_t symlinks = 0;
  uint64_t bytes = 0;
  std::vector<BreakoutFinding> left_out;  // every entry not committed, with its reason
  // Symlinks the scan passed that resolve out of the merged tree (through a
  // link of the host's own, which the scan of the sandbox's tree could not
  // judge): taken out of the commit; also in left_out.
  std::vector<BreakoutFinding> escaping_after_merge;
  // Set when the new tree was installed (the commit happened) but the
  // previous contents, now beside the host dir under a temporary name,
  // could not all be removed: says where they are and why.
  std::string cleanup_warning;
  // Set when the work dir could not receive the new entries one by one (an
  // unprivileged committer and a top-level directory of another user's,
  // such as a root-owned build/): the whole work dir was swapped for the
  // new tree instead, so its inode changed. Says so, and why.
  std::string note;
  // Direct mode: the findings (by index in the scan) that could not be
  // removed or defused and are still in the host dir.
  std::vector<size_t> not_remediated;
  std::string remediation_error;  // why the first of those failed
  // Direct mode: the findings (by index in the scan) that are the host's
  // own, as they were before the run (change_floor.h): left alone.
  std::vector<size_t> preexisting;
};

// Whether CommitStagedTree could install a new tree into `host_dir`: its
// parent opens, the dir is not a mount point, and a commit directory can be
// made beside it (made and removed again). Checked before a staged run, so
// that a work dir whose parent the caller cannot write (`--work ~` under a
// root-owned /home) is refused up front instead of after the command ran.
Status CheckCommitPossible(const std::string& host_dir);

// Removes the commit directories of `host_dir` (named after it) that a
// supervisor killed by SIGKILL left beside it: a half-built new tree, the
// old contents it had moved out and not yet removed, or (killed during the
// install) the new entries not yet moved in with the old ones they replaced. Only those unchanged
// for `min_age`; call while holding the work dir's exclusive lock
// (staging.cc), so that no other staged run on it is committing. Best
// effort: returns how many were removed.
size_t SweepAbandonedCommitDirs(const std::string& host_dir, std::chrono::seconds min_age);

// Commits the tree at `tree_fd` (scanned into `scan`; entries it flagged are
// left out) to `host_dir` (absolute path of an existing directory).
Result<CommitReport> CommitStagedTree(int tree_fd, const ScanReport& scan, const std::string& host_dir,
                                      const CommitOptions& options = {});

// Direct mode (and a `writable` bind): the sandbox wrote into the host dir
// itself. There is nothing to leave out, so of the entries the run created
// or changed (ctime at or after `changed_since`, change_floor.h), escaping
// symlinks, device nodes, FIFOs and sockets are REMOVED (unlinkat, never
// followed), setuid/setgid bits are cleared (through an O_PATH open, so a
// file with no read permission is cleared too), and hardlinks to outside
// files are unlinked (the outside file itself is untouched). Every action is
// reported. This is the documented direct-mode policy: after the fact, the
// host dir must still not hold a way out the sandbox made. The host's own
// entries, unchanged since before the run (a virtualenv's link to
// /usr/bin/python3, a FIFO, a setuid helper of its own), are left as they
// are and listed in `preexisting`, as a staged run leaves them. What the
// scan could not inspect is reported whatever its ctime: what lies below it
// may have changed. An entry that cannot be defused does not stop the
// others; it is listed in not_remediated. `host_dir_fd` is the directory
// that was bound into the sandbox (and scanned), not its path looked up
// again.
Result<CommitReport> RemediateDirectTree(int host_dir_fd, const ScanReport& scan,
                                         const struct timespec& changed_since);

// Clears the setuid and setgid bits of the regular file `path_fd` (an O_PATH
// fd, which needs no permission on the file) refers to; `what` names it in
// the error.
Status ClearSetIdBits(int path_fd, const struct stat& st, const std::string& what);

// After RemediateDirectTree(scan): marks the findings it could not defuse
// (BreakoutFinding::left_in_place) and moves the host's own
// (CommitReport::preexisting) out of scan.findings, onto `preexisting`:
// what remains is what the sandbox left.
void SetAsidePreexisting(ScanReport& scan, const CommitReport& report, std::vector<BreakoutFinding>& preexisting);

}  // namespace cocoon::enforcer
