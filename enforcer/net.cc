// Child side, network off or allow-list: the new network namespace has only
// a "lo" that is down (network_namespaces(7)). Bringing it up gives the
// sandbox a working 127.0.0.1 for its own servers and nothing else; there is
// no route out. Allow-lists add the broker's listener (SendBrokerListener).
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "enforcer/child_steps.h"
#include "enforcer/fd_passing.h"

namespace cocoon::enforcer::child {

bool BringUpLoopback(ChildError* error) noexcept {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Fail(error, ChildStep::kLoopback, errno);
  struct ifreq request {};
  memcpy(request.ifr_name, "lo", 3);
  if (ioctl(fd, SIOCGIFFLAGS, &request) != 0) {
    int err = errno;
    close(fd);
    return Fail(error, ChildStep::kLoopback, err);
  }
  request.ifr_flags |= IFF_UP | IFF_RUNNING;
  if (ioctl(fd, SIOCSIFFLAGS, &request) != 0) {
    int err = errno;
    close(fd);
    return Fail(error, ChildStep::kLoopback, err);
  }
  close(fd);
  return true;
}

// The listener the connect broker (net_broker.h) connects the sandbox's
// sockets to. It must be created here, by a task inside the namespace: a
// socket belongs to the network namespace of its creator for life
// (network_namespaces(7)), so the parent could not make one for us. It is
// sent with SCM_RIGHTS (unix(7)) and closed here; the parent's copy is the
// only one left, and close_range later drops the socketpair end.
bool SendBrokerListener(const ChildSpec& spec, ChildError* error) noexcept {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
  if (fd < 0) return Fail(error, ChildStep::kBrokerListener, errno);
  struct sockaddr_in addr {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0 || listen(fd, 64) != 0) {
    int err = errno;
    close(fd);
    return Fail(error, ChildStep::kBrokerListener, err);
  }
  int err = SendFds(spec.broker_sock, 'L', &fd, 1);
  close(fd);
  close(spec.broker_sock);
  return err == 0 || Fail(error, ChildStep::kBrokerListener, err);
}

}  // namespace cocoon::enforcer::child
