#include "compiler/common/file_replace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "compiler/common/temp_name.h"

namespace cocoon {
namespace {

Status WriteAll(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("write " + path);
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

}  // namespace

Status ReplaceFileContents(const std::string& path, std::string_view bytes) {
  // Renaming over a symlink would replace the link with a regular file and
  // leave its target as it was: write beside the target instead.
  char resolved[PATH_MAX];
  if (realpath(path.c_str(), resolved) == nullptr) return ErrnoError("realpath " + path);
  const std::string target = resolved;
  struct stat st;
  if (stat(target.c_str(), &st) != 0) return ErrnoError("stat " + target);
  const std::string temp = target + UniqueTempSuffix();
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError("open " + temp);
  Status status = WriteAll(fd, bytes, temp);
  // The temporary was created 0600 (umask aside); give it the file's mode
  // before it takes the file's name.
  if (status.ok() && fchmod(fd, st.st_mode & 07777) != 0) status = ErrnoError("fchmod " + temp);
  if (status.ok() && fsync(fd) != 0) status = ErrnoError("fsync " + temp);
  if (close(fd) != 0 && status.ok()) status = ErrnoError("close " + temp);
  if (status.ok() && rename(temp.c_str(), target.c_str()) != 0) status = ErrnoError("rename " + temp + " to " + target);
  if (!status.ok()) unlink(temp.c_str());
  return status;
}

}  // namespace cocoon
