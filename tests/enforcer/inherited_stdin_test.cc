// HowToPassStdin (inherited_stdin.h): only a pipe, /dev/null or a connected
// AF_UNIX stream reaches a sandbox as it is; files and devices go through a
// relay; directories, O_PATH fds and host sockets (when the sandbox has a
// network namespace of its own) are refused, and StartedChild refuses to
// start with them.
#include "enforcer/inherited_stdin.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "enforcer/started_child.h"
#include "enforcer/stdin_relay.h"

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

bool PassesAsItIs(int fd, bool own_network) {
  auto how = HowToPassStdin(fd, own_network);
  return how.ok() && *how == StdinHandling::kPassThrough;
}

bool IsRelayed(int fd, bool own_network) {
  auto how = HowToPassStdin(fd, own_network);
  return how.ok() && *how == StdinHandling::kRelay;
}

TEST(InheritedStdinTest, PipesDevNullAndConnectedUnixStreamsPassAsTheyAre) {
  FdPair pipe_fds, stream, seqpacket;
  ASSERT_EQ(pipe(pipe_fds.fds), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, stream.fds), 0);
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, seqpacket.fds), 0);
  int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(null, 0);
  for (int fd : {pipe_fds.fds[0], stream.fds[0], seqpacket.fds[0], null}) {
    EXPECT_TRUE(PassesAsItIs(fd, true)) << fd;
    EXPECT_TRUE(PassesAsItIs(fd, false)) << fd;
  }
  close(null);
}

TEST(InheritedStdinTest, FilesNamedFifosAndDevicesAreRelayed) {
  char dir[] = "/tmp/cocoon-stdin-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  std::string file = std::string(dir) + "/file", fifo = std::string(dir) + "/fifo";
  int regular = open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  ASSERT_GE(regular, 0);
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  int named = open(fifo.c_str(), O_RDWR | O_CLOEXEC);  // RDWR: no wait for a writer
  int zero = open("/dev/zero", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(named, 0);
  ASSERT_GE(zero, 0);
  for (int fd : {regular, named, zero}) EXPECT_TRUE(IsRelayed(fd, true)) << fd;
  close(regular);
  close(named);
  close(zero);
  unlink(file.c_str());
  unlink(fifo.c_str());
  rmdir(dir);
}

TEST(InheritedStdinTest, DirectoriesAndOPathDescriptorsAreRefused) {
  int directory = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int path = open("/etc/passwd", O_PATH | O_CLOEXEC);
  ASSERT_GE(directory, 0);
  ASSERT_GE(path, 0);
  for (int fd : {directory, path}) {
    for (bool own_network : {true, false}) {
      auto how = HowToPassStdin(fd, own_network);
      ASSERT_FALSE(how.ok()) << fd;
      EXPECT_EQ(how.status().code(), ErrorCode::kFailedPrecondition);
      EXPECT_NE(how.status().message().find("could open the host's files"), std::string::npos);
    }
  }
  close(directory);
  close(path);
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
    auto refused = HowToPassStdin(fd, true);
    ASSERT_FALSE(refused.ok()) << fd;
    EXPECT_EQ(refused.status().code(), ErrorCode::kFailedPrecondition) << fd;
    EXPECT_NE(refused.status().message().find("pipe or a file"), std::string::npos) << refused.status().message();
    // With the network on, the sandbox shares the host's namespace anyway.
    EXPECT_TRUE(PassesAsItIs(fd, false)) << fd;
  }
  EXPECT_NE(HowToPassStdin(tcp, true).status().message().find("AF_INET stream"), std::string::npos);
  close(tcp);
  close(udp);
  close(unconnected_unix);
}

// A relay reads the caller's stdin only once its child is adopted: a child
// started early and then dropped must leave the file offset where it was,
// for the child that runs (their relays share the caller's open file).
TEST(InheritedStdinTest, ARelayReadsNothingUntilItsChildIsAdopted) {
  char path[] = "/tmp/cocoon-relay-XXXXXX";
  int file = mkstemp(path);
  ASSERT_GE(file, 0);
  ASSERT_EQ(write(file, "input\n", 6), 6);
  ASSERT_EQ(lseek(file, 0, SEEK_SET), 0);
  {
    OwnedFd sandbox_end;
    auto dropped = StdinRelay::Start(file, &sandbox_end);
    ASSERT_TRUE(dropped.ok()) << dropped.status().ToString();
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }  // destroyed without Go()
  EXPECT_EQ(lseek(file, 0, SEEK_CUR), 0) << "a relay that was never adopted read the caller's stdin";
  OwnedFd sandbox_end;
  auto used = StdinRelay::Start(file, &sandbox_end);
  ASSERT_TRUE(used.ok());
  (*used)->Go();
  char got[16] = {};
  ASSERT_EQ(read(sandbox_end.get(), got, sizeof got), 6);
  EXPECT_EQ(std::string(got, 6), "input\n");
  close(file);
  unlink(path);
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
