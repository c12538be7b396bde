// enforcer/fd_passing: SCM_RIGHTS handoffs between the child and the
// supervisor, over a real socketpair.
#include "enforcer/fd_passing.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace cocoon::enforcer {
namespace {

struct SocketPair {
  SocketPair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0); }
  ~SocketPair() {
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  }
  int fds[2] = {-1, -1};
};

size_t OpenFdCount() {
  size_t count = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (readdir(dir) != nullptr) ++count;
    closedir(dir);
  }
  return count;
}

bool SameFile(int a, int b) {
  struct stat sa {}, sb {};
  return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

TEST(FdPassingTest, PassesSeveralFdsCloseOnExec) {
  SocketPair pair;
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int root_fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(null_fd, 0);
  ASSERT_GE(root_fd, 0);
  const int sent[2] = {null_fd, root_fd};
  ASSERT_EQ(SendFds(pair.fds[0], 'F', sent, 2), 0);
  auto received = ReceiveFds(pair.fds[1], 2, "two fds");
  ASSERT_TRUE(received.ok()) << received.status().ToString();
  ASSERT_EQ(received->size(), 2u);
  EXPECT_TRUE(SameFile((*received)[0], null_fd));
  EXPECT_TRUE(SameFile((*received)[1], root_fd));
  for (int fd : *received) {
    EXPECT_NE(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0) << "received fds must not leak across exec";
    close(fd);
  }
  close(null_fd);
  close(root_fd);
}

TEST(FdPassingTest, WrongCountIsRefusedAndClosesWhatArrived) {
  SocketPair pair;
  size_t before = OpenFdCount();
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(null_fd, 0);
  ASSERT_EQ(SendFds(pair.fds[0], 'L', &null_fd, 1), 0);
  close(null_fd);
  auto received = ReceiveFds(pair.fds[1], 2, "two fds");
  ASSERT_FALSE(received.ok());
  EXPECT_EQ(received.status().code(), ErrorCode::kInternal);
  EXPECT_NE(received.status().message().find("malformed handoff of two fds"), std::string::npos);
  EXPECT_EQ(OpenFdCount(), before) << "the fd that did arrive must be closed";
}

// The child's receiving side: one fd with the right tag, close-on-exec;
// anything else is EPROTO, with whatever fds came closed.
TEST(FdPassingTest, ReceiveOneFdTakesExactlyOneTaggedFd) {
  SocketPair pair;
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(null_fd, 0);
  ASSERT_EQ(SendFds(pair.fds[0], 'L', &null_fd, 1), 0);
  int got = -1;
  ASSERT_EQ(ReceiveOneFd(pair.fds[1], 'L', &got), 0);
  EXPECT_TRUE(SameFile(got, null_fd));
  EXPECT_NE(fcntl(got, F_GETFD) & FD_CLOEXEC, 0);
  close(got);

  size_t before = OpenFdCount();
  const int two[2] = {null_fd, null_fd};
  ASSERT_EQ(SendFds(pair.fds[0], 'L', two, 2), 0);
  EXPECT_EQ(ReceiveOneFd(pair.fds[1], 'L', &got), EPROTO);
  ASSERT_EQ(SendFds(pair.fds[0], 'X', &null_fd, 1), 0);
  EXPECT_EQ(ReceiveOneFd(pair.fds[1], 'L', &got), EPROTO) << "another tag";
  ASSERT_EQ(write(pair.fds[0], "L", 1), 1);
  EXPECT_EQ(ReceiveOneFd(pair.fds[1], 'L', &got), EPROTO) << "no fd";
  EXPECT_EQ(OpenFdCount(), before) << "refused fds must be closed";
  close(pair.fds[0]);
  pair.fds[0] = -1;
  EXPECT_EQ(ReceiveOneFd(pair.fds[1], 'L', &got), EPIPE);
  close(null_fd);
}

TEST(FdPassingTest, PlainByteWithoutFdsIsRefused) {
  SocketPair pair;
  ASSERT_EQ(write(pair.fds[0], "L", 1), 1);
  auto received = ReceiveFds(pair.fds[1], 1, "a listener");
  ASSERT_FALSE(received.ok());
  EXPECT_EQ(received.status().code(), ErrorCode::kInternal);
}

TEST(FdPassingTest, PeerGoneIsFailedPrecondition) {
  SocketPair pair;
  close(pair.fds[0]);
  pair.fds[0] = -1;
  auto received = ReceiveFds(pair.fds[1], 1, "its broker listener");
  ASSERT_FALSE(received.ok());
  EXPECT_EQ(received.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(received.status().message().find("exited before sending its broker listener"), std::string::npos);
  int fd = 0;
  EXPECT_EQ(SendFds(pair.fds[1], 'L', &fd, 0), EINVAL);
  EXPECT_EQ(SendFds(pair.fds[1], 'L', &fd, kMaxPassedFds + 1), EINVAL);
}

TEST(FdPassingTest, SendToAClosedPeerIsEpipeNotSigpipe) {
  SocketPair pair;
  close(pair.fds[1]);
  pair.fds[1] = -1;
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(null_fd, 0);
  EXPECT_EQ(SendFds(pair.fds[0], 'L', &null_fd, 1), EPIPE);
  close(null_fd);
}

}  // namespace
}  // namespace cocoon::enforcer
