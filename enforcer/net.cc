// Child side, network off: the new network namespace has only a "lo" that is
// down (network_namespaces(7)). Bringing it up gives the sandbox a working
// 127.0.0.1 for its own servers and nothing else; there is no route out.
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "enforcer/child_steps.h"

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

}  // namespace cocoon::enforcer::child
