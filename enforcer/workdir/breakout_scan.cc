#include "enforcer/workdir/breakout_scan.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <unordered_map>

namespace cocoon::enforcer {
namespace {

// getdents64 record (man 2 getdents); glibc < 2.30 has no wrapper.
struct LinuxDirent64 {
  uint64_t d_ino;
  int64_t d_off;
  unsigned short d_reclen;
  unsigned char d_type;
  char d_name[];
};

constexpr size_t kDentsBuffer = 64 * 1024;

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// A regular file with more than one link: remembered until the walk ends,
// when the links seen inside the tree are compared with st_nlink.
struct MultiLink {
  std::string path;  // first path seen
  nlink_t nlink = 0;
  uint64_t seen = 0;
};

class Scanner {
 public:
  Scanner(int root_fd, const ScanOptions& options) : root_fd_(root_fd), options_(options) {
    buffer_.reset(new char[kDentsBuffer * kMaxBuffers]);
  }

  Result<ScanReport> Run();

 private:
  static constexpr uint32_t kMaxBuffers = 64;  // depth that gets its own buffer; deeper ones allocate

  Status Walk(int dir_fd, std::string& path, uint32_t depth);
  Status Entry(int dir_fd, std::string& path, const char* name, unsigned char type, uint32_t depth);
  void CheckSymlink(int dir_fd, const std::string& path, const char* name);
  void CheckStat(const std::string& path, const struct stat& st);
  void Add(const std::string& path, const char* kind, std::string target = "") {
    report_.findings.push_back(BreakoutFinding{path, kind, std::move(target)});
  }

  int root_fd_;
  const ScanOptions& options_;
  dev_t root_dev_ = 0;
  std::unique_ptr<char[]> buffer_;
  std::unordered_map<ino_t, MultiLink> multi_links_;
  ScanReport report_;
};

Result<ScanReport> Scanner::Run() {
  struct stat st {};
  if (fstat(root_fd_, &st) != 0) return ErrnoError("stat of the work dir");
  if (!S_ISDIR(st.st_mode)) return InvalidArgumentError("work dir is not a directory");
  root_dev_ = st.st_dev;
  std::string path;
  path.reserve(4096);
  COCOON_RETURN_IF_ERROR(Walk(root_fd_, path, 0));
  for (const auto& [ino, link] : multi_links_) {
    // Every link of the inode inside the tree: the file is the tree's own.
    if (link.seen < link.nlink) Add(link.path, "hardlink");
  }
  std::sort(report_.findings.begin(), report_.findings.end(),
            [](const BreakoutFinding& a, const BreakoutFinding& b) {
              return a.path != b.path ? a.path < b.path : a.kind < b.kind;
            });
  return std::move(report_);
}

Status Scanner::Walk(int dir_fd, std::string& path, uint32_t depth) {
  if (depth > options_.max_depth) return ResourceExhaustedError("work dir nested deeper than " + std::to_string(options_.max_depth));
  std::unique_ptr<char[]> own;
  char* buffer = buffer_.get() + kDentsBuffer * depth;
  if (depth >= kMaxBuffers) {
    own.reset(new char[kDentsBuffer]);
    buffer = own.get();
  }
  for (;;) {
    long n = syscall(SYS_getdents64, dir_fd, buffer, kDentsBuffer);
    if (n < 0) return ErrnoError("reading directory '" + path + "'");
    if (n == 0) return Status::Ok();
    for (long offset = 0; offset < n;) {
      auto* d = reinterpret_cast<LinuxDirent64*>(buffer + offset);
      offset += d->d_reclen;
      const char* name = d->d_name;
      if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
      COCOON_RETURN_IF_ERROR(Entry(dir_fd, path, name, d->d_type, depth));
    }
  }
}

Status Scanner::Entry(int dir_fd, std::string& path, const char* name, unsigned char type, uint32_t depth) {
  size_t old_size = path.size();
  if (!path.empty()) path.push_back('/');
  path.append(name);
  if (++report_.entries > options_.max_entries) return ResourceExhaustedError("work dir has too many entries");
  struct stat st {};
  if (type == DT_UNKNOWN || type == DT_REG || type == DT_DIR) {
    // Regular files need nlink and mode; directories need st_dev (a mount
    // inside the tree is not entered). DT_UNKNOWN (some filesystems) needs it all.
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      Add(path, "unreadable");
      path.resize(old_size);
      return Status::Ok();
    }
    type = IFTODT(st.st_mode);
  }
  switch (type) {
    case DT_DIR: {
      ++report_.directories;
      if (st.st_dev != root_dev_) {
        Add(path, "mount");
        break;
      }
      if (st.st_mode & S_ISUID) Add(path, "setuid");
      int child = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (child < 0) {
        Add(path, "unreadable");
        break;
      }
      FdCloser closer(child);
      COCOON_RETURN_IF_ERROR(Walk(child, path, depth + 1));
      break;
    }
    case DT_REG:
      ++report_.regular_files;
      report_.bytes += static_cast<uint64_t>(st.st_size);
      CheckStat(path, st);
      break;
    case DT_LNK:
      ++report_.symlinks;
      CheckSymlink(dir_fd, path, name);
      break;
    case DT_CHR:
      if (options_.mode == ScanMode::kOverlayUpper) {
        // Overlayfs whiteouts are char 0:0 (Documentation/filesystems/overlayfs.rst).
        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == 0) break;
      }
      Add(path, "device");
      break;
    case DT_BLK: Add(path, "device"); break;
    case DT_FIFO: Add(path, "fifo"); break;
    case DT_SOCK: Add(path, "socket"); break;
    default: Add(path, "unreadable"); break;
  }
  path.resize(old_size);
  return Status::Ok();
}

void Scanner::CheckStat(const std::string& path, const struct stat& st) {
  if (st.st_mode & S_ISUID) Add(path, "setuid");
  // setgid without group-execute is mandatory locking, not privilege; the
  // commit drops the bit either way, but only the privileged form is flagged.
  if ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP)) Add(path, "setgid");
  if (st.st_nlink > 1) {
    MultiLink& link = multi_links_[st.st_ino];
    if (link.seen++ == 0) {
      link.path = path;
      link.nlink = st.st_nlink;
    }
  }
}

void Scanner::CheckSymlink(int dir_fd, const std::string& path, const char* name) {
  char target[PATH_MAX + 1];
  ssize_t len = readlinkat(dir_fd, name, target, PATH_MAX);
  if (len < 0) {
    Add(path, "unreadable");
    return;
  }
  target[len] = 0;
  std::string target_string(target, static_cast<size_t>(len));
  if (SymlinkEscapesLexically(path, target_string)) {
    Add(path, "symlink-escape", target_string);
    return;
  }
  // Lexically inside, but a component may itself be a link that climbs out
  // (a -> b/.., b -> ..). Let the kernel resolve it confined to the tree:
  // RESOLVE_BENEATH fails with EXDEV on any escape (man 2 openat2).
  struct open_how how {};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  int fd = static_cast<int>(syscall(SYS_openat2, root_fd_, path.c_str(), &how, sizeof how));
  if (fd >= 0) {
    close(fd);
    return;
  }
  int err = errno;
  if (err == ENOENT || err == ENOTDIR) {
    // Dangling. Harmless unless a ".." could climb out once the missing part
    // appears, so dangling links with ".." are flagged (fail closed).
    if (target_string.find("..") != std::string::npos) Add(path, "symlink-escape", target_string);
    return;
  }
  Add(path, "symlink-escape", target_string);  // EXDEV, ELOOP, anything else
}

}  // namespace

bool ScanReport::IsFlagged(const std::string& relative_path) const {
  auto it = std::lower_bound(findings.begin(), findings.end(), relative_path,
                             [](const BreakoutFinding& f, const std::string& p) { return f.path < p; });
  return it != findings.end() && it->path == relative_path;
}

bool SymlinkEscapesLexically(const std::string& link_path, const std::string& target) {
  if (target.empty()) return false;  // the kernel refuses empty targets anyway
  if (target[0] == '/') return true;  // on the host, an absolute target is a host path
  // Depth of the directory holding the link, in components.
  long depth = static_cast<long>(std::count(link_path.begin(), link_path.end(), '/'));
  size_t pos = 0;
  while (pos <= target.size()) {
    size_t end = target.find('/', pos);
    if (end == std::string::npos) end = target.size();
    std::string_view part(target.data() + pos, end - pos);
    if (part == "..") {
      if (--depth < 0) return true;
    } else if (!part.empty() && part != ".") {
      ++depth;
    }
    pos = end + 1;
  }
  return false;
}

Result<ScanReport> ScanForBreakouts(int root_fd, const ScanOptions& options) {
  Scanner scanner(root_fd, options);
  return scanner.Run();
}

Result<ScanReport> ScanForBreakoutsAt(const std::string& root, const ScanOptions& options) {
  int fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return ErrnoError("opening work dir " + root);
  FdCloser closer(fd);
  return ScanForBreakouts(fd, options);
}

}  // namespace cocoon::enforcer
