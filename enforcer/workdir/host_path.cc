#include "enforcer/workdir/host_path.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <deque>

namespace cocoon::enforcer {
namespace {

constexpr int kMaxLinks = 40;  // as the kernel's MAXSYMLINKS

std::deque<std::string> Components(const std::string& path) {
  std::deque<std::string> parts;
  for (size_t i = 0; i < path.size();) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) parts.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return parts;
}

}  // namespace

Result<std::string> ResolveHostPath(const std::string& path) {
  if (geteuid() != 0) {
    char resolved[PATH_MAX];
    if (realpath(path.c_str(), resolved) == nullptr) return ErrnoError(path);
    return std::string(resolved);
  }
  std::string absolute = path;
  if (path.empty() || path[0] != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof cwd) == nullptr) return ErrnoError("the current directory");
    absolute = std::string(cwd) + "/" + path;
  }
  std::deque<std::string> todo = Components(absolute);
  std::string resolved;  // "" is "/"
  int links = 0;
  while (!todo.empty()) {
    std::string part = std::move(todo.front());
    todo.pop_front();
    if (part == ".") continue;
    if (part == "..") {
      resolved.erase(resolved.empty() ? 0 : resolved.rfind('/'));
      continue;
    }
    std::string candidate = resolved + "/" + part;
    struct stat st {};
    if (lstat(candidate.c_str(), &st) != 0) return ErrnoError(path);
    if (!S_ISLNK(st.st_mode)) {
      if (!todo.empty() && !S_ISDIR(st.st_mode)) return ErrnoError(path, ENOTDIR);
      resolved = std::move(candidate);
      continue;
    }
    if (st.st_uid != 0) {
      return FailedPreconditionError(path + " goes through " + candidate + ", a symlink owned by uid " +
                                     std::to_string(st.st_uid) +
                                     ": as root, cocoon follows only root's symlinks (another user could point "
                                     "this one anywhere). Give the path it leads to");
    }
    if (++links > kMaxLinks) return ErrnoError(path, ELOOP);
    char target[PATH_MAX];
    ssize_t n = readlink(candidate.c_str(), target, sizeof target - 1);
    if (n < 0) return ErrnoError(path);
    std::string text(target, static_cast<size_t>(n));
    std::deque<std::string> more = Components(text);
    todo.insert(todo.begin(), more.begin(), more.end());
    if (!text.empty() && text[0] == '/') resolved.clear();
  }
  return resolved.empty() ? std::string("/") : resolved;
}

Result<int> OpenResolvedPath(const std::string& resolved, int flags) {
  struct open_how how {};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  how.resolve = RESOLVE_NO_SYMLINKS;
  int fd = static_cast<int>(syscall(SYS_openat2, AT_FDCWD, resolved.c_str(), &how, sizeof how));
  if (fd < 0) {
    return ErrnoError(errno == ELOOP ? resolved + " (a symlink appeared on the way since it was resolved)" : resolved);
  }
  return fd;
}

}  // namespace cocoon::enforcer
