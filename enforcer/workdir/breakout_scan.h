// Breakout verification: after the sandbox is dead, scan the tree it could
// write and list every entry that would let it reach outside the work dir once
// the tree is committed to the host.
//
// What counts as a finding (BreakoutFinding::kind):
//  "symlink-escape"  a symlink whose target is absolute (on the host an
//                    absolute target means a host path), or whose relative
//                    target climbs out of the tree -- lexically, or when
//                    resolved through other symlinks inside the tree
//                    (openat2 RESOLVE_BENEATH says EXDEV or ELOOP), or that is
//                    dangling with a ".." component (it could climb out once
//                    its missing part appears).
//  "hardlink"        a regular file with st_nlink > 1 whose links are not all
//                    inside the tree (a link to /etc/shadow-like files);
//                    every name of it in the tree is a finding. Not in
//                    ScanMode::kDirect, where the sandbox cannot link across
//                    the work dir's bind mount (EXDEV): such links are the
//                    host's own.
//  "device"          a block or character device node (an overlayfs whiteout,
//                    char 0:0, is not a finding when ScanOptions::overlay_upper).
//  "fifo", "socket"
//  "setuid", "setgid" on a regular file.
//  "unreadable"      an entry the scanner could not inspect (fail closed: it is
//                    left out of the commit too).
//  "too-deep"        a directory nested deeper than ScanOptions::max_depth:
//                    not entered, so left out like an unreadable one.
//
// How: a no-follow walk. Directories are opened with
// openat(O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC) relative to their parent's
// fd (never by path), entries are listed with getdents64 directly into a large
// buffer (one syscall per ~1500 entries), d_type avoids a stat for
// directories, symlinks, devices, FIFOs and sockets; only regular files (and
// DT_UNKNOWN) cost an fstatat(AT_SYMLINK_NOFOLLOW) for nlink and mode bits.
// The scan never follows a link and never crosses into another filesystem
// (a directory on a different st_dev is reported as "mount" and not entered).
// A symlink target with no ".." component cannot climb out through other
// links (each link on its path is checked on its own), so only targets with
// ".." pay for the openat2 resolution.
//
// Speed target (bench/breakout_bench.cc): >= 1.5x `find T -type l -o -type b
// -o -type c -o -type p -o -type s -o -links +1 -o -perm /6000` on 100k entries.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compiler/common/status.h"
#include "enforcer/outcome.h"

namespace cocoon::enforcer {

enum class ScanMode {
  kStagedTree,    // a staged copy on its own tmpfs
  kOverlayUpper,  // an overlayfs upper dir: char 0:0 entries are whiteouts, not devices
  kDirect,        // the host work dir itself (direct mode, verified after the fact)
};

struct ScanOptions {
  ScanMode mode = ScanMode::kStagedTree;
  // Directories deeper than this are "too-deep" findings, not entered. The
  // commit, the copy-in and the removal of a staged tree hold one or two fds
  // per level, and the supervisor's default RLIMIT_NOFILE is 1024: 256
  // levels keep them inside it (a path of 256 components is already past
  // what most path-based tools handle). The scan itself holds up to one fd
  // per level per worker, so it runs fewer workers when RLIMIT_NOFILE would
  // not hold them all that deep.
  uint32_t max_depth = 256;
  uint64_t max_entries = 50'000'000; // so is a tree with more entries
  // The findings are kept in memory (and listed in the Outcome): a tree
  // built to hold a million findings with 64 KiB paths each would cost the
  // supervisor, outside every limit of the sandbox, tens of GiB. Past either
  // cap the scan fails, and a staged run commits nothing. Direct mode and
  // the pre-run scan of the host dir lift the caps (staging.cc): there the
  // findings are already in the host dir and must all be removed or judged.
  uint64_t max_findings = 65'536;
  uint64_t max_finding_bytes = 16ull << 20;  // bytes of their paths and targets
  // The paths of every entry (and every symlink's target), added up. The
  // scan keeps the paths of hardlinked files, and the commit those of every
  // symlink, each in full: 250 nested directories of 255-byte names make
  // each path 64 KB, and 16,000 hardlinks down there took the supervisor
  // (as root, outside every limit of the sandbox) to 1 GB. Past this sum
  // a sandbox's tree is not verified, and a staged run commits nothing.
  // A real tree stays far below it: 300,000 files at 100 bytes a path are
  // 30 MB. Lifted for the host's own tree and in direct mode, like the
  // findings caps.
  uint64_t max_path_bytes = 64ull << 20;
  // Worker threads; 0 = one per CPU, at most 4 (fewer under a low
  // RLIMIT_NOFILE: see max_depth). The calling thread walks alone until the
  // walk has seen 1024 entries (small trees start no thread), then the
  // others join. Directories are handed out
  // through a shared queue (bounded, so open fds stay bounded too); a
  // worker that finds the queue full descends inline.
  uint32_t threads = 0;
  // Readable means stop: the scan returns what it found so far, with
  // ScanReport::stopped set. Direct mode's after-the-fact scan stops at a
  // SIGINT/SIGTERM/SIGHUP (the launcher's signalfd; after a cancelled run,
  // at a second one: the supervisor consumed the first). Polled once per
  // directory read, never read. -1: never.
  int cancel_fd = -1;
  // When set (>= 0): count the entries whose owner is not this uid or whose
  // group is not this gid (ScanReport::foreign_owned), symlinks included,
  // and the files and directories this process could not read through
  // (ScanReport::unreadable_by_caller: a copy of the tree would fail there).
  // A rootless sandbox maps only the caller's uid and gid, and an overlay
  // cannot copy such an entry up to change it (staging.cc).
  int64_t owner_uid = -1;
  int64_t owner_gid = -1;
};

struct ScanReport {
  std::vector<BreakoutFinding> findings;  // sorted by path
  uint64_t entries = 0;                   // every entry seen, directories included
  uint64_t directories = 0;
  uint64_t regular_files = 0;
  uint64_t symlinks = 0;
  uint64_t bytes = 0;                     // sum of regular file sizes
  uint64_t foreign_owned = 0;             // ScanOptions::owner_uid/owner_gid: entries of another owner or group
  std::string first_foreign_owned;        // one of them (the first path in sort order), for messages
  uint64_t unreadable_by_caller = 0;      // with owner_uid set: files and dirs this process could not copy
  uint32_t workers = 1;                   // threads that walked (the caller included)
  // The walk stopped early (ScanOptions::cancel_fd): the findings are those
  // of the part it saw, and hardlinks are not judged (not every link of a
  // file was seen).
  bool stopped = false;

  bool clean() const { return findings.empty(); }
  // True if `relative_path` (as in BreakoutFinding::path) was flagged.
  bool IsFlagged(const std::string& relative_path) const;
};

// Scans the directory `root_fd` refers to (an O_DIRECTORY fd; not closed).
// Paths in the findings are relative to it, "/"-separated, no leading "/".
Result<ScanReport> ScanForBreakouts(int root_fd, const ScanOptions& options = {});
// Convenience: opens `root` with O_DIRECTORY|O_NOFOLLOW and scans it.
Result<ScanReport> ScanForBreakoutsAt(const std::string& root, const ScanOptions& options = {});

// The pure part of the symlink check, exposed for unit tests: does the
// relative-to-tree link at `link_path` (e.g. "a/b/l") with target `target`
// leave the tree lexically? Absolute targets always escape.
bool SymlinkEscapesLexically(const std::string& link_path, const std::string& target);

}  // namespace cocoon::enforcer
