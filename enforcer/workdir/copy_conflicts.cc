#include "enforcer/workdir/copy_conflicts.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "enforcer/workdir/host_path.h"
#include "enforcer/workdir/tree_ops.h"

namespace cocoon::enforcer {
namespace {

using tree::Fd;

bool SameBytes(int a, int b) {
  char left[65536], right[65536];
  for (;;) {
    ssize_t n = read(a, left, sizeof left);
    if (n < 0) return false;
    size_t got = 0;
    while (got < static_cast<size_t>(n)) {
      ssize_t m = read(b, right + got, static_cast<size_t>(n) - got);
      if (m <= 0) return false;
      got += static_cast<size_t>(m);
    }
    if (n == 0) return read(b, right, 1) == 0;
    if (memcmp(left, right, static_cast<size_t>(n)) != 0) return false;
  }
}

// "" when `source` (an open file or directory) may land at `name` under
// `dir_fd` without replacing anything of other content; else the relative
// path of the first entry it would replace.
std::string FirstReplaced(int source_fd, int dir_fd, const std::string& name, const std::string& shown) {
  struct stat theirs {};
  if (fstatat(dir_fd, name.c_str(), &theirs, AT_SYMLINK_NOFOLLOW) != 0) return "";  // nothing there
  struct stat ours {};
  if (fstat(source_fd, &ours) != 0) return shown;
  if (S_ISREG(ours.st_mode)) {
    if (!S_ISREG(theirs.st_mode) || theirs.st_size != ours.st_size) return shown;
    Fd existing(openat(dir_fd, name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    Fd copy(dup(source_fd));
    if (existing.get() < 0 || copy.get() < 0 || lseek(copy.get(), 0, SEEK_SET) != 0) return shown;
    return SameBytes(copy.get(), existing.get()) ? "" : shown;
  }
  if (!S_ISDIR(theirs.st_mode)) return shown;
  Fd existing(openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  Fd listing(openat(source_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (existing.get() < 0 || listing.get() < 0) return shown;
  DIR* entries = fdopendir(listing.get());
  if (entries == nullptr) return shown;
  listing.release();
  std::string replaced;
  while (struct dirent* entry = readdir(entries)) {
    std::string child = entry->d_name;
    if (child == "." || child == "..") continue;
    Fd child_fd(openat(dirfd(entries), child.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    struct stat st {};
    if (child_fd.get() < 0 || fstat(child_fd.get(), &st) != 0 || (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))) {
      // A symlink or special file in the source: copied as it is, so any
      // host entry of that name is replaced by something else.
      struct stat there {};
      if (fstatat(existing.get(), child.c_str(), &there, AT_SYMLINK_NOFOLLOW) == 0) replaced = shown + "/" + child;
    } else {
      replaced = FirstReplaced(child_fd.get(), existing.get(), child, shown + "/" + child);
    }
    if (!replaced.empty()) break;
  }
  closedir(entries);
  return replaced;
}

bool IsSameOrUnder(const std::string& path, const std::string& dir) {
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

}  // namespace

Status CheckCopiesAgainstWorkDir(const std::vector<ir::Copy>& copies, const std::string& host_dir, int host_dir_fd) {
  for (size_t i = 0; i < copies.size(); ++i) {
    const ir::Copy& copy = copies[i];
    for (size_t j = 0; j < i; ++j) {
      const std::string& other = copies[j].destination;
      if (IsSameOrUnder(copy.destination, other) || IsSameOrUnder(other, copy.destination)) {
        return InvalidArgumentError("--copy " + copy.source + " and --copy " + copies[j].source + " both land at " +
                                    (copy.destination.size() < other.size() ? copy.destination : other) +
                                    " in the work dir; copy one of them under another name");
      }
    }
    auto source = ResolveHostPath(copy.source);
    if (source.ok() && IsSameOrUnder(host_dir, *source)) {
      return InvalidArgumentError("--copy " + copy.source + " is the work dir or holds it; its files are in the "
                                  "sandbox's work dir already");
    }
    Fd source_fd(open(copy.source.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK));
    if (source_fd.get() < 0) return ErrnoError("--copy source " + copy.source);
    // Destinations are relative paths without ".." (CheckCopies): walk to
    // the parent without following links; a parent the host dir lacks means
    // nothing there to replace.
    Fd parent(dup(host_dir_fd));
    std::string leaf = copy.destination;
    for (size_t slash; parent.get() >= 0 && (slash = leaf.find('/')) != std::string::npos;) {
      parent = Fd(openat(parent.get(), leaf.substr(0, slash).c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      leaf.erase(0, slash + 1);
    }
    if (parent.get() < 0) continue;
    std::string replaced = FirstReplaced(source_fd.get(), parent.get(), leaf, copy.destination);
    if (!replaced.empty()) {
      return InvalidArgumentError("--copy " + copy.source + " would replace " + host_dir + "/" + replaced +
                                  ", which the work dir holds with other content (copies are committed back "
                                  "with the results); copy it under another name or move the original");
    }
  }
  return Status::Ok();
}

}  // namespace cocoon::enforcer
