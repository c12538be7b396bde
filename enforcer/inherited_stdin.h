// The caller's stdin, handed to the sandbox as its fd 0 (StdinMode::kInherit).
//
// A socket keeps the network namespace it was created in. A sandbox given a
// socket of the host's namespace could disconnect it (connect with
// AF_UNSPEC) and connect it again, or sendto() on it, and the kernel would
// route that in the host's namespace: host loopback services and the host's
// abstract unix sockets would be reachable despite `network off` or an
// allow-list, whose barrier is the sandbox's own namespace (docs/security.md).
// So when the sandbox gets its own network namespace, a socket stdin is
// passed only if it is a connected AF_UNIX stream or seqpacket socket (what
// libuv, and so Node, gives a child for its stdio): such a socket can be
// neither reconnected nor used to address datagrams.
#pragma once

#include "compiler/common/status.h"

namespace cocoon::enforcer {

// Ok, or why `fd` must not become the stdin of a sandbox with (or without)
// its own network namespace.
Status CheckInheritedStdin(int fd, bool sandbox_has_own_network);

}  // namespace cocoon::enforcer
