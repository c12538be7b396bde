#include "enforcer/workdir/tree_ops.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <memory>

#include "enforcer/workdir/dirent64.h"

namespace cocoon::enforcer::tree {
namespace {

bool IsDotOrDotDot(const char* name) {
  return name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0));
}

}  // namespace

std::string Join(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "/" + name;
}

Result<std::vector<DirEntry>> ListDir(int dir_fd) {
  std::vector<DirEntry> entries;
  constexpr size_t kSize = 32 * 1024;
  std::unique_ptr<char[]> buffer(new char[kSize]);
  // getdents64 continues from the fd's offset; rewind so a reused fd works.
  lseek(dir_fd, 0, SEEK_SET);
  for (;;) {
    long n = syscall(SYS_getdents64, dir_fd, buffer.get(), kSize);
    if (n < 0) return ErrnoError("reading a directory");
    if (n == 0) break;
    for (long offset = 0; offset < n;) {
      auto* d = reinterpret_cast<LinuxDirent64*>(buffer.get() + offset);
      offset += d->d_reclen;
      if (IsDotOrDotDot(d->d_name)) continue;
      unsigned char type = d->d_type;
      if (type == DT_UNKNOWN) {
        struct stat st {};
        if (fstatat(dir_fd, d->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) type = IFTODT(st.st_mode);
      }
      entries.push_back(DirEntry{d->d_name, type});
    }
  }
  return entries;
}

Result<Fd> OpenDir(int dir_fd, const std::string& name) {
  int fd = openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return ErrnoError("opening directory '" + name + "'");
  return Fd(fd);
}

Result<Fd> OpenDirPath(int root_fd, const std::string& relative, CreateMissing create, const Owner* owner) {
  int dup_fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return ErrnoError("dup");
  Fd current(dup_fd);
  size_t pos = 0;
  while (pos < relative.size()) {
    size_t end = relative.find('/', pos);
    if (end == std::string::npos) end = relative.size();
    std::string part = relative.substr(pos, end - pos);
    pos = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") return InvalidArgumentError("'..' in path '" + relative + "'");
    if (create == CreateMissing::kYes) {
      if (mkdirat(current.get(), part.c_str(), 0755) == 0) {
        if (owner) COCOON_RETURN_IF_ERROR(ChownAt(current.get(), part, *owner));
      } else if (errno != EEXIST) {
        return ErrnoError("creating directory '" + part + "' of '" + relative + "'");
      }
    }
    COCOON_ASSIGN_OR_RETURN(Fd next, OpenDir(current.get(), part));
    current = std::move(next);
  }
  return current;
}

bool IsMountRoot(int parent_fd, int dir_fd) {
  // STATX_ATTR_MOUNT_ROOT (Linux 5.8) also sees a bind mount from the same
  // filesystem, which a device comparison cannot.
  struct statx stx {};
  if (statx(dir_fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &stx) == 0 &&
      (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) != 0) {
    return (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
  }
  struct stat parent_st {}, dir_st {};
  return fstat(parent_fd, &parent_st) != 0 || fstat(dir_fd, &dir_st) != 0 || parent_st.st_dev != dir_st.st_dev;
}

Status CopyFile(int src_dir, const std::string& name, int dst_dir, const std::string& dst_name, mode_t mode,
                uint64_t* bytes, const std::function<Status()>& between_chunks) {
  Fd in(openat(src_dir, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!in.valid()) return ErrnoError("opening '" + name + "'");
  struct stat st {};
  if (fstat(in.get(), &st) != 0 || !S_ISREG(st.st_mode)) return FailedPreconditionError("'" + name + "' is not a regular file");
  Fd out(openat(dst_dir, dst_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!out.valid()) return ErrnoError("creating '" + dst_name + "'");
  uint64_t total = 0;
  uint64_t since_check = 0;
  for (;;) {
    // sendfile works between any two filesystems (copy_file_range returns
    // EXDEV across some since Linux 5.19).
    ssize_t n = sendfile(out.get(), in.get(), nullptr, kCopyChunkBytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("copying '" + name + "'");
    }
    if (n == 0) break;
    total += static_cast<uint64_t>(n);
    since_check += static_cast<uint64_t>(n);
    if (between_chunks && since_check >= kCopyChunkBytes) {
      since_check = 0;
      COCOON_RETURN_IF_ERROR(between_chunks());
    }
  }
  // Never carry setuid/setgid/sticky across.
  if (fchmod(out.get(), mode & 0777) != 0) return ErrnoError("chmod '" + dst_name + "'");
  // The copy keeps the source's access and modification times: a result's
  // mtime (`touch -d`, an archive's extraction, a build's outputs) matters
  // to make and to the next pipeline step, and was reset to the commit's
  // time. As of the fstat above, before the copy read it.
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  if (futimens(out.get(), times) != 0) return ErrnoError("setting the times of '" + dst_name + "'");
  if (bytes) *bytes += total;
  return Status::Ok();
}

Result<std::string> CopySymlink(int src_dir, const std::string& name, int dst_dir, const std::string& dst_name) {
  char target[PATH_MAX + 1];
  ssize_t len = readlinkat(src_dir, name.c_str(), target, PATH_MAX);
  if (len < 0) return ErrnoError("reading link '" + name + "'");
  target[len] = 0;
  if (symlinkat(target, dst_dir, dst_name.c_str()) != 0) return ErrnoError("creating link '" + dst_name + "'");
  return std::string(target, static_cast<size_t>(len));
}

namespace {

// Removal recurses once per level and holds an fd per level: a tree nested
// deeper than this is left in place rather than taking the stack (a planted
// 11,000-level tree crashed a sweep with SIGSEGV) or every fd. Trees cocoon
// makes are at most ScanOptions::max_depth (256) levels deep.
constexpr int kMaxRemoveDepth = 1024;

Status RemoveTreeAt(int dir_fd, const std::string& name, int depth, RemovalFailure on_failure);

// Empties the directory `child` (dir_fd/name, already open), then removes it.
Status RemoveOpenedDirectory(int dir_fd, const std::string& name, int child, int depth = 0,
                             RemovalFailure on_failure = RemovalFailure::kStop) {
  if (depth > kMaxRemoveDepth) {
    return Status(ErrorCode::kResourceExhausted,
                  "'" + name + "' is nested deeper than " + std::to_string(kMaxRemoveDepth) + " levels; left in place");
  }
  // Never into another filesystem: a mount point inside the tree would
  // have its contents deleted (Staging::Prepare refuses such work dirs;
  // this is the last guard).
  if (IsMountRoot(dir_fd, child)) {
    return FailedPreconditionError("'" + name + "' is a mount point; not removing anything inside it");
  }
  // A directory of ours without owner write (0555, as Go's module cache makes
  // them, or as the sandbox chose) cannot be emptied by a caller who is not
  // root: without this, a failed or superseded commit tree stayed behind next
  // to the work dir, a quota's worth each run.
  struct stat st {};
  if (fstat(child, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 0700) != 0700) {
    fchmod(child, (st.st_mode & 07777) | 0700);
  }
  COCOON_ASSIGN_OR_RETURN(auto entries, ListDir(child));
  Status first_failure;
  for (const DirEntry& entry : entries) {
    Status removed = RemoveTreeAt(child, entry.name, depth + 1, on_failure);
    if (removed.ok()) continue;
    if (on_failure == RemovalFailure::kStop) return removed;
    if (first_failure.ok()) first_failure = removed;
  }
  if (!first_failure.ok()) return first_failure;
  if (unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0) return ErrnoError("removing directory '" + name + "'");
  return Status::Ok();
}

Status RemoveTreeAt(int dir_fd, const std::string& name, int depth, RemovalFailure on_failure) {
  if (unlinkat(dir_fd, name.c_str(), 0) == 0) return Status::Ok();
  if (errno == ENOENT) return Status::Ok();
  if (errno != EISDIR && errno != EPERM) return ErrnoError("removing '" + name + "'");
  auto child = OpenDir(dir_fd, name);
  if (!child.ok() && child.status().code() == ErrorCode::kPermissionDenied) {
    // Ours but unreadable (0000): given back owner rwx through an O_PATH
    // open, which needs no permission on it and follows no link.
    int path_fd = openat(dir_fd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st {};
    if (path_fd >= 0 && fstat(path_fd, &st) == 0 && st.st_uid == geteuid()) {
      chmod(("/proc/self/fd/" + std::to_string(path_fd)).c_str(), 0700);
      child = OpenDir(dir_fd, name);
    }
    if (path_fd >= 0) close(path_fd);
  }
  if (!child.ok()) return child.status();
  return RemoveOpenedDirectory(dir_fd, name, child->get(), depth, on_failure);
}

}  // namespace

Status RemoveTree(int dir_fd, const std::string& name) { return RemoveTreeAt(dir_fd, name, 0, RemovalFailure::kStop); }

Status RemoveTreeIfItIs(int dir_fd, const std::string& name, dev_t dev, ino_t ino, RemovalFailure on_failure) {
  COCOON_ASSIGN_OR_RETURN(Fd child, OpenDir(dir_fd, name));
  struct stat st {};
  if (fstat(child.get(), &st) != 0) return ErrnoError("stat '" + name + "'");
  if (st.st_dev != dev || st.st_ino != ino) {
    return FailedPreconditionError("'" + name + "' is no longer the directory cocoon made there; left in place");
  }
  // The final rmdir goes by name again; a directory swapped in after the
  // check is not empty (ENOTEMPTY), or had nothing to lose.
  return RemoveOpenedDirectory(dir_fd, name, child.get(), 0, on_failure);
}

// fchmodat2(2) (Linux 6.6) takes AT_EMPTY_PATH: a mode change through an
// O_PATH fd. glibc 2.36 has no wrapper and its fchmodat() refuses the flag,
// so the syscall is made directly; its number is 452 on every architecture.
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif

// chmod of the inode `path_fd` (O_PATH) refers to. An O_PATH fd needs no
// permission on the file itself (open(2)), where fchmod(2) needs the file
// opened for reading or writing, which a mode like 6111 refuses to a
// rootless supervisor: it is the file's owner, with no capability to
// override its mode bits. Without fchmodat2 (before Linux 6.6) the fd's
// magic link in /proc/self/fd leads to the same inode, as glibc's own
// fchmodat(AT_SYMLINK_NOFOLLOW) does (proc(5)): no name is looked up again.
Status ChmodThroughPathFd(int path_fd, mode_t mode, const std::string& what) {
  if (syscall(SYS_fchmodat2, path_fd, "", mode, AT_EMPTY_PATH) == 0) return Status::Ok();
  // ENOSYS, or a container's seccomp profile that does not know the call
  // (EPERM): the magic link, whose own error is the one reported.
  const std::string magic = "/proc/self/fd/" + std::to_string(path_fd);
  if (chmod(magic.c_str(), mode) != 0) return ErrnoError(what);
  return Status::Ok();
}

Status ChownAt(int dir_fd, const std::string& name, const Owner& owner) {
  if (!owner.set) return Status::Ok();
  if (fchownat(dir_fd, name.c_str(), owner.uid, owner.gid, AT_SYMLINK_NOFOLLOW) != 0) {
    return ErrnoError("chown '" + name + "' to " + std::to_string(owner.uid));
  }
  return Status::Ok();
}

Owner InheritGroup(Owner owner, int dir_fd) {
  struct stat dir {};
  if (owner.set && fstat(dir_fd, &dir) == 0 && (dir.st_mode & S_ISGID)) owner.gid = dir.st_gid;
  return owner;
}

namespace {

// `inherited`: hooks.owner with the destination directory's group when that
// directory is setgid (InheritGroup), computed once per directory.
Owner OwnerFor(const CopyHooks& hooks, const Owner& inherited, const struct stat& source) {
  if (!hooks.owner.set || !hooks.owner_for_uid || source.st_uid == *hooks.owner_for_uid) return inherited;
  return Owner{true, source.st_uid, source.st_gid};
}

}  // namespace

uint64_t NewEntryDiskCost(const std::string& name, const struct stat& st) {
  uint64_t cost = name.size() + 8;  // an ext4 directory entry: 8 bytes and the name
  if (S_ISDIR(st.st_mode)) cost += kDiskBlockBytes;
  if (S_ISLNK(st.st_mode) && static_cast<uint64_t>(st.st_size) > kInlineSymlinkBytes) cost += kDiskBlockBytes;
  return cost;
}

Status CopyTree(int src_fd, int dst_fd, const std::string& prefix, const CopyHooks& hooks, CopyStats& stats) {
  COCOON_ASSIGN_OR_RETURN(auto entries, ListDir(src_fd));
  const Owner inherited = InheritGroup(hooks.owner, dst_fd);
  for (const DirEntry& entry : entries) {
    std::string path = Join(prefix, entry.name);
    if (hooks.tick) COCOON_RETURN_IF_ERROR(hooks.tick());
    if (hooks.keep && !hooks.keep(path)) continue;
    struct stat st {};
    if (fstatat(src_fd, entry.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (hooks.skip) hooks.skip(path, "unreadable");
      continue;
    }
    if (hooks.on_entry) hooks.on_entry(path, st);
    if (hooks.metadata_cost && (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))) {
      const uint64_t cost = hooks.metadata_cost(path, st);
      COCOON_RETURN_IF_ERROR(CheckMetadataBudget(stats.metadata_bytes, cost, hooks.max_bytes, path));
      stats.metadata_bytes += cost;
    }
    if (S_ISDIR(st.st_mode)) {
      // Created owner-writable so we can fill it; the real mode comes after.
      if (mkdirat(dst_fd, entry.name.c_str(), 0700) != 0) return ErrnoError("creating directory '" + path + "'");
      COCOON_ASSIGN_OR_RETURN(Fd src_child, OpenDir(src_fd, entry.name));
      COCOON_ASSIGN_OR_RETURN(Fd dst_child, OpenDir(dst_fd, entry.name));
      // Owner and setgid before the contents: what is made inside then
      // takes the directory's group, as on the host.
      // Only for a directory of the sandbox user's: one of another owner
      // (the host's, copied in as theirs) keeps its own, wherever the
      // sandbox moved it (a root-owned directory moved onto the path of
      // one of the owner's must not come back as the owner's).
      const bool sandbox_users = !hooks.owner_for_uid || st.st_uid == *hooks.owner_for_uid;
      std::optional<Owner> own =
          hooks.directory_owner && sandbox_users ? hooks.directory_owner(path) : std::nullopt;
      COCOON_RETURN_IF_ERROR(ChownAt(dst_fd, entry.name, own ? *own : OwnerFor(hooks, inherited, st)));
      if ((st.st_mode & S_ISGID) && fchmod(dst_child.get(), 0700 | S_ISGID) != 0) {
        return ErrnoError("chmod '" + path + "'");
      }
      COCOON_RETURN_IF_ERROR(CopyTree(src_child.get(), dst_child.get(), path, hooks, stats));
      // The sticky bit only restricts (a 1777 dir must not come back 0777),
      // and setgid on a directory grants nothing: it makes new entries take
      // the directory's group (a team's shared dir must keep it).
      if (fchmod(dst_child.get(), st.st_mode & 03777) != 0) return ErrnoError("chmod '" + path + "'");
      ++stats.directories;
    } else if (S_ISREG(st.st_mode)) {
      if (hooks.take_file) {
        COCOON_ASSIGN_OR_RETURN(bool taken, hooks.take_file(path, st, src_fd, dst_fd, entry.name));
        if (taken) {
          ++stats.files;
          continue;
        }
      }
      COCOON_RETURN_IF_ERROR(CheckByteBudget(stats.bytes, static_cast<uint64_t>(st.st_size), hooks.max_bytes, path));
      Status copied = CopyFile(src_fd, entry.name, dst_fd, entry.name, st.st_mode, &stats.bytes, hooks.between_chunks);
      if (!copied.ok()) return copied.WithContext(path);
      COCOON_RETURN_IF_ERROR(ChownAt(dst_fd, entry.name, OwnerFor(hooks, inherited, st)));
      if (hooks.on_file) COCOON_RETURN_IF_ERROR(hooks.on_file(path, st, dst_fd, entry.name));
      ++stats.files;
    } else if (S_ISLNK(st.st_mode)) {
      auto target = CopySymlink(src_fd, entry.name, dst_fd, entry.name);
      if (!target.ok()) return target.status().WithContext(path);
      COCOON_RETURN_IF_ERROR(ChownAt(dst_fd, entry.name, OwnerFor(hooks, inherited, st)));
      if (hooks.on_symlink) hooks.on_symlink(path, *target);
      ++stats.symlinks;
    } else {
      if (hooks.on_special) hooks.on_special(path, st);
      if (hooks.skip) hooks.skip(path, S_ISFIFO(st.st_mode) ? "fifo" : S_ISSOCK(st.st_mode) ? "socket" : "device");
    }
  }
  return Status::Ok();
}

Status CheckByteBudget(uint64_t written, uint64_t next, uint64_t max_bytes, const std::string& path) {
  if (max_bytes == 0 || (next <= max_bytes && written <= max_bytes - next)) return Status::Ok();
  return Status(ErrorCode::kResourceExhausted,
                "the results would write more than the disk quota of " + std::to_string(max_bytes) +
                    " bytes to the host (at '" + path + "': sparse files are written out in full and every "
                    "hardlink name becomes a copy)");
}

Status CheckMetadataBudget(uint64_t charged, uint64_t next, uint64_t max_bytes, const std::string& path) {
  if (max_bytes == 0 || (next <= max_bytes && charged <= max_bytes - next)) return Status::Ok();
  return Status(ErrorCode::kResourceExhausted,
                "the results' new directories, links and names would take more than the disk quota of " +
                    std::to_string(max_bytes) + " bytes on the host (at '" + path +
                    "': each directory takes a 4 KiB disk block, which costs the sandbox's tmpfs nothing)");
}

}  // namespace cocoon::enforcer::tree
