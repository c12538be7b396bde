// The sandbox child's side of fd passing (enforcer/fd_passing.h): raw
// system calls only, no allocation, for the child between clone and execve.
// Kept apart from the supervisor's side so that the child-code symbol check
// (tests/enforcer/child_code_symbols.sh) covers this file.
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

#include "enforcer/fd_passing.h"
#include "enforcer/raw_syscall.h"

namespace cocoon::enforcer {
int SendFds(int sock, char tag, const int* fds, size_t count) noexcept {
  if (count == 0 || count > kMaxPassedFds) return EINVAL;
  struct iovec iov = {&tag, 1};
  alignas(struct cmsghdr) char control[kFdPassingControlBytes];
  memset(control, 0, sizeof control);
  struct msghdr message {};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = CMSG_SPACE(count * sizeof(int));
  struct cmsghdr* header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(count * sizeof(int));
  memcpy(CMSG_DATA(header), fds, count * sizeof(int));
  // Raw: the sandbox child sends with this (enforcer/raw_syscall.h).
  long sent = sys::CallRestarting(SYS_sendmsg, sock, &message, MSG_NOSIGNAL);
  if (sent == 1) return 0;
  return sent < 0 ? sys::ErrorOf(sent) : EPIPE;
}

int ReceiveOneFd(int sock, char tag, int* fd) noexcept {
  char byte = 0;
  struct iovec iov = {&byte, 1};
  alignas(struct cmsghdr) char control[kFdPassingControlBytes];
  struct msghdr message {};
  message.msg_iov = &iov;
  message.msg_iovlen = 1;
  message.msg_control = control;
  message.msg_controllen = sizeof control;
  long n = sys::CallRestarting(SYS_recvmsg, sock, &message, MSG_CMSG_CLOEXEC);
  if (n < 0) return sys::ErrorOf(n);
  if (n == 0) return EPIPE;
  // Only the first header is read: CMSG_NXTHDR may be an out-of-line libc
  // call (__cmsg_nxthdr), and the kernel gathers every fd of one message
  // into a single SCM_RIGHTS header anyway (net/core/scm.c, scm_detach_fds);
  // without SO_PASSCRED no other header comes.
  int received[kMaxPassedFds];
  size_t count = 0;
  struct cmsghdr* header = CMSG_FIRSTHDR(&message);
  if (header != nullptr && header->cmsg_level == SOL_SOCKET && header->cmsg_type == SCM_RIGHTS &&
      header->cmsg_len >= CMSG_LEN(0)) {
    size_t fds = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < fds && count < kMaxPassedFds; ++i) {
      memcpy(&received[count++], CMSG_DATA(header) + i * sizeof(int), sizeof(int));
    }
  }
  if (byte != tag || count != 1 || (message.msg_flags & MSG_CTRUNC) != 0) {
    for (size_t i = 0; i < count; ++i) sys::Call(SYS_close, received[i]);
    return EPROTO;
  }
  *fd = received[0];
  return 0;
}

}  // namespace cocoon::enforcer
