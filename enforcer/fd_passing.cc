#include "enforcer/fd_passing.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "enforcer/raw_syscall.h"

namespace cocoon::enforcer {
Result<std::vector<int>> ReceiveFds(int sock, size_t count, std::string_view what) {
  if (count == 0 || count > kMaxPassedFds) return InvalidArgumentError("ReceiveFds: bad fd count");
  char byte = 0;
  struct iovec iov = {&byte, 1};
  alignas(struct cmsghdr) char control[kFdPassingControlBytes] = {};
  struct msghdr message {};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = recvmsg(sock, &message, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  if (n < 0) return ErrnoError("receiving " + std::string(what) + " from the sandbox");
  if (n == 0) return FailedPreconditionError("the sandbox exited before sending " + std::string(what));
  std::vector<int> received;
  for (struct cmsghdr* header = CMSG_FIRSTHDR(&message); header != nullptr; header = CMSG_NXTHDR(&message, header)) {
    if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
    size_t fds = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < fds; ++i) {
      int fd;
      memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof(int));
      received.push_back(fd);
    }
  }
  if (received.size() != count || (message.msg_flags & MSG_CTRUNC) != 0) {
    for (int fd : received) close(fd);
    return InternalError("malformed handoff of " + std::string(what) + " from the sandbox");
  }
  return received;
}

}  // namespace cocoon::enforcer
