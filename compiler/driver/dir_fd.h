// Directory-relative file access for compiled dirs, shared by the writer
// (compiled_dir.cc) and the loader (compiled_dir_load.cc): every path
// component is opened with O_NOFOLLOW from the directory's fd, so a symlink
// planted inside a compiled dir can redirect neither.
#pragma once

#include <unistd.h>

#include <string>
#include <string_view>

#include "compiler/common/status.h"

namespace cocoon::driver::internal {

// Owns one file descriptor.
class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      if (fd_ >= 0) close(fd_);
      fd_ = other.fd_;
      other.fd_ = -1;
    }
    return *this;
  }
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

enum class CreateDirs { kNo, kYes };

// Opens (creating when asked) each directory of the '/'-separated relative
// `path` below `root_fd`, without following symlinks; `leaf` gets the last
// component.
Result<Fd> OpenParentDir(int root_fd, std::string_view path, CreateDirs create, std::string& leaf);

}  // namespace cocoon::driver::internal
