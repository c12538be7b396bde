// An owned file descriptor: closed on destruction and on Reset, movable, not
// copyable. The one such class of the enforcer (the launch's pipes and
// pidfd, started_child.h; the work dir's no-follow walks, workdir/tree_ops.h).
#pragma once

#include <unistd.h>

namespace cocoon::enforcer {

class OwnedFd {
 public:
  OwnedFd() = default;
  explicit OwnedFd(int fd) : fd_(fd) {}
  OwnedFd(OwnedFd&& other) noexcept : fd_(other.release()) {}
  OwnedFd& operator=(OwnedFd&& other) noexcept {
    if (this != &other) Reset(other.release());
    return *this;
  }
  ~OwnedFd() { Reset(); }
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }
  // For an API that writes a new fd into an int (clone3's pidfd field): only
  // on an empty OwnedFd.
  int* out() { return &fd_; }

 private:
  int fd_ = -1;
};

}  // namespace cocoon::enforcer
