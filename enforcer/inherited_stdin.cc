#include "enforcer/inherited_stdin.h"

#include <sys/socket.h>
#include <sys/stat.h>

#include <string>

namespace cocoon::enforcer {
namespace {

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

}  // namespace

Status CheckInheritedStdin(int fd, bool sandbox_has_own_network) {
  struct stat st;
  if (fstat(fd, &st) != 0) return ErrnoError("stdin");
  if (!S_ISSOCK(st.st_mode) || !sandbox_has_own_network) return Status::Ok();
  int domain = -1, type = -1;
  socklen_t length = sizeof(domain);
  if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0) return ErrnoError("stdin: SO_DOMAIN");
  length = sizeof(type);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0) return ErrnoError("stdin: SO_TYPE");
  struct sockaddr_storage peer {};
  socklen_t peer_length = sizeof(peer);
  bool connected = getpeername(fd, reinterpret_cast<struct sockaddr*>(&peer), &peer_length) == 0;
  if (domain == AF_UNIX && (type == SOCK_STREAM || type == SOCK_SEQPACKET) && connected) return Status::Ok();
  std::string kind = DomainName(domain) + (type == SOCK_STREAM ? " stream" : type == SOCK_DGRAM ? " datagram" : "") +
                     (connected ? "" : ", unconnected");
  return FailedPreconditionError(
      "stdin is a socket (" + kind + ") of the host's network namespace, and the sandbox has a network namespace of "
      "its own (network off or an allow-list): with that socket it could connect or send in the host's namespace. "
      "Give the command its input through a pipe or a file (`... | cocoon ...`, `< FILE`), or run it with the "
      "network on");
}

}  // namespace cocoon::enforcer
