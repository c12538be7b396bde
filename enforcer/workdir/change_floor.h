// Which entries of a host directory the sandbox writes in place (a direct
// work dir, a `writable` bind) the run created or changed: those whose
// inode change time (ctime) is at or after the run's change floor.
//
// Why ctime: no syscall sets it to a chosen value. utimensat(2) sets atime
// and mtime, and itself moves ctime to now; only a change of the system
// clock, which needs CAP_SYS_TIME in the initial user namespace (a time
// namespace offsets the monotonic and boot clocks, never CLOCK_REALTIME:
// time_namespaces(7)), could stamp an inode in the past. Every way of
// making an entry appear or change moves it (inode(7), "Last status change
// timestamp"): create, mknod, symlink, write, truncate, chmod, chown (even to
// the same owner), link and unlink (the link count), and rename, which stamps
// the inode it moves. Checked on this host's tmpfs, ext4 and overlayfs
// (tests/enforcer_support/workdir_change_floor_test.cc keeps the check).
// So an entry whose ctime is before the floor is one the host had before
// the run, unchanged. (The sandbox may have moved the directory holding it:
// a rename stamps the directory it moves, not the entries inside, which
// stay the host's own, under another path of the same tree.)
//
// The floor: CLOCK_REALTIME_COARSE less one tick of it, as file timestamps
// are taken from the coarse clock (current_time(), fs/inode.c; the
// multigrain timestamps of Linux 6.13 are never below it), and the
// filesystem's own stamp of a probe file made there at the same moment,
// whichever is earlier: a network or FUSE filesystem stamps with its
// server's clock, which may be behind ours. The probe is an O_TMPFILE inode
// (open(2): never named, so the directory is unchanged), else a file
// created and unlinked at once; where neither can be made (read-only
// filesystem, a server that squashes root) our clock alone is used, rounded
// down to a whole second: a filesystem may keep coarser times than
// nanoseconds (ext4's 128-byte inodes keep seconds), which the probe's own
// stamp otherwise shows.
#pragma once

#include <sys/stat.h>
#include <time.h>

namespace cocoon::enforcer {

// Take it before the sandbox can write there (when the run is prepared):
// everything the sandbox does then stamps later times.
struct timespec RunChangeFloor(int dir_fd);

// Whether `st` (an lstat of the entry) was created or changed at or after
// `floor`.
inline bool ChangedSince(const struct stat& st, const struct timespec& floor) {
  return st.st_ctim.tv_sec > floor.tv_sec ||
         (st.st_ctim.tv_sec == floor.tv_sec && st.st_ctim.tv_nsec >= floor.tv_nsec);
}

}  // namespace cocoon::enforcer
