#include "enforcer/inherited_stdin.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include <string>

namespace cocoon::enforcer {
namespace {

constexpr long kPipeFsMagic = 0x50495045;  // PIPEFS_MAGIC, linux/magic.h: an anonymous pipe

std::string DomainName(int domain) {
  switch (domain) {
    case AF_UNIX: return "AF_UNIX";
    case AF_INET: return "AF_INET";
    case AF_INET6: return "AF_INET6";
    case AF_NETLINK: return "AF_NETLINK";
    case AF_PACKET: return "AF_PACKET";
    default: return "family " + std::to_string(domain);
  }
}

constexpr char kUseAPipe[] = "Give the command its input through a pipe or a file (`... | cocoon ...`, `< FILE`)";

Result<StdinHandling> ForSocket(int fd, bool sandbox_has_own_network) {
  if (!sandbox_has_own_network) return StdinHandling::kPassThrough;
  int domain = -1, type = -1;
  socklen_t length = sizeof(domain);
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0) return ErrnoError("stdin: SO_DOMAIN");
  length = sizeof(type);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0) return ErrnoError("stdin: SO_TYPE");
  struct sockaddr_storage peer {};
  socklen_t peer_length = sizeof(peer);
  bool connected = getpeername(fd, reinterpret_cast<struct sockaddr*>(&peer), &peer_length) == 0;
  if (domain == AF_UNIX && (type == SOCK_STREAM || type == SOCK_SEQPACKET) && connected) {
    return StdinHandling::kPassThrough;
  }
  std::string kind = DomainName(domain) + (type == SOCK_STREAM ? " stream" : type == SOCK_DGRAM ? " datagram" : "") +
                     (connected ? "" : ", unconnected");
  return FailedPreconditionError("stdin is a socket (" + kind +
                                 ") of the host's network namespace, and the sandbox has a network namespace of "
                                 "its own (network off or an allow-list): with that socket it could connect or "
                                 "send in the host's namespace. " + kUseAPipe + ", or run it with the network on");
}

}  // namespace

Result<StdinHandling> HowToPassStdin(int fd, bool sandbox_has_own_network) {
  struct stat st;
  if (fstat(fd, &st) != 0) return ErrnoError("stdin");
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0) return ErrnoError("stdin");
  if ((flags & O_PATH) != 0 || S_ISDIR(st.st_mode)) {
    return FailedPreconditionError(std::string("stdin is ") + (S_ISDIR(st.st_mode) ? "a directory" : "an O_PATH descriptor") +
                                   ": the sandbox could open the host's files through it. " + kUseAPipe);
  }
  if (S_ISSOCK(st.st_mode)) return ForSocket(fd, sandbox_has_own_network);
  if (S_ISFIFO(st.st_mode)) {
    struct statfs fs {};
    bool anonymous = fstatfs(fd, &fs) == 0 && fs.f_type == kPipeFsMagic;
    return anonymous ? StdinHandling::kPassThrough : StdinHandling::kRelay;  // a named FIFO is a host file
  }
  if (S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3) return StdinHandling::kPassThrough;
  return StdinHandling::kRelay;  // a regular file, a device
}

}  // namespace cocoon::enforcer
