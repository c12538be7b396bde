// The caller's stdin, handed to the sandbox as its fd 0 (StdinMode::kInherit).
//
// Whatever the sandbox gets as fd 0 is the caller's open file, and a file
// brings more than its bytes:
//  - a directory or an O_PATH descriptor is a way into the host's tree
//    (openat relative to it, /proc/self/fd/0/...), past the mount namespace;
//  - a regular file, a named FIFO or a device can be reopened through
//    /proc/self/fd/0 and changed on the host (fchmod, futimens, fsetxattr:
//    rootless, the sandbox's uid owns the caller's files), and a device may
//    be open for writing;
//  - a socket keeps the network namespace it was created in: with a socket
//    of the host's namespace, a sandbox could disconnect it (connect with
//    AF_UNSPEC) and connect it again, or sendto() on it, and the kernel would
//    route that in the host's namespace, reaching host loopback services and
//    the host's abstract unix sockets despite `network off` or an allow-list.
// So only what carries bytes and nothing else is passed as it is: an
// anonymous pipe, /dev/null, a connected AF_UNIX stream or seqpacket socket
// (what libuv, and so Node, gives a child for its stdio; it can be neither
// reconnected nor used to address datagrams), and, when the sandbox shares
// the host's network anyway, any socket. Regular files, named FIFOs and
// devices are fed through a pipe of cocoon's (stdin_relay.h); a directory, an
// O_PATH descriptor or any other socket is refused with a clear message.
#pragma once

#include "compiler/common/status.h"

namespace cocoon::enforcer {

enum class StdinHandling {
  kPassThrough,  // the sandbox's fd 0 is the caller's
  kRelay,        // the sandbox reads a pipe cocoon fills from the caller's
};

// How `fd` may become the stdin of a sandbox with (or without) a network
// namespace of its own, or why it must not.
Result<StdinHandling> HowToPassStdin(int fd, bool sandbox_has_own_network);

}  // namespace cocoon::enforcer
