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
  long fd = sys::Call(SYS_socket, AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (!Succeeded(fd, error, ChildStep::kLoopback)) return false;
  struct ifreq request {};
  memcpy(request.ifr_name, "lo", 3);
  long rc = sys::Call(SYS_ioctl, fd, SIOCGIFFLAGS, &request);
  if (rc == 0) {
    request.ifr_flags |= IFF_UP | IFF_RUNNING;
    rc = sys::Call(SYS_ioctl, fd, SIOCSIFFLAGS, &request);
  }
  sys::Call(SYS_close, fd);
  return Succeeded(rc, error, ChildStep::kLoopback);
}

// The listener the connect broker (net_broker.h) connects the sandbox's
// sockets to. It must be created here, by a task inside the namespace: a
// socket belongs to the network namespace of its creator for life
// (network_namespaces(7)), so the parent could not make one for us. It is
// sent with SCM_RIGHTS (unix(7)) and closed here; the parent's copy is the
// only one left, and close_range later drops the socketpair end.
bool SendBrokerListener(const ChildSpec& spec, ChildError* error) noexcept {
  long listener = sys::Call(SYS_socket, AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_TCP);
  if (!Succeeded(listener, error, ChildStep::kBrokerListener)) return false;
  int fd = static_cast<int>(listener);
  struct sockaddr_in addr {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  long rc = sys::Call(SYS_bind, fd, &addr, sizeof(addr));
  if (rc == 0) rc = sys::Call(SYS_listen, fd, 64);
  int err = rc == 0 ? SendFds(spec.broker_sock, 'L', &fd, 1) : sys::ErrorOf(rc);
  sys::Call(SYS_close, fd);
  sys::Call(SYS_close, spec.broker_sock);
  return err == 0 || Fail(error, ChildStep::kBrokerListener, err);
}

}  // namespace cocoon::enforcer::child
