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

Result<std::string> ResolveHostPath(const std::string& path) { return HostPathResolver().Resolve(path); }

const HostPathResolver::Lookup& HostPathResolver::LookUp(const std::string& candidate) {
  auto [it, inserted] = lookups_.try_emplace(candidate);
  Lookup& lookup = it->second;
  if (!inserted) return lookup;
  if (lstat(candidate.c_str(), &lookup.st) != 0) {
    lookup.error = errno;
    return lookup;
  }
  if (S_ISLNK(lookup.st.st_mode)) {
    char target[PATH_MAX];
    ssize_t n = readlink(candidate.c_str(), target, sizeof target - 1);
    if (n < 0) {
      lookup.error = errno;
      return lookup;
    }
    lookup.link_text.assign(target, static_cast<size_t>(n));
  }
  return lookup;
}

Result<struct stat> HostPathResolver::StatResolved(const std::string& resolved) {
  const Lookup& lookup = LookUp(resolved);
  if (lookup.error != 0) return ErrnoError("stat " + resolved, lookup.error);
  if (S_ISLNK(lookup.st.st_mode)) return ErrnoError("stat " + resolved + " (now a symlink)", ELOOP);
  return lookup.st;
}

std::optional<std::string> HostPathResolver::SymlinkText(const std::string& path) {
  const Lookup& lookup = LookUp(path);
  if (lookup.error != 0 || !S_ISLNK(lookup.st.st_mode)) return std::nullopt;
  return lookup.link_text;
}

// The walk realpath(3) does, one component at a time; as root it also
// refuses a symlink that root does not own (host_path.h says why).
Result<std::string> HostPathResolver::Resolve(const std::string& path) {
  const bool as_root = geteuid() == 0;
  std::string absolute = path;
  if (path.empty() || path[0] != '/') {
    if (path.empty()) return ErrnoError(path, ENOENT);
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
    const Lookup& lookup = LookUp(candidate);
    // lstat saw a symlink and readlink then found none (EINVAL): the entry
    // was swapped between the two calls. Refused, as any change is, but said
    // plainly: "Invalid argument" would send the user looking for a typo.
    if (lookup.error == EINVAL && S_ISLNK(lookup.st.st_mode)) {
      return FailedPreconditionError(path + ": " + candidate +
                                     " was replaced while cocoon checked it (a symlink, then not one): do not "
                                     "change a host path the policy names while a sandbox starts");
    }
    if (lookup.error != 0) return ErrnoError(path, lookup.error);
    if (!S_ISLNK(lookup.st.st_mode)) {
      if (!todo.empty() && !S_ISDIR(lookup.st.st_mode)) return ErrnoError(path, ENOTDIR);
      resolved = std::move(candidate);
      continue;
    }
    if (as_root && lookup.st.st_uid != 0) {
      return FailedPreconditionError(path + " goes through " + candidate + ", a symlink owned by uid " +
                                     std::to_string(lookup.st.st_uid) +
                                     ": as root, cocoon follows only root's symlinks (another user could point "
                                     "this one anywhere). Give the path it leads to");
    }
    if (++links > kMaxLinks) return ErrnoError(path, ELOOP);
    std::deque<std::string> more = Components(lookup.link_text);
    todo.insert(todo.begin(), more.begin(), more.end());
    if (!lookup.link_text.empty() && lookup.link_text[0] == '/') resolved.clear();
  }
  return resolved.empty() ? std::string("/") : resolved;
}

bool ShowsHostProc(const std::string& resolved) {
  return resolved == "/" || resolved == "/proc" || resolved.rfind("/proc/", 0) == 0;
}

Result<int> OpenResolvedPath(const std::string& resolved, int flags, mode_t mode) {
  struct open_how how {};
  how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
  // openat2 refuses a mode without O_CREAT or O_TMPFILE (EINVAL).
  const bool creates = (flags & O_CREAT) != 0 || (flags & O_TMPFILE) == O_TMPFILE;
  how.mode = creates ? mode : 0;
  how.resolve = RESOLVE_NO_SYMLINKS;
  int fd = static_cast<int>(syscall(SYS_openat2, AT_FDCWD, resolved.c_str(), &how, sizeof how));
  if (fd < 0) {
    return ErrnoError(errno == ELOOP ? resolved + " (a symlink appeared on the way since it was resolved)" : resolved);
  }
  return fd;
}

}  // namespace cocoon::enforcer
