// poll(2) on one fd without waiting: "has it happened yet?" checks on fds
// whose readiness means something (a signalfd with a pending SIGINT, a
// pidfd of a child that exited, a pipe whose writer is gone, a
// /proc/self/mountinfo whose mount table changed).
#pragma once

#include <poll.h>

#include <cerrno>

namespace cocoon::enforcer {

// The events `fd` reports now among `events`, plus POLLERR/POLLHUP/POLLNVAL;
// 0 when none (or fd < 0). A poll that fails (ENOMEM) reports POLLERR, so
// that a caller testing "anything?" errs on the side of "something".
inline short PollNow(int fd, short events) {
  if (fd < 0) return 0;
  struct pollfd p {fd, events, 0};
  int ready;
  do {
    ready = poll(&p, 1, 0);
  } while (ready < 0 && errno == EINTR);
  if (ready < 0) return POLLERR;
  return ready > 0 ? p.revents : 0;
}

// True if `fd` (>= 0) is readable now.
inline bool FdReadableNow(int fd) { return (PollNow(fd, POLLIN) & POLLIN) != 0; }

}  // namespace cocoon::enforcer
