// CheckInheritedStdin (inherited_stdin.h): a socket of the host's network
// namespace never becomes the stdin of a sandbox with a namespace of its own,
// except a connected AF_UNIX stream or seqpacket socket; and StartedChild
// refuses to start with such a stdin.
#include "enforcer/inherited_stdin.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "enforcer/started_child.h"

namespace cocoon::enforcer {
namespace {

struct FdPair {
  int fds[2] = {-1, -1};
  ~FdPair() {
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  }
};

TEST(InheritedStdinTest, PipesFilesAndConnectedUnixStreamsPass) {
  FdPair pipe_fds, stream, seqpacket;
  ASSERT_EQ(pipe(pipe_fds.fds), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, stream.fds), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, seqpacket.fds), 0);
  for (int fd : {pipe_fds.fds[0], stream.fds[0], seqpacket.fds[0]}) {
    EXPECT_TRUE(CheckInheritedStdin(fd, true).ok()) << fd;
    EXPECT_TRUE(CheckInheritedStdin(fd, false).ok()) << fd;
  }
}

TEST(InheritedStdinTest, SocketsThatCouldReachTheHostNetworkAreRefused) {
  FdPair datagram;
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_DGRAM, 0, datagram.fds), 0);
  int tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int udp = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  int unconnected_unix = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(tcp, 0);
  ASSERT_GE(udp, 0);
  ASSERT_GE(unconnected_unix, 0);
  for (int fd : {datagram.fds[0], tcp, udp, unconnected_unix}) {
    Status refused = CheckInheritedStdin(fd, true);
    EXPECT_EQ(refused.code(), ErrorCode::kFailedPrecondition) << fd;
    EXPECT_NE(refused.message().find("pipe or a file"), std::string::npos) << refused.message();
    // With the network on, the sandbox shares the host's namespace anyway.
    EXPECT_TRUE(CheckInheritedStdin(fd, false).ok()) << fd;
  }
  EXPECT_NE(CheckInheritedStdin(tcp, true).message().find("AF_INET stream"), std::string::npos);
  close(tcp);
  close(udp);
  close(unconnected_unix);
}

TEST(InheritedStdinTest, AStartedChildRefusesAHostSocketAsItsStdin) {
  int saved = dup(0);
  ASSERT_GE(saved, 0);
  int tcp = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(tcp, 0);
  ASSERT_EQ(dup2(tcp, 0), 0);
  close(tcp);
  ChildStartOptions options;
  options.new_network = true;
  options.stdin_mode = StdinMode::kInherit;
  options.share_memory = false;
  auto refused = StartedChild::Start(options);
  options.new_network = false;  // network on: the host's namespace is the sandbox's anyway
  auto started = StartedChild::Start(options);
  ASSERT_EQ(dup2(saved, 0), 0);
  close(saved);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_TRUE(started.ok()) << started.status().message();
}

}  // namespace
}  // namespace cocoon::enforcer
