// No-follow file tree primitives shared by the staging copy-in and the commit
// (internal to enforcer/workdir). Every operation works relative to directory
// fds opened with O_NOFOLLOW|O_DIRECTORY; no path with more than one
// component is ever handed to the kernel, so a symlink planted anywhere in a
// tree cannot redirect a read, a write or a removal.
#pragma once

#include <sys/stat.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/common/status.h"
#include "enforcer/owned_fd.h"

namespace cocoon::enforcer::tree {

using Fd = OwnedFd;  // enforcer/owned_fd.h

struct DirEntry {
  std::string name;
  unsigned char type;  // DT_* (DT_UNKNOWN resolved with fstatat)
};

// Lists a directory (no "." / ".."), resolving DT_UNKNOWN without following.
Result<std::vector<DirEntry>> ListDir(int dir_fd);

// openat(dir_fd, name, O_RDONLY|O_DIRECTORY|O_NOFOLLOW|O_CLOEXEC).
Result<Fd> OpenDir(int dir_fd, const std::string& name);

// Walks `relative` ("a/b/c") component by component from root_fd with
// OpenDir, creating missing directories (mode 0755) when `create` is true.
// Directories it creates are given to `owner` (when set).
enum class CreateMissing { kNo, kYes };
struct Owner;
Result<Fd> OpenDirPath(int root_fd, const std::string& relative, CreateMissing create, const Owner* owner = nullptr);

// Copies the regular file src_dir/name to a NEW file dst_dir/dst_name
// (O_CREAT|O_EXCL|O_NOFOLLOW), contents via sendfile, mode & 0777, and the
// source's atime and mtime.
// `between_chunks` (when set) is asked after every kCopyChunkBytes; an error
// from it stops the copy: a file of gigabytes takes seconds, and a cancel
// must not wait for all of it.
inline constexpr size_t kCopyChunkBytes = 64 << 20;
Status CopyFile(int src_dir, const std::string& name, int dst_dir, const std::string& dst_name, mode_t mode,
                uint64_t* bytes, const std::function<Status()>& between_chunks = nullptr);

// Recreates the symlink src_dir/name as dst_dir/dst_name (same target text).
Result<std::string> CopySymlink(int src_dir, const std::string& name, int dst_dir, const std::string& dst_name);

// Whether the directory dir_fd (a child of parent_fd) is the root of a
// mount, a bind mount from the same filesystem included. When the kernel
// cannot tell, a device change counts, and an fstat failure counts as yes.
bool IsMountRoot(int parent_fd, int dir_fd);

// Removes dir_fd/name and, if it is a directory, everything below it, without
// following links or crossing into another mount (an error instead).
Status RemoveTree(int dir_fd, const std::string& name);

// What a removal does past an entry it cannot remove: stop there (the
// rest stays), or go on removing everything else it can (what stays is
// only what it could not remove, and the directories holding it); either
// way the first failure is returned.
enum class RemovalFailure { kStop, kGoOn };

// The same for a directory that must be the one identified by `dev` and
// `ino`: where another directory has been put at dir_fd/name meanwhile (a
// rename in a parent others can write), nothing is removed
// (kFailedPrecondition).
Status RemoveTreeIfItIs(int dir_fd, const std::string& name, dev_t dev, ino_t ino,
                        RemovalFailure on_failure = RemovalFailure::kStop);

// Calls `visit` for a file the copy could not take, with a reason.
using SkipFn = std::function<void(const std::string& path, const char* kind)>;

// Copies the contents of src_fd into dst_fd (existing, empty) recursively:
// directories, regular files and symlinks; other types are passed to `skip`.
// `prefix` is the path of src_fd relative to the tree root ("" at the root),
// used for the skip callback and for `filter` (return false to leave out).
// Who should own what a copy creates (root callers only; see staging.h).
struct Owner {
  bool set = false;
  uid_t uid = 0;
  gid_t gid = 0;
};

// chmod of the inode `path_fd` (an O_PATH fd, which needs no permission on
// the file) refers to; `what` names it in the error.
Status ChmodThroughPathFd(int path_fd, mode_t mode, const std::string& what);

// fchownat(dir_fd, name, AT_SYMLINK_NOFOLLOW) when owner.set.
Status ChownAt(int dir_fd, const std::string& name, const Owner& owner);

// `owner` for an entry made in the directory dir_fd: with the directory's
// group when it is setgid, as the kernel gives a new entry there (a shared
// group directory keeps its files in the group). A root copy chowns what it
// makes, which would otherwise override that.
Owner InheritGroup(Owner owner, int dir_fd);

struct CopyHooks {
  Owner owner;                                         // applied to everything created...
  // ...whose source is owned by this uid, when set: an entry of another
  // owner keeps its own uid and gid (a root copy must not hand another
  // user's 0600 file to the sandbox user, or back to the work dir's owner).
  std::optional<uid_t> owner_for_uid;
  std::function<bool(const std::string& path)> keep;  // null: keep everything
  SkipFn skip;                                         // null: ignore
  std::function<Status()> tick;                        // per entry; an error aborts (cancel, test hooks)
  std::function<Status()> between_chunks;              // within a big file (CopyFile); an error aborts
  std::function<void(const std::string& path, const std::string& target)> on_symlink;
  // The owner for a directory, when it is not the one the rules above give
  // (nullopt: those rules). The commit gives a directory the host already
  // had its own owner and group back.
  std::function<std::optional<Owner>(const std::string& path)> directory_owner;
  // Most bytes the copy may write, in total (0: no limit). Checked against
  // each file's size before it is copied: see CheckByteBudget.
  uint64_t max_bytes = 0;
  // What an entry (path, its source's lstat) costs against max_bytes beyond
  // a file's data (null: nothing); the commit charges new entries
  // NewEntryDiskCost and the host's own directories nothing.
  std::function<uint64_t(const std::string& path, const struct stat& source)> metadata_cost;
  // Before a regular file is copied: true when the hook committed it some
  // other way (the commit links an untouched original), so no copy is made.
  std::function<Result<bool>(const std::string& path, const struct stat& source, int src_dir, int dst_dir,
                             const std::string& name)> take_file;
  // After a regular file is copied and given to `owner` (dst_dir/name).
  std::function<Status(const std::string& path, const struct stat& source, int dst_dir,
                       const std::string& name)> on_file;
  // Every entry of the source the copy looks at (kept by `keep`), with its
  // lstat, before it is copied or left out.
  std::function<void(const std::string& path, const struct stat& source)> on_entry;
  // A FIFO, socket or device the copy leaves out (besides `skip`).
  std::function<void(const std::string& path, const struct stat& source)> on_special;
};
struct CopyStats {
  uint64_t files = 0, directories = 0, symlinks = 0, bytes = 0;
  // What the entries themselves take on the destination's disk, as charged
  // by CopyHooks::metadata_cost; held to max_bytes apart from `bytes` (see
  // CheckMetadataBudget).
  uint64_t metadata_bytes = 0;
};

// What a new entry takes on a disk filesystem (ext4, xfs) beyond its data,
// charged against a commit's quota: a directory a block, a symlink whose
// target does not fit in its inode a block, and every name its directory
// entry. On the sandbox's tmpfs they cost no bytes (only inodes), so 65,535
// empty directories under a 64 MiB quota (its inode cap) became 258 MiB on
// the host.
inline constexpr uint64_t kDiskBlockBytes = 4096;
inline constexpr uint64_t kInlineSymlinkBytes = 59;  // ext4 keeps a shorter target in the inode
uint64_t NewEntryDiskCost(const std::string& name, const struct stat& st);
Status CopyTree(int src_fd, int dst_fd, const std::string& prefix, const CopyHooks& hooks, CopyStats& stats);

std::string Join(const std::string& prefix, const std::string& name);

// ResourceExhausted when writing `next` more bytes after `written` would pass
// `max_bytes` (0: no limit). Counts each file's full size: a sparse file is
// written out in full, and each hardlink name becomes its own copy, so the
// host may receive more than the sandbox's tmpfs held.
Status CheckByteBudget(uint64_t written, uint64_t next, uint64_t max_bytes, const std::string& path);

// The same for what new entries take (NewEntryDiskCost), held to the quota
// on its own: a run that fills its tmpfs to the quota with data still
// commits, and the host receives at most twice the quota, where empty
// directories made it four to eighteen times.
Status CheckMetadataBudget(uint64_t charged, uint64_t next, uint64_t max_bytes, const std::string& path);

}  // namespace cocoon::enforcer::tree
