// Feeds the caller's stdin to a sandbox through a pipe of our own, for a
// stdin the sandbox must not hold itself (inherited_stdin.h: a regular file,
// a named FIFO, a device). Given the caller's open file, a sandbox could
// reach the host through it: /proc/self/fd/0 reopens the file, fchmod,
// futimens and fsetxattr change it on the host, and a device may be opened
// read-write. A pipe carries the bytes and nothing else.
//
// A thread copies `source` to the pipe in 64 KiB steps, waiting with poll(2)
// on both ends and on a stop eventfd, so the destructor (or the sandbox
// closing its end, which makes the pipe report POLLERR) ends it at once;
// EOF of the source closes the pipe, so the sandbox sees EOF too. The source
// is the caller's open file, read at its offset, as the sandbox would have.
#pragma once

#include <memory>
#include <thread>

#include "compiler/common/status.h"
#include "enforcer/owned_fd.h"

namespace cocoon::enforcer {

class StdinRelay {
 public:
  // Starts copying a duplicate of `source`; `*sandbox_end` receives the
  // pipe's read end (close-on-exec) for the child's fd 0.
  // Nothing is read before Go(): a child started early and then not used
  // (StartedChild::Fits) must not have taken bytes of the caller's stdin,
  // whose file offset the next child's relay shares.
  static Result<std::unique_ptr<StdinRelay>> Start(int source, OwnedFd* sandbox_end);
  // The child was adopted by a run: start copying.
  void Go();
  ~StdinRelay();  // stops and joins the thread
  StdinRelay(const StdinRelay&) = delete;
  StdinRelay& operator=(const StdinRelay&) = delete;

 private:
  StdinRelay(OwnedFd source, OwnedFd pipe_write, OwnedFd go, OwnedFd stop);
  void Copy();

  OwnedFd source_, pipe_write_, go_, stop_;
  std::thread thread_;
};

}  // namespace cocoon::enforcer
