#include "enforcer/workdir/commit.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "compiler/common/digest.h"
#include "enforcer/workdir/change_floor.h"
#include "enforcer/workdir/install_entries.h"
#include "enforcer/workdir/tree_ops.h"

namespace cocoon::enforcer {
namespace {

using tree::Fd;

struct HostDir {
  Fd parent;              // the host work dir's parent
  std::string parent_path;
  std::string base;       // its name in the parent
  Fd dir;                 // the host work dir itself
  struct stat st {};
};

Result<HostDir> OpenHostDir(const std::string& host_dir) {
  if (host_dir.empty() || host_dir[0] != '/') return InvalidArgumentError("host work dir must be absolute: " + host_dir);
  std::string path = host_dir;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  size_t slash = path.rfind('/');
  HostDir host;
  host.base = path.substr(slash + 1);
  if (host.base.empty() || host.base == "." || host.base == "..") return InvalidArgumentError("cannot commit to " + host_dir);
  std::string parent = slash == 0 ? "/" : path.substr(0, slash);
  host.parent_path = parent;
  host.parent = Fd(open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!host.parent.valid()) return ErrnoError("opening " + parent);
  COCOON_ASSIGN_OR_RETURN(host.dir, tree::OpenDir(host.parent.get(), host.base));
  struct stat parent_st {};
  if (fstat(host.dir.get(), &host.st) != 0 || fstat(host.parent.get(), &parent_st) != 0) return ErrnoError("stat " + host_dir);
  if (host.st.st_dev != parent_st.st_dev) {
    return FailedPreconditionError("host work dir " + host_dir + " is a mount point: the commit builds the new "
                                   "contents beside it, on its parent's filesystem, and cannot move them into "
                                   "another; use a directory inside the mount as the work dir");
  }
  return host;
}

// ".cocoon-commit-<16 hex digits of the work dir's name's SHA-256>-": the
// commit directories of one work dir, whatever else its parent holds. The
// name says whose they are, so the next staged run on that work dir can
// remove those a SIGKILLed supervisor left (SweepAbandonedCommitDirs).
std::string CommitDirPrefix(const std::string& work_dir_name) {
  return ".cocoon-commit-" + Sha256Hex(work_dir_name).substr(0, 16) + "-";
}

// mkdtemp relative to the parent fd: mkdirat with random names.
Result<std::string> MakeTempDir(int parent_fd, const std::string& work_dir_name) {
  const std::string prefix = CommitDirPrefix(work_dir_name);
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = prefix;
    unsigned char random_bytes[6] = {};
    if (getrandom(random_bytes, sizeof random_bytes, 0) != sizeof random_bytes) return ErrnoError("getrandom");
    static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    for (unsigned char byte : random_bytes) name += kAlphabet[byte % 36];
    if (mkdirat(parent_fd, name.c_str(), 0700) == 0) return name;
    if (errno != EEXIST) return ErrnoError("creating a commit directory next to the work dir");
  }
  return InternalError("no free commit directory name");
}

Result<std::pair<Fd, std::string>> OpenParent(int root_fd, const std::string& relative);

bool SameTime(const struct timespec& a, const struct timespec& b) {
  return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec;
}

// Reads both files to the end and compares them (both at offset 0). The
// buffers are the caller's, allocated once per commit.
constexpr size_t kCompareChunk = 256 * 1024;
Status HostChanged(const std::string& path, const char* what) {
  return FailedPreconditionError("'" + path + "' in the work dir " + what +
                                 " on the host while the sandbox ran: nothing was committed (the host's change is "
                                 "kept, the sandbox's results are discarded); do not edit a work dir while cocoon "
                                 "runs in it");
}

bool SameContents(int a, int b, std::vector<char>& left, std::vector<char>& right) {
  constexpr size_t kChunk = kCompareChunk;
  left.resize(kChunk);
  right.resize(kChunk);
  for (;;) {
    ssize_t n = read(a, left.data(), kChunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    size_t got = 0;
    while (got < static_cast<size_t>(n)) {
      ssize_t m = read(b, right.data() + got, static_cast<size_t>(n) - got);
      if (m < 0 && errno == EINTR) continue;
      if (m <= 0) return false;
      got += static_cast<size_t>(m);
    }
    if (n == 0) {
      char extra;
      return read(b, &extra, 1) == 0;
    }
    if (memcmp(left.data(), right.data(), static_cast<size_t>(n)) != 0) return false;
  }
}

// Every directory above `path` in the new tree grants no permission bit its
// host counterpart did not, and gives its owner and group bits to no one
// new (a root commit gives new directories to the work dir's owner: a
// root-owned 0700 directory would otherwise become that user's; a group
// that changed matters only if the group bits grant something). The new tree's root is the
// host dir itself, whose mode and owner the commit keeps.
bool DirectoriesNotWidened(int host_root, int new_root, const std::string& path) {
  for (size_t slash = path.find('/'); slash != std::string::npos; slash = path.find('/', slash + 1)) {
    std::string dir = path.substr(0, slash);
    struct stat host_st {}, new_st {};
    if (fstatat(host_root, dir.c_str(), &host_st, AT_SYMLINK_NOFOLLOW) != 0 ||
        fstatat(new_root, dir.c_str(), &new_st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(host_st.st_mode) ||
        !S_ISDIR(new_st.st_mode) || (new_st.st_mode & ~host_st.st_mode & 07777) != 0 ||
        (new_st.st_uid != host_st.st_uid && (new_st.st_mode & S_IRWXU) != 0) ||
        (new_st.st_gid != host_st.st_gid && (new_st.st_mode & S_IRWXG) != 0)) {
      return false;
    }
  }
  return true;
}

bool IsOpaque(int dir_fd) {
  char value[2] = {};
  for (const char* attr : {"user.overlay.opaque", "trusted.overlay.opaque"}) {
    if (fgetxattr(dir_fd, attr, value, sizeof value) == 1 && value[0] == 'y') return true;
  }
  return false;
}

class Committer {
 public:
  Committer(const ScanReport& scan, const CommitOptions& options) : scan_(scan), options_(options) {}

  Result<CommitReport> Run(int tree_fd, const std::string& host_dir);

 private:
  Status Tick();
  Status CancelRequested() const;
  tree::CopyHooks Hooks();
  Status LinkOriginals(int src_fd, int dst_fd, const std::string& prefix);
  Status DropHostSpecialsUnderWidenedDirectories(const HostDir& host, int temp_fd);
  Status ApplyUpper(int upper_fd, int dst_fd, const std::string& prefix);
  Status Build(int tree_fd, HostDir& host, int temp_fd);
  Status BuildTree(int tree_fd, HostDir& host, int temp_fd);
  Result<bool> LinkUntouchedOriginal(const HostDir& host, const std::string& path, const struct stat& staged,
                                     int src_dir, int dst_dir, const std::string& name);
  Status KeepHostSpecials(const HostDir& host, int temp_fd);
  std::optional<tree::Owner> HostDirectoryOwner(const std::string& path) const;
  // The group committed entries get unless a setgid parent gives its own:
  // the work dir owner's as root, ours rootless.
  gid_t OwnersGroup() const { return owner_.set ? owner_.gid : getegid(); }
  Status ConfineNewSymlinks(int temp_fd);
  Status CheckHostUnchanged(int dir_fd, const std::string& prefix, size_t* seen);
  Status CheckPreviousUnchanged(int old_fd, int installed_fd, const std::string& prefix, bool moved_out) const;

  const ScanReport& scan_;
  const CommitOptions& options_;
  CommitReport report_;
  uint64_t entries_ = 0;
  tree::CopyStats stats_;
  tree::Owner owner_;  // as root: the host work dir's owner, for everything committed
  std::vector<char> compare_left_, compare_right_;  // SameContents' buffers
  std::vector<std::pair<std::string, std::string>> written_symlinks_;  // path, target: from the sandbox's tree
  std::vector<std::string> host_specials_;  // overlay: the host's FIFOs, sockets and devices linked in
  // Staged copy: the host inodes linked into the new tree (untouched
  // originals, kept FIFOs, sockets and devices). Linking moved their ctime;
  // whatever names they have in the previous contents, they are in the
  // work dir still (CheckPreviousUnchanged).
  std::set<std::pair<dev_t, ino_t>> linked_originals_;
};

Status Committer::CancelRequested() const {
  if (options_.cancel && options_.cancel->load()) return Status(ErrorCode::kUnavailable, "commit cancelled");
  if (options_.cancel_fd >= 0 && FdReadableNow(options_.cancel_fd)) {
    return Status(ErrorCode::kUnavailable, "commit cancelled by a signal");
  }
  return Status::Ok();
}

Status Committer::Tick() {
  ++entries_;
  if (options_.cancel && options_.cancel->load()) return Status(ErrorCode::kUnavailable, "commit cancelled");
  if (options_.cancel_fd >= 0 && entries_ % kCancelFdPollEntries == 1 && FdReadableNow(options_.cancel_fd)) {
    return Status(ErrorCode::kUnavailable, "commit cancelled by a signal");
  }
  if (options_.fail_after_entries && entries_ > options_.fail_after_entries) {
    return Status(ErrorCode::kUnavailable, "commit interrupted (test hook)");
  }
  return Status::Ok();
}

tree::CopyHooks Committer::Hooks() {
  tree::CopyHooks hooks;
  hooks.owner = owner_;
  hooks.owner_for_uid = options_.sandbox_uid;
  hooks.keep = [this](const std::string& path) {
    if (!scan_.IsFlagged(path)) return true;
    for (const auto& finding : scan_.findings) {
      if (finding.path == path) report_.left_out.push_back(finding);
    }
    return false;
  };
  hooks.skip = [this](const std::string& path, const char* kind) {
    report_.left_out.push_back(BreakoutFinding{path, kind, ""});
  };
  hooks.tick = [this] { return Tick(); };
  hooks.between_chunks = [this] { return CancelRequested(); };
  hooks.on_symlink = [this](const std::string& path, const std::string& target) {
    written_symlinks_.emplace_back(path, target);
  };
  hooks.max_bytes = options_.max_bytes;
  return hooks;
}

// Overlay: mirror the host dir into the temp dir with hard links (no data is
// copied and the originals are never opened for writing).
Status Committer::LinkOriginals(int src_fd, int dst_fd, const std::string& prefix) {
  COCOON_ASSIGN_OR_RETURN(auto entries, tree::ListDir(src_fd));
  for (const auto& entry : entries) {
    COCOON_RETURN_IF_ERROR(Tick());
    const std::string path = tree::Join(prefix, entry.name);
    if (entry.type == DT_DIR) {
      struct stat st {};
      if (fstatat(src_fd, entry.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return ErrnoError("stat " + entry.name);
      if (mkdirat(dst_fd, entry.name.c_str(), 0700) != 0) return ErrnoError("mkdir " + entry.name);
      COCOON_ASSIGN_OR_RETURN(Fd src, tree::OpenDir(src_fd, entry.name));
      COCOON_ASSIGN_OR_RETURN(Fd dst, tree::OpenDir(dst_fd, entry.name));
      COCOON_RETURN_IF_ERROR(LinkOriginals(src.get(), dst.get(), path));
      // The recreated directory is the original's: its owner too (a root
      // committer would otherwise leave it root's, locking the owner out).
      if (owner_.set && fchown(dst.get(), st.st_uid, st.st_gid) != 0) return ErrnoError("chown " + entry.name);
      if (fchmod(dst.get(), st.st_mode & 07777) != 0) return ErrnoError("chmod " + entry.name);
      continue;
    }
    // linkat without AT_SYMLINK_FOLLOW links a symlink itself, never its target.
    if (linkat(src_fd, entry.name.c_str(), dst_fd, entry.name.c_str(), 0) != 0) {
      return ErrnoError("linking original '" + entry.name + "' into the commit directory");
    }
    if (entry.type != DT_REG && entry.type != DT_LNK) host_specials_.push_back(path);  // FIFO, socket, device
  }
  return Status::Ok();
}

// The overlay's counterpart of KeepHostSpecials' check: the host's FIFOs,
// sockets and devices are linked in with the originals, and the sandbox may
// have widened a directory above one (a 0700 directory made 0777 would make
// a host socket in it reachable by every host user). Such a special is taken
// out of the new tree and reported as left out.
Status Committer::DropHostSpecialsUnderWidenedDirectories(const HostDir& host, int temp_fd) {
  for (const std::string& path : host_specials_) {
    COCOON_RETURN_IF_ERROR(Tick());
    if (DirectoriesNotWidened(host.dir.get(), temp_fd, path)) continue;
    auto parent = OpenParent(temp_fd, path);
    if (!parent.ok()) continue;  // its directory went (opaque, whiteout): so did it
    struct stat st {};
    if (fstatat(parent->first.get(), parent->second.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode) || S_ISLNK(st.st_mode)) continue;  // the sandbox's own entry now
    if (unlinkat(parent->first.get(), parent->second.c_str(), 0) != 0) return ErrnoError("removing " + path);
    report_.left_out.push_back(BreakoutFinding{
        path, S_ISFIFO(st.st_mode) ? "fifo" : S_ISSOCK(st.st_mode) ? "socket" : "device",
        ""});
  }
  return Status::Ok();
}

// A copied work dir's setgid directory that the host had at that path, of
// the work dir's owner, is given its group back (the copy-in gave it to the
// sandbox user): a team's shared directory stays in its group. Only a setgid
// one: the sandbox can set the bit on any directory it has, and a directory
// of the owner's in a group the owner is not in (root's), made setgid, would
// let the owner make files in that group. Only the group: the sandbox may
// have replaced the directory with one of its own making, whose mode it
// chose, and that must stay the owner's to change (CopyTree asks only for
// a directory of the sandbox user's: one the host had of another owner was
// copied in as theirs, and keeps that).
// The record is the copy-in's, which CheckHostUnchanged has just found
// unchanged. Rootless, only a group the caller is in can be given (chown's
// rule); otherwise the default stands.
std::optional<tree::Owner> Committer::HostDirectoryOwner(const std::string& path) const {
  if (options_.originals == nullptr) return std::nullopt;
  auto it = options_.originals->host_entries.find(path);
  if (it == options_.originals->host_entries.end() || !S_ISDIR(it->second.mode) || !(it->second.mode & S_ISGID)) {
    return std::nullopt;
  }
  const StagedOriginals::Seen& original = it->second;
  if (owner_.set) {
    if (original.uid != owner_.uid) return std::nullopt;
    return tree::Owner{true, owner_.uid, original.gid};
  }
  if (original.uid != geteuid()) return std::nullopt;
  if (original.gid == getegid()) return tree::Owner{true, original.uid, original.gid};
  std::vector<gid_t> groups(static_cast<size_t>(std::max(getgroups(0, nullptr), 0)));
  if (getgroups(static_cast<int>(groups.size()), groups.data()) < 0) return std::nullopt;
  if (std::find(groups.begin(), groups.end(), original.gid) == groups.end()) return std::nullopt;
  return tree::Owner{true, original.uid, original.gid};
}

// Applies an overlayfs upper layer onto dst (a mirror of the lower layer):
// whiteouts delete, opaque dirs replace, everything else replaces by name.
Status Committer::ApplyUpper(int upper_fd, int dst_fd, const std::string& prefix) {
  COCOON_ASSIGN_OR_RETURN(auto entries, tree::ListDir(upper_fd));
  tree::CopyHooks hooks = Hooks();
  const tree::Owner owner = tree::InheritGroup(owner_, dst_fd);
  for (const auto& entry : entries) {
    std::string path = tree::Join(prefix, entry.name);
    COCOON_RETURN_IF_ERROR(Tick());
    struct stat st {};
    if (fstatat(upper_fd, entry.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return ErrnoError("stat " + path);
    if (S_ISCHR(st.st_mode) && st.st_rdev == 0) {  // whiteout
      COCOON_RETURN_IF_ERROR(tree::RemoveTree(dst_fd, entry.name));
      continue;
    }
    if (!hooks.keep(path)) continue;  // flagged: the original (if any) stays
    struct stat existing {};
    bool exists = fstatat(dst_fd, entry.name.c_str(), &existing, AT_SYMLINK_NOFOLLOW) == 0;
    // A directory the host had (merged) costs nothing new; every other entry
    // of the upper layer is new on the host's disk (tree::NewEntryDiskCost).
    if (!(exists && S_ISDIR(existing.st_mode) && S_ISDIR(st.st_mode))) {
      const uint64_t cost = tree::NewEntryDiskCost(entry.name, st);
      COCOON_RETURN_IF_ERROR(tree::CheckMetadataBudget(stats_.metadata_bytes, cost, options_.max_bytes, path));
      stats_.metadata_bytes += cost;
    }
    if (S_ISDIR(st.st_mode)) {
      COCOON_ASSIGN_OR_RETURN(Fd upper_child, tree::OpenDir(upper_fd, entry.name));
      bool merge = exists && S_ISDIR(existing.st_mode) && !IsOpaque(upper_child.get());
      if (!merge) {
        if (exists) COCOON_RETURN_IF_ERROR(tree::RemoveTree(dst_fd, entry.name));
        if (mkdirat(dst_fd, entry.name.c_str(), 0700) != 0) return ErrnoError("mkdir " + path);
      }
      COCOON_ASSIGN_OR_RETURN(Fd dst_child, tree::OpenDir(dst_fd, entry.name));
      // A merged directory is the host's own (LinkOriginals gave it its
      // owner, group and mode); a new one is the owner's, in the group of a
      // setgid parent. Both before the contents, so that they take its group.
      if (!merge) COCOON_RETURN_IF_ERROR(tree::ChownAt(dst_fd, entry.name, owner));
      // A merged directory keeps the host's group: setgid on it only when the
      // host's had it or the group is the owner's own (HostDirectoryOwner
      // says why: the sandbox can set the bit on any directory it has).
      const bool keep_setgid =
          (st.st_mode & S_ISGID) && (!merge || (existing.st_mode & S_ISGID) || existing.st_gid == OwnersGroup());
      if (keep_setgid && fchmod(dst_child.get(), 0700 | S_ISGID) != 0) return ErrnoError("chmod " + path);
      COCOON_RETURN_IF_ERROR(ApplyUpper(upper_child.get(), dst_child.get(), path));
      // The sticky bit only restricts (a 1777 dir must not come back 0777);
      // setgid only gives new entries the directory's group (tree_ops.cc).
      const mode_t mode = (st.st_mode & 01777) | (keep_setgid ? S_ISGID : 0);
      if (fchmod(dst_child.get(), mode) != 0) return ErrnoError("chmod " + path);
      ++stats_.directories;
      continue;
    }
    if (exists) COCOON_RETURN_IF_ERROR(tree::RemoveTree(dst_fd, entry.name));
    if (S_ISREG(st.st_mode)) {
      COCOON_RETURN_IF_ERROR(
          tree::CheckByteBudget(stats_.bytes, static_cast<uint64_t>(st.st_size), options_.max_bytes, path));
      COCOON_RETURN_IF_ERROR(tree::CopyFile(upper_fd, entry.name, dst_fd, entry.name, st.st_mode, &stats_.bytes,
                                            [this] { return CancelRequested(); }));
      COCOON_RETURN_IF_ERROR(tree::ChownAt(dst_fd, entry.name, owner));
      ++stats_.files;
    } else if (S_ISLNK(st.st_mode)) {
      auto target = tree::CopySymlink(upper_fd, entry.name, dst_fd, entry.name);
      if (!target.ok()) return target.status();
      COCOON_RETURN_IF_ERROR(tree::ChownAt(dst_fd, entry.name, owner));
      written_symlinks_.emplace_back(path, *target);
      ++stats_.symlinks;
    } else {
      hooks.skip(path, S_ISFIFO(st.st_mode) ? "fifo" : S_ISSOCK(st.st_mode) ? "socket" : "device");
    }
  }
  return Status::Ok();
}

// A staged file the sandbox left as the copy-in made it goes back as the
// host's original itself, linked, when that is still the file that was
// copied in. "As the copy-in made it" is checked on the contents, byte for
// byte: the same inode, size, mtime and ctime are necessary but not enough
// (writes through a shared mapping of a tmpfs file move neither time, and
// before Linux 6.13 tmpfs times are coarse). The host file is opened once,
// checked and compared through that fd, and linked through it
// (/proc/self/fd, AT_SYMLINK_FOLLOW), so another host process renaming
// something into its place meanwhile changes nothing. Anything else (a
// changed file, a replaced host file, a failed link) is copied as before.
Result<bool> Committer::LinkUntouchedOriginal(const HostDir& host, const std::string& path, const struct stat& staged,
                                              int src_dir, int dst_dir, const std::string& name) {
  if (options_.originals == nullptr) return false;
  auto it = options_.originals->files.find(path);
  if (it == options_.originals->files.end()) return false;
  const StagedOriginals::File& original = it->second;
  if (staged.st_ino != original.staged_ino || staged.st_size != original.staged_size ||
      !SameTime(staged.st_mtim, original.staged_mtime) || !SameTime(staged.st_ctim, original.staged_ctime)) {
    return false;
  }
  auto parent = OpenParent(host.dir.get(), path);
  if (!parent.ok()) return false;
  constexpr int kReadFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  Fd host_file(openat(parent->first.get(), parent->second.c_str(), kReadFlags));
  Fd staged_file(openat(src_dir, name.c_str(), kReadFlags));
  struct stat now {};
  if (!host_file.valid() || !staged_file.valid() || fstat(host_file.get(), &now) != 0 || !S_ISREG(now.st_mode) ||
      now.st_dev != original.host_dev || now.st_ino != original.host_ino || now.st_size != staged.st_size) {
    return false;
  }
  if (!SameContents(host_file.get(), staged_file.get(), compare_left_, compare_right_)) return false;
  std::string proc = "/proc/self/fd/" + std::to_string(host_file.get());
  if (linkat(AT_FDCWD, proc.c_str(), dst_dir, name.c_str(), AT_SYMLINK_FOLLOW) != 0) return false;
  linked_originals_.emplace(now.st_dev, now.st_ino);
  return true;
}

// The host's FIFOs, sockets and devices were never copied in, so the
// sandbox never saw them: they stay, unless the sandbox made something of
// its own at that name, removed the directory around it, or widened the
// mode of a directory on the way (the sandbox may have made a 0700
// directory 0777; a host socket under it must not become reachable by
// that). Like the originals above, each is linked through an O_PATH fd.
Status Committer::KeepHostSpecials(const HostDir& host, int temp_fd) {
  if (options_.originals == nullptr) return Status::Ok();
  for (const auto& [path, special] : options_.originals->not_copied) {
    COCOON_RETURN_IF_ERROR(Tick());
    auto into = OpenParent(temp_fd, path);
    if (!into.ok()) continue;
    struct stat there {};
    if (fstatat(into->first.get(), into->second.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0) continue;
    if (!DirectoriesNotWidened(host.dir.get(), temp_fd, path)) continue;
    auto from = OpenParent(host.dir.get(), path);
    if (!from.ok()) continue;
    Fd entry(openat(from->first.get(), from->second.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    struct stat now {};
    if (!entry.valid() || fstat(entry.get(), &now) != 0 || now.st_dev != special.host_dev ||
        now.st_ino != special.host_ino || S_ISREG(now.st_mode) || S_ISDIR(now.st_mode) || S_ISLNK(now.st_mode)) {
      continue;
    }
    std::string proc = "/proc/self/fd/" + std::to_string(entry.get());
    if (linkat(AT_FDCWD, proc.c_str(), into->first.get(), into->second.c_str(), AT_SYMLINK_FOLLOW) == 0) {
      linked_originals_.emplace(now.st_dev, now.st_ino);
      continue;
    }
    // Without /proc: by name, then check that the name still led to the
    // entry checked above; if another process swapped it in between, the
    // link is taken back (the entry is left out, as it once always was).
    if (linkat(from->first.get(), from->second.c_str(), into->first.get(), into->second.c_str(), 0) != 0) continue;
    struct stat linked {};
    if (fstatat(into->first.get(), into->second.c_str(), &linked, AT_SYMLINK_NOFOLLOW) != 0 ||
        linked.st_dev != now.st_dev || linked.st_ino != now.st_ino) {
      (void)unlinkat(into->first.get(), into->second.c_str(), 0);
    } else {
      linked_originals_.emplace(now.st_dev, now.st_ino);
    }
  }
  return Status::Ok();
}

// The scan judged each symlink in the sandbox's tree alone. A relative
// target without ".." only descends, but it may descend through a link the
// host dir already had (`etc -> /etc` kept as the host's own, or in overlay
// mode a lower-layer link the upper never shows): `log -> etc/shadow` would
// then reach the host's /etc under a new name. So every symlink written from
// the sandbox's tree is resolved once more, now in the merged tree, by the
// kernel, confined to it (openat2 RESOLVE_BENEATH fails with EXDEV on any
// way out, ELOOP on a loop); one that does not stay inside is removed before
// the install and reported. Missing targets (ENOENT, ENOTDIR) stay: resolution
// got that far inside, and links with ".." that dangle were flagged already.
Status Committer::ConfineNewSymlinks(int temp_fd) {
  for (const auto& [path, target] : written_symlinks_) {
    COCOON_RETURN_IF_ERROR(Tick());
    if (options_.host_symlinks != nullptr) {
      auto host = options_.host_symlinks->find(path);
      if (host != options_.host_symlinks->end() && host->second == target) continue;  // the host's own, untouched
    }
    struct open_how how {};
    how.flags = O_PATH | O_CLOEXEC;  // follows the link (that is the point), opens nothing for reading
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    long fd = syscall(SYS_openat2, temp_fd, path.c_str(), &how, sizeof how);
    if (fd >= 0) {
      close(static_cast<int>(fd));
      continue;
    }
    if (errno == ENOENT || errno == ENOTDIR) continue;
    BreakoutFinding finding{path, "symlink-escape", target};
    COCOON_ASSIGN_OR_RETURN(auto parent, OpenParent(temp_fd, path));
    if (unlinkat(parent.first.get(), parent.second.c_str(), 0) != 0) return ErrnoError("removing escaping link " + path);
    --stats_.symlinks;
    report_.left_out.push_back(finding);
    report_.escaping_after_merge.push_back(std::move(finding));
  }
  return Status::Ok();
}

// Staged copy mode builds the new contents from the copy-in, not from the
// host dir as it is now: an entry created, changed or removed on the host
// while the sandbox ran would silently be undone by the install. Compared
// against the copy-in's record (StagedOriginals::host_entries) just before
// the build; any difference refuses the commit, which keeps the host's
// change (the sandbox's results are discarded, and the error says why).
Status Committer::CheckHostUnchanged(int dir_fd, const std::string& prefix, size_t* seen) {
  COCOON_ASSIGN_OR_RETURN(auto entries, tree::ListDir(dir_fd));
  for (const auto& entry : entries) {
    COCOON_RETURN_IF_ERROR(Tick());
    std::string path = tree::Join(prefix, entry.name);
    struct stat st {};
    if (fstatat(dir_fd, entry.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return ErrnoError("stat " + path);
    auto it = options_.originals->host_entries.find(path);
    if (it == options_.originals->host_entries.end()) return HostChanged(path, "was created");
    if (it->second.ino != st.st_ino || !SameTime(it->second.ctime, st.st_ctim)) return HostChanged(path, "was changed");
    ++*seen;
    if (S_ISDIR(st.st_mode)) {
      COCOON_ASSIGN_OR_RETURN(Fd child, tree::OpenDir(dir_fd, entry.name));
      COCOON_RETURN_IF_ERROR(CheckHostUnchanged(child.get(), path, seen));
    }
  }
  return Status::Ok();
}

// After the install, before the previous contents (the entries moved out,
// or the whole old work dir) are removed: CheckHostUnchanged ran before the
// build, and a host process may have changed the work dir since (during a
// long build, or between the last check and the swap). What the copy-in did
// not record, or recorded with another inode or ctime, is the host's change,
// and removing it would lose it. Except:
//  - a host inode linked into the new tree (an untouched original, or a
//    FIFO, socket or device: KeepHostSpecials), whose ctime the link moved:
//    it is in the work dir still, whatever name it has in the previous
//    contents (a file the host had hard-linked under two names, one of them
//    replaced by the sandbox, is no change of the host's);
//  - a top-level entry the install moved out (`moved_out`), whose ctime
//    the rename moved: a directory's own ctime says nothing then (what is
//    in it is compared below), and a file, symlink or special is compared
//    by what rename(2) leaves alone: its mtime, size, mode and owner, so
//    that an edit made in place on the host after the last check (an
//    append to notes.txt) is still seen.
Status Committer::CheckPreviousUnchanged(int old_fd, int installed_fd, const std::string& prefix,
                                         bool moved_out) const {
  auto changed = [](const std::string& path, const char* what) {
    return FailedPreconditionError("'" + path + "' " + what + " on the host after the last check");
  };
  COCOON_ASSIGN_OR_RETURN(auto entries, tree::ListDir(old_fd));
  for (const auto& entry : entries) {
    const std::string path = tree::Join(prefix, entry.name);
    struct stat st {};
    if (fstatat(old_fd, entry.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return ErrnoError("stat " + path);
    auto it = options_.originals->host_entries.find(path);
    if (it == options_.originals->host_entries.end()) return changed(path, "was created");
    const StagedOriginals::Seen& seen = it->second;
    if (seen.ino != st.st_ino) return changed(path, "was replaced");
    bool same = SameTime(seen.ctime, st.st_ctim);
    if (!same && moved_out && prefix.empty()) {
      // A rename changes neither mode nor owner, so those are compared for
      // directories too (a host `chmod 700` of a top-level directory during
      // the commit was undone unnoticed); a directory's contents are
      // compared below, entry by entry.
      same = seen.mode == st.st_mode && seen.uid == st.st_uid && seen.gid == st.st_gid &&
             (S_ISDIR(st.st_mode) || (SameTime(seen.mtime, st.st_mtim) && seen.size == st.st_size));
    }
    if (!same && !S_ISDIR(st.st_mode) && linked_originals_.count({st.st_dev, st.st_ino}) != 0) same = true;
    if (!same) {
      struct stat installed {};
      if (S_ISDIR(st.st_mode) || fstatat(installed_fd, path.c_str(), &installed, AT_SYMLINK_NOFOLLOW) != 0 ||
          installed.st_dev != st.st_dev || installed.st_ino != st.st_ino) {
        return changed(path, "was changed");
      }
    }
    if (S_ISDIR(st.st_mode)) {
      COCOON_ASSIGN_OR_RETURN(Fd child, tree::OpenDir(old_fd, entry.name));
      COCOON_RETURN_IF_ERROR(CheckPreviousUnchanged(child.get(), installed_fd, path, moved_out));
    }
  }
  return Status::Ok();
}

Status Committer::Build(int tree_fd, HostDir& host, int temp_fd) {
  if (options_.originals != nullptr && options_.originals->host_entries_recorded) {
    // Before the build: linking untouched originals into the new tree moves
    // their ctime (the link count changes).
    size_t seen = 0;
    COCOON_RETURN_IF_ERROR(CheckHostUnchanged(host.dir.get(), "", &seen));
    if (seen != options_.originals->host_entries.size()) {
      return FailedPreconditionError("entries of the work dir were removed on the host while the sandbox ran: nothing "
                                     "was committed (the host's change is kept, the sandbox's results are "
                                     "discarded); do not edit a work dir while cocoon runs in it");
    }
  }
  COCOON_RETURN_IF_ERROR(BuildTree(tree_fd, host, temp_fd));
  return ConfineNewSymlinks(temp_fd);
}

Status Committer::BuildTree(int tree_fd, HostDir& host, int temp_fd) {
  if (options_.source == CommitSource::kStagedTree) {
    tree::CopyHooks hooks = Hooks();
    hooks.take_file = [this, &host](const std::string& path, const struct stat& staged, int src_dir, int dst_dir,
                                    const std::string& name) {
      return LinkUntouchedOriginal(host, path, staged, src_dir, dst_dir, name);
    };
    hooks.directory_owner = [this](const std::string& path) { return HostDirectoryOwner(path); };
    // The host's own entries, copied in and back, cost nothing new; an entry
    // of another type at a host entry's path is new (4,000 empty files made
    // directories in a second run would be free otherwise), and so is a
    // symlink that no longer fits in its inode.
    hooks.metadata_cost = [this](const std::string& path, const struct stat& st) -> uint64_t {
      const uint64_t cost = tree::NewEntryDiskCost(path.substr(path.rfind('/') + 1), st);
      if (options_.originals == nullptr) return cost;
      auto it = options_.originals->host_entries.find(path);
      if (it == options_.originals->host_entries.end() || (it->second.mode & S_IFMT) != (st.st_mode & S_IFMT)) return cost;
      if (S_ISLNK(st.st_mode) && static_cast<uint64_t>(st.st_size) > tree::kInlineSymlinkBytes) return cost;
      return 0;
    };
    COCOON_RETURN_IF_ERROR(tree::CopyTree(tree_fd, temp_fd, "", hooks, stats_));
    return KeepHostSpecials(host, temp_fd);
  }
  COCOON_RETURN_IF_ERROR(LinkOriginals(host.dir.get(), temp_fd, ""));
  COCOON_RETURN_IF_ERROR(ApplyUpper(tree_fd, temp_fd, ""));
  return DropHostSpecialsUnderWidenedDirectories(host, temp_fd);
}

// Why a different directory now at the work dir's path must not receive the
// commit: it is not what the run was prepared with (its originals were not
// what the sandbox saw, and someone put it there while the sandbox ran).
Status ReplacedWorkDir(const std::string& host_dir) {
  return FailedPreconditionError("the work dir " + host_dir +
                                 " was moved or replaced while the sandbox ran: the path no longer names the "
                                 "directory the run was prepared with, so nothing was committed (the run's changes "
                                 "are discarded); do not rename or replace a work dir while cocoon runs in it");
}

// The work dir's path must still name the directory opened: one moved
// away, with another put at its path, while the tree was built, is not the
// directory the caller names any more (ReplacedWorkDir). The install goes
// through the fd opened, so a replacement after this check receives nothing
// either; the commit then lands in the directory the run was prepared with.
Status CheckStillAtItsPath(const HostDir& host, const std::string& host_dir) {
  struct stat now {};
  if (fstatat(host.parent.get(), host.base.c_str(), &now, AT_SYMLINK_NOFOLLOW) != 0 || now.st_dev != host.st.st_dev ||
      now.st_ino != host.st.st_ino) {
    return ReplacedWorkDir(host_dir);
  }
  return Status::Ok();
}

std::string InParent(const HostDir& host, const std::string& name) {
  return (host.parent_path == "/" ? "" : host.parent_path) + "/" + name;
}

// After a whole-dir swap that brought in a directory other than the one
// opened (it was replaced between the check and renameat2), swap back, so
// that whatever was put at the path stays there untouched, and remove our
// tree (if the temporary name still holds it: `tree`). Returns an error
// either way. If the swap cannot be undone, the committed tree is at the
// path and the other directory at the temporary name: kDataLoss, which says
// so, for the caller must not report "nothing was committed".
Status UndoForeignSwap(const HostDir& host, const std::string& temp_name, const std::string& host_dir,
                       const struct stat& tree) {
  if (renameat2(host.parent.get(), temp_name.c_str(), host.parent.get(), host.base.c_str(), RENAME_EXCHANGE) == 0) {
    (void)tree::RemoveTreeIfItIs(host.parent.get(), temp_name, tree.st_dev, tree.st_ino);
    return ReplacedWorkDir(host_dir);
  }
  return Status(ErrorCode::kDataLoss, "the work dir " + host_dir + " was replaced during the commit's swap, and "
                                      "undoing the swap failed (" + std::string(strerror(errno)) + "): the path "
                                      "now holds the committed tree, and the directory that was put there is at " +
                                      InParent(host, temp_name) + "; check both by hand");
}

// The fallback when the entries cannot be moved one by one
// (CheckInstallPossible): the built tree takes the work dir's mode (and, as
// root, owner) and is swapped with the whole work dir in one renameat2
// RENAME_EXCHANGE, which needs write permission on the parent only (the
// commit dir was made there). The work dir's inode changes. An error means
// nothing was swapped.
Status SwapWholeDir(const HostDir& host, int temp_fd, const std::string& temp_name) {
  if (fchmod(temp_fd, host.st.st_mode & 07777) != 0) return ErrnoError("chmod commit dir");
  if (geteuid() == 0 && fchown(temp_fd, host.st.st_uid, host.st.st_gid) != 0) return ErrnoError("chown commit dir");
  if (renameat2(host.parent.get(), temp_name.c_str(), host.parent.get(), host.base.c_str(), RENAME_EXCHANGE) != 0) {
    return ErrnoError("swapping the committed tree into place");
  }
  return Status::Ok();
}

// The entries of other users in what remains of the previous contents
// (the topmost of each; at most kMaxNamed), which an unprivileged committer
// may not remove: a root-owned build/ (`sudo make`) that a whole-dir swap
// took out with the old work dir, or a root-owned directory below one of
// the caller's own that the install moved out.
constexpr size_t kMaxNamed = 3;
void FindOthersEntries(int dir_fd, const std::string& prefix, int depth,
                       std::vector<std::pair<std::string, uid_t>>& found) {
  auto entries = tree::ListDir(dir_fd);
  if (!entries.ok() || depth > 64) return;
  for (const auto& entry : *entries) {
    if (found.size() > kMaxNamed) return;
    struct stat st {};
    if (fstatat(dir_fd, entry.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    const std::string path = tree::Join(prefix, entry.name);
    if (st.st_uid != geteuid()) {
      found.emplace_back(path, st.st_uid);
    } else if (S_ISDIR(st.st_mode)) {
      auto child = tree::OpenDir(dir_fd, entry.name);
      if (child.ok()) FindOthersEntries(child->get(), path, depth + 1, found);
    }
  }
}

std::string ShellQuoted(const std::string& text) {
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// CommitReport::cleanup_warning: where the previous contents remain, and,
// when they hold entries of another user's (which this one cannot remove,
// however often it tries), whose and what to do about it.
std::string LeftoverWarning(const HostDir& host, const std::string& temp_name, const struct stat& previous,
                            const Status& cleanup) {
  const std::string where = InParent(host, temp_name);
  std::vector<std::pair<std::string, uid_t>> others;
  auto left = tree::OpenDir(host.parent.get(), temp_name);
  struct stat st {};
  if (geteuid() != 0 && left.ok() && fstat(left->get(), &st) == 0 && st.st_dev == previous.st_dev &&
      st.st_ino == previous.st_ino) {
    FindOthersEntries(left->get(), "", 0, others);
  }
  if (others.empty()) {
    return "committed, but the previous contents of the work dir remain in " + where + ": " + cleanup.message() +
           "; remove that directory by hand";
  }
  std::string named;
  for (size_t i = 0; i < others.size() && i < kMaxNamed; ++i) {
    named += (i == 0 ? "'" : ", '") + others[i].first + "' (uid " + std::to_string(others[i].second) + "'s)";
  }
  if (others.size() > kMaxNamed) named += " and more";
  return "committed, but the previous contents of the work dir could not all be removed: " + where +
         " still holds " + named + ", which this user (uid " + std::to_string(geteuid()) +
         ") may not remove; everything else in it was removed. Have their owner or root remove that directory "
         "(sudo rm -rf -- " + ShellQuoted(where) + ")";
}

// A root committer made the commit directory root's, 0700: kept for the
// work dir's owner to take what they need from and remove (the warning
// says so), it becomes theirs, as everything the commit wrote is. Its
// entries keep their owners: they are the work dir's previous entries,
// moved, not copied (and, kept half installed, the owner's new ones).
// Through the fd of the directory cocoon made, never by name (another user
// may write the parent). Best effort: the warning names it either way.
void GiveKeptDirToOwner(const HostDir& host, int kept_fd) {
  if (geteuid() == 0) (void)fchown(kept_fd, host.st.st_uid, host.st.st_gid);
}

// Renames the commit directory `temp_name` out of the sweep's reach
// (SweepAbandonedCommitDirs takes only its exact names) and returns its new
// name: "<temp>-kept", or, where another user who can write the parent
// (/tmp) took that name first, "<temp>-kept-<random>". Only if every name is
// taken does it stay where it is (and the sweep may remove it after ten
// minutes; the warning names it either way).
std::string RenameOutOfTheSweep(const HostDir& host, const std::string& temp_name) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::string kept = temp_name + "-kept";
    if (attempt > 0) {
      unsigned char random_bytes[6] = {};
      if (getrandom(random_bytes, sizeof random_bytes, 0) != sizeof random_bytes) break;
      static const char kAlphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
      kept += '-';
      for (unsigned char byte : random_bytes) kept += kAlphabet[byte % 36];
    }
    if (renameat2(host.parent.get(), temp_name.c_str(), host.parent.get(), kept.c_str(), RENAME_NOREPLACE) == 0) {
      return kept;
    }
    if (errno != EEXIST) break;
  }
  return temp_name;
}

// An install that could not be undone (install_entries.h): the commit
// directory holds what the work dir lacks, so it is renamed out of the
// sweep's reach (SweepAbandonedCommitDirs takes only its exact names) and
// named in the error.
Status KeepHalfInstalled(const HostDir& host, int temp_fd, const std::string& temp_name, const Status& failed) {
  const std::string kept = RenameOutOfTheSweep(host, temp_name);
  GiveKeptDirToOwner(host, temp_fd);
  return Status(ErrorCode::kDataLoss, failed.message() + " (" + InParent(host, kept) + "); check both by hand");
}

// Rootless, a whole-dir swap puts the built tree in the work dir's place,
// and every entry the commit made in it is this user's. An entry the host
// has at the same path of another user's (a root-owned build/ that the
// copy-in staged and the sandbox kept or changed) came back as this
// user's: its owner silently changed, which an unprivileged committer
// cannot undo. The host dir's entries against the built tree's at their
// paths (an entry the new tree lacks is not recreated: it goes out with the
// previous contents, and the cleanup warning names it): the first
// kMaxNamed + 1 whose owner the swap would change, with the host's uid.
void FindOwnersTheSwapWouldChange(int host_fd, int built_fd, const std::string& prefix, int depth,
                                  std::vector<std::pair<std::string, uid_t>>& found) {
  auto entries = tree::ListDir(host_fd);
  if (!entries.ok() || depth > 64) return;
  for (const auto& entry : *entries) {
    if (found.size() > kMaxNamed) return;
    struct stat host_st {};
    struct stat built_st {};
    if (fstatat(host_fd, entry.name.c_str(), &host_st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (fstatat(built_fd, entry.name.c_str(), &built_st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    const std::string path = tree::Join(prefix, entry.name);
    if (host_st.st_uid != built_st.st_uid) {
      found.emplace_back(path, host_st.st_uid);
    } else if (S_ISDIR(host_st.st_mode) && S_ISDIR(built_st.st_mode)) {
      auto host_child = tree::OpenDir(host_fd, entry.name);
      auto built_child = tree::OpenDir(built_fd, entry.name);
      if (host_child.ok() && built_child.ok()) {
        FindOwnersTheSwapWouldChange(host_child->get(), built_child->get(), path, depth + 1, found);
      }
    }
  }
}

// The whole-dir swap would change the owners in `changed`: nothing is
// committed (the host dir is as it was), and the built tree, the run's
// result, is kept out of the sweep's reach for the user to take from.
Status KeepUnswapped(const HostDir& host, const std::string& temp_name, const Status& why_whole,
                     const std::vector<std::pair<std::string, uid_t>>& changed) {
  const std::string kept = RenameOutOfTheSweep(host, temp_name);
  std::string named;
  for (size_t i = 0; i < changed.size() && i < kMaxNamed; ++i) {
    named += (i == 0 ? "'" : ", '") + changed[i].first + "' (uid " + std::to_string(changed[i].second) + "'s)";
  }
  if (changed.size() > kMaxNamed) named += " and more";
  return Status(ErrorCode::kFailedPrecondition,
                "nothing was committed: the work dir could only be replaced whole (" + why_whole.message() +
                    "), and that would have made " + named + " this user's (uid " + std::to_string(geteuid()) +
                    "), who cannot give another user's entry back to its owner. The host work dir is unchanged; the run's "
                    "result is kept in " + InParent(host, kept) +
                    ": take what you need from there, then remove it (or have the owner remove those entries, "
                    "or run cocoon as root, and run again)");
}

Result<CommitReport> Committer::Run(int tree_fd, const std::string& host_dir) {
  COCOON_ASSIGN_OR_RETURN(HostDir host, OpenHostDir(host_dir));
  if (options_.expected_host_dir && !options_.expected_host_dir->Matches(host.st)) return ReplacedWorkDir(host_dir);
  // A root committer hands everything to the work dir's owner, not to root.
  if (geteuid() == 0) owner_ = tree::Owner{true, host.st.st_uid, host.st.st_gid};
  COCOON_ASSIGN_OR_RETURN(std::string temp_name, MakeTempDir(host.parent.get(), host.base));
  struct stat temp_st {};  // our tree: only it is ever removed from the temporary name
  auto temp = tree::OpenDir(host.parent.get(), temp_name);
  if (temp.ok() && fstat(temp->get(), &temp_st) != 0) temp = ErrnoError("stat commit dir");
  if (!temp.ok()) {
    (void)unlinkat(host.parent.get(), temp_name.c_str(), AT_REMOVEDIR);  // empty: just made
    return temp.status().WithContext("commit of the work dir (nothing was committed)");
  }
  Status built = Build(tree_fd, host, temp->get());
  if (built.ok() && options_.before_install_for_test) options_.before_install_for_test();
  // Tick polls the signal fd once per 64 entries, and a big file's copy
  // takes seconds between two polls: a cancel that came meanwhile (or after
  // the last poll) is seen here, the last moment it can still stop the commit.
  // From here on every signal that could end or stop cocoon stays held
  // until the host has its new contents or its old ones back (the CLI
  // holds SIGINT/SIGTERM/SIGHUP in its signalfd anyway; the hold adds
  // SIGTSTP, SIGPROF, SIGXFSZ, real-time signals, ... and covers a library
  // caller): it is only renames, no data is copied. Released before the
  // previous contents are removed, which may take long and changes nothing
  // the user still has.
  std::optional<HostChangeSignalHold> hold;
  if (built.ok()) hold.emplace();
  if (built.ok()) built = CancelRequested();
  if (built.ok()) built = CheckStillAtItsPath(host, host_dir);
  // The step that changes the host: the new tree's entries go into the work
  // dir, each by one rename, and the work dir's previous entries come out
  // into the commit dir (install_entries.h). The work dir itself stays the
  // same directory. A failure undoes what went in: before it, nothing changed.
  // Decided before anything moves: whether every entry can be moved (an
  // unprivileged committer cannot move another user's directory, such as
  // a root-owned build/); if not, the whole work dir is swapped as one.
  Status per_entry = built.ok() ? CheckInstallPossible(temp->get(), host.dir.get()) : Status::Ok();
  if (built.ok() && per_entry.code() != ErrorCode::kFailedPrecondition) built = per_entry;
  const bool whole_dir = built.ok() && !per_entry.ok();
  if (built.ok() && !whole_dir) {
    InstallOptions install;
    install.fail_after_steps = options_.fail_install_after_steps;
    install.after_step_for_test = options_.after_install_step_for_test;
    built = InstallEntries(temp->get(), host.dir.get(), host_dir, install);
    if (built.code() == ErrorCode::kDataLoss) return KeepHalfInstalled(host, temp->get(), temp_name, built);
  }
  // Rootless, the swap would give the built tree's copies of other users'
  // entries to this user: refused, and the result kept (KeepUnswapped).
  if (whole_dir && geteuid() != 0) {
    std::vector<std::pair<std::string, uid_t>> changed;
    FindOwnersTheSwapWouldChange(host.dir.get(), temp->get(), "", 0, changed);
    if (!changed.empty()) return KeepUnswapped(host, temp_name, per_entry, changed);
  }
  if (whole_dir && options_.before_whole_dir_swap_for_test) options_.before_whole_dir_swap_for_test();
  if (whole_dir) built = SwapWholeDir(host, temp->get(), temp_name);
  if (whole_dir && built.ok()) {
    // The name is looked up again by renameat2: what it swapped out must be
    // the directory opened (and linked from) above, or the swap is undone.
    // (A failed stat proves nothing: the swap stands, and the cleanup below
    // removes only that same directory.)
    struct stat swapped_out {};
    if (fstatat(host.parent.get(), temp_name.c_str(), &swapped_out, AT_SYMLINK_NOFOLLOW) == 0 &&
        (swapped_out.st_dev != host.st.st_dev || swapped_out.st_ino != host.st.st_ino)) {
      return UndoForeignSwap(host, temp_name, host_dir, temp_st);
    }
  }
  hold.reset();  // the host holds its new contents, or its old ones
  if (!built.ok()) {
    (void)tree::RemoveTreeIfItIs(host.parent.get(), temp_name, temp_st.st_dev, temp_st.st_ino);  // the new tree
    return built.WithContext("commit of the work dir (nothing was committed)");
  }
  if (whole_dir) {
    report_.note = "the work dir was replaced by a new directory, not filled entry by entry (" +
                   per_entry.message() + "): its inode changed; a shell in it must cd back into it";
  }
  // The previous entries, now in the commit dir (after a whole-dir swap:
  // the previous work dir itself, now at the commit dir's name).
  const struct stat& previous = whole_dir ? host.st : temp_st;
  // Changed on the host since the check before the build: kept, out of the
  // sweep's reach, for the user to take what they need.
  if (options_.originals != nullptr && options_.originals->host_entries_recorded) {
    auto old_dir = tree::OpenDir(host.parent.get(), temp_name);
    struct stat old_st {};
    Status unchanged = old_dir.ok() ? Status::Ok() : old_dir.status();
    if (unchanged.ok() && (fstat(old_dir->get(), &old_st) != 0 || old_st.st_dev != previous.st_dev ||
                           old_st.st_ino != previous.st_ino)) {
      unchanged = FailedPreconditionError("'" + temp_name + "' is no longer the directory cocoon made there");
    }
    const bool ours = unchanged.ok();
    if (unchanged.ok()) {
      unchanged = CheckPreviousUnchanged(old_dir->get(), whole_dir ? temp->get() : host.dir.get(), "", !whole_dir);
    }
    if (!unchanged.ok()) {
      const std::string kept = RenameOutOfTheSweep(host, temp_name);
      // (After a whole-dir swap it is the old work dir itself: the owner's already.)
      if (ours) GiveKeptDirToOwner(host, old_dir->get());
      report_.cleanup_warning = "committed, but the previous contents of the work dir were not removed, for they "
                                "may hold a change made on the host during the commit (" + unchanged.message() +
                                "): they are kept in " + InParent(host, kept) +
                                "; take what you need from there, then remove that directory";
      report_.files = stats_.files;
      report_.directories = stats_.directories;
      report_.symlinks = stats_.symlinks;
      report_.bytes = stats_.bytes;
      return std::move(report_);
    }
  }
  // Everything that can go goes: what stays is only what this user may not
  // remove (and the directories holding it), which the warning names.
  Status cleanup = tree::RemoveTreeIfItIs(host.parent.get(), temp_name, previous.st_dev, previous.st_ino,
                                          tree::RemovalFailure::kGoOn);
  // The install happened: the commit stands even if the old entries linger.
  if (!cleanup.ok()) report_.cleanup_warning = LeftoverWarning(host, temp_name, previous, cleanup);
  report_.files = stats_.files;
  report_.directories = stats_.directories;
  report_.symlinks = stats_.symlinks;
  report_.bytes = stats_.bytes;
  return std::move(report_);
}

// Opens the parent directory of `relative` without following links and
// returns it with the final component's name.
Result<std::pair<Fd, std::string>> OpenParent(int root_fd, const std::string& relative) {
  size_t slash = relative.rfind('/');
  std::string dir = slash == std::string::npos ? "" : relative.substr(0, slash);
  std::string name = slash == std::string::npos ? relative : relative.substr(slash + 1);
  COCOON_ASSIGN_OR_RETURN(Fd parent, tree::OpenDirPath(root_fd, dir, tree::CreateMissing::kNo));
  return std::make_pair(std::move(parent), name);
}

// What Remediate did with one finding.
enum class Remedy { kDefused, kPreexisting };

Result<Remedy> Remediate(int root_fd, const BreakoutFinding& finding, const struct timespec& changed_since) {
  // Reported only: the Outcome says "incomplete" (whatever the entry's own
  // ctime, what lies below it may be the sandbox's).
  if (IsUninspected(finding)) return Remedy::kDefused;
  COCOON_ASSIGN_OR_RETURN(auto parent, OpenParent(root_fd, finding.path));
  const std::string& name = parent.second;
  if (finding.kind == "setuid" || finding.kind == "setgid") {
    // O_PATH|O_NOFOLLOW: the entry itself, opened without read permission
    // and never through a symlink put at its name.
    Fd file(openat(parent.first.get(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    struct stat st {};
    if (!file.valid() || fstat(file.get(), &st) != 0) return ErrnoError("opening " + finding.path);
    if (!ChangedSince(st, changed_since)) return Remedy::kPreexisting;
    COCOON_RETURN_IF_ERROR(ClearSetIdBits(file.get(), st, finding.path));
    return Remedy::kDefused;
  }
  struct stat st {};
  if (fstatat(parent.first.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return Remedy::kDefused;
    return ErrnoError("stat " + finding.path);
  }
  if (!ChangedSince(st, changed_since)) return Remedy::kPreexisting;
  // Escaping links, outside hardlinks, devices, FIFOs, sockets: unlink the
  // name (an outside hardlink's target file keeps its other names).
  if (unlinkat(parent.first.get(), name.c_str(), 0) != 0 && errno != ENOENT) return ErrnoError("removing " + finding.path);
  return Remedy::kDefused;
}

}  // namespace

Status CheckCommitPossible(const std::string& host_dir) {
  COCOON_ASSIGN_OR_RETURN(HostDir host, OpenHostDir(host_dir));
  Result<std::string> probe = MakeTempDir(host.parent.get(), host.base);
  if (!probe.ok()) {
    return FailedPreconditionError("work dir " + host_dir + ": its results are committed through a directory made "
                                   "beside it, and " + probe.status().message() + " (in " + host.parent_path +
                                   "); use a work dir whose parent you can write");
  }
  unlinkat(host.parent.get(), probe->c_str(), AT_REMOVEDIR);
  return Status::Ok();
}

size_t SweepAbandonedCommitDirs(const std::string& host_dir, std::chrono::seconds min_age) {
  auto host = OpenHostDir(host_dir);
  if (!host.ok()) return 0;
  auto entries = tree::ListDir(host->parent.get());
  if (!entries.ok()) return 0;
  const std::string prefix = CommitDirPrefix(host->base);
  const time_t now = time(nullptr);
  size_t removed = 0;
  for (const auto& entry : *entries) {
    if (entry.name.compare(0, prefix.size(), prefix) != 0 || entry.name.size() != prefix.size() + 6) continue;
    struct stat st {};
    if (fstatat(host->parent.get(), entry.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) continue;
    // Only a directory a commit of this user's could have left: another
    // user's of that name may be a plant (/tmp is writable by anyone), and
    // is never entered. The owner's own next run sweeps what the owner's
    // runs left (a rootless whole-dir swap leaves the owner's directory).
    if (st.st_uid != geteuid()) continue;
    // ctime: a commit directory changes as entries go in, and as the
    // install moves entries in and out of it.
    if (now - st.st_ctim.tv_sec < min_age.count()) continue;
    if (tree::RemoveTreeIfItIs(host->parent.get(), entry.name, st.st_dev, st.st_ino).ok()) ++removed;
  }
  return removed;
}

Result<CommitReport> CommitStagedTree(int tree_fd, const ScanReport& scan, const std::string& host_dir,
                                      const CommitOptions& options) {
  Committer committer(scan, options);
  return committer.Run(tree_fd, host_dir);
}

Result<CommitReport> RemediateDirectTree(int host_dir_fd, const ScanReport& scan,
                                         const struct timespec& changed_since) {
  if (host_dir_fd < 0) return InvalidArgumentError("direct-mode remediation needs the work dir's fd");
  CommitReport report;
  // One entry that cannot be removed must not stop the others from being
  // defused: remediate all, then report the first failure and the count.
  for (size_t i = 0; i < scan.findings.size(); ++i) {
    Result<Remedy> remediated = Remediate(host_dir_fd, scan.findings[i], changed_since);
    if (remediated.ok() && *remediated == Remedy::kPreexisting) {
      report.preexisting.push_back(i);
    } else if (remediated.ok()) {
      report.left_out.push_back(scan.findings[i]);
    } else {
      if (report.not_remediated.empty()) report.remediation_error = remediated.status().message();
      report.not_remediated.push_back(i);
    }
  }
  return report;
}

Status ClearSetIdBits(int path_fd, const struct stat& st, const std::string& what) {
  if (!S_ISREG(st.st_mode)) return FailedPreconditionError(what + " is no longer a regular file");
  if ((st.st_mode & (S_ISUID | S_ISGID)) == 0) return Status::Ok();
  return tree::ChmodThroughPathFd(path_fd, st.st_mode & 01777 & ~(S_ISUID | S_ISGID), "clearing setuid/setgid on " + what);
}

void SetAsidePreexisting(ScanReport& scan, const CommitReport& report, std::vector<BreakoutFinding>& preexisting) {
  for (size_t i : report.not_remediated) scan.findings[i].left_in_place = true;
  if (report.preexisting.empty()) return;
  std::vector<BreakoutFinding> sandbox_made;
  size_t next = 0;  // report.preexisting is in ascending order
  for (size_t i = 0; i < scan.findings.size(); ++i) {
    if (next < report.preexisting.size() && report.preexisting[next] == i) {
      preexisting.push_back(std::move(scan.findings[i]));
      ++next;
    } else {
      sandbox_made.push_back(std::move(scan.findings[i]));
    }
  }
  scan.findings = std::move(sandbox_made);
}

}  // namespace cocoon::enforcer
