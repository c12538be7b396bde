// Passing file descriptors between the supervisor and the sandbox's child
// over a unix socketpair: one byte of data carrying one SCM_RIGHTS message
// (unix(7)). The child sends (its listener inside the network namespace, the
// staged work dir's mounts); the supervisor receives.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <string_view>
#include <vector>

#include "compiler/common/status.h"

namespace cocoon::enforcer {

// The most fds one message carries here.
inline constexpr size_t kMaxPassedFds = 4;
// Room for the largest message's control part; CMSG_SPACE is a constant expression.
inline constexpr size_t kFdPassingControlBytes = CMSG_SPACE(kMaxPassedFds * sizeof(int));

// Sends `count` (1..kMaxPassedFds) fds and the byte `tag` in one message.
// Raw system calls, allocation-free and restarted on EINTR, for the child
// between clone and execve (enforcer/raw_syscall.h). MSG_NOSIGNAL: a dead receiver is EPIPE, not a
// SIGPIPE. Returns 0 or an errno (EPIPE for a short send).
int SendFds(int sock, char tag, const int* fds, size_t count) noexcept;

// The child's side of a handoff the other way: receives one fd sent by
// SendFds with the byte `tag`, close-on-exec, into *fd. Raw system calls,
// allocation-free, for the child between clone and execve. Returns 0, or
// an errno (EPIPE: the peer closed first; EPROTO: another tag, no fd or
// more than one, in which case any fds that came are closed).
int ReceiveOneFd(int sock, char tag, int* fd) noexcept;

// Receives exactly `count` (1..kMaxPassedFds) fds sent by SendFds, close-on-
// exec (MSG_CMSG_CLOEXEC). `what` names them in errors: the peer closing
// first is FailedPrecondition ("the sandbox exited before sending <what>"),
// a message with the wrong count, type or a truncated control part is
// Internal, and any fds such a message did carry are closed.
Result<std::vector<int>> ReceiveFds(int sock, size_t count, std::string_view what);

}  // namespace cocoon::enforcer
