// WriteJsonLine: the same text as dump(), produced through a fixed buffer.
#include "compiler/common/json_fd_writer.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <thread>

#include <gtest/gtest.h>

namespace cocoon {
namespace {

// Writes `value` into a pipe while a thread drains it; returns what came out.
std::string WriteThroughPipe(const nlohmann::json& value, int indent, bool* ok) {
  int fds[2];
  EXPECT_EQ(pipe2(fds, O_CLOEXEC), 0);
  std::string out;
  std::thread reader([&] {
    char buffer[4096];
    ssize_t n;
    while ((n = read(fds[0], buffer, sizeof(buffer))) > 0) out.append(buffer, static_cast<size_t>(n));
  });
  *ok = WriteJsonLine(fds[1], value, indent);
  close(fds[1]);
  reader.join();
  close(fds[0]);
  return out;
}

TEST(JsonFdWriterTest, MatchesDumpForSmallAndPrettyDocuments) {
  nlohmann::json value = {{"exit_code", 0}, {"stdout", "hello\n"}, {"list", {1, 2, 3}}, {"nested", {{"a", true}}}};
  for (int indent : {-1, 0, 2}) {
    bool ok = false;
    EXPECT_EQ(WriteThroughPipe(value, indent, &ok), value.dump(indent) + "\n") << "indent " << indent;
    EXPECT_TRUE(ok);
  }
}

TEST(JsonFdWriterTest, StreamsAStringLargerThanItsBufferEscapedAsDumpWould) {
  // 1 MiB of NUL bytes escapes to 6 MiB of "\u0000": far beyond the 64 KiB
  // buffer, so this crosses every flush path.
  nlohmann::json value = {{"stdout", std::string(1 << 20, '\0')}, {"stdout_truncated", true}};
  bool ok = false;
  std::string out = WriteThroughPipe(value, 2, &ok);
  EXPECT_TRUE(ok);
  EXPECT_EQ(out.size(), value.dump(2).size() + 1);
  EXPECT_EQ(out, value.dump(2) + "\n");
}

TEST(JsonFdWriterTest, ReplacesInvalidUtf8LikeDumpWithReplace) {
  nlohmann::json value = {{"stdout", std::string("ok \xff\xfe bytes")}};
  bool ok = false;
  std::string out = WriteThroughPipe(value, -1, &ok);
  EXPECT_TRUE(ok);
  EXPECT_EQ(out, value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
  EXPECT_NE(out.find("\xef\xbf\xbd"), std::string::npos);  // U+FFFD
}

TEST(JsonFdWriterTest, ReportsAFailedWriteWithErrno) {
  // A pipe whose reader is gone: write fails with EPIPE (SIGPIPE ignored
  // here, as a test runner may not).
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ignore, &previous);
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
  close(fds[0]);
  errno = 0;
  EXPECT_FALSE(WriteJsonLine(fds[1], nlohmann::json{{"a", std::string(200000, 'x')}}));
  EXPECT_EQ(errno, EPIPE);
  close(fds[1]);
  sigaction(SIGPIPE, &previous, nullptr);
}

// A non-blocking fd nobody drains (a FIFO whose reader stopped reading):
// with a timeout the write gives up with ETIMEDOUT instead of holding the
// caller forever; a reader that keeps up gets every byte.
TEST(JsonFdWriterTest, ANonBlockingFdThatStaysFullTimesOut) {
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
  const nlohmann::json big = {{"a", std::string(200000, 'x')}};  // more than a pipe holds
  errno = 0;
  EXPECT_FALSE(WriteJsonLine(fds[1], big, -1, 100));
  EXPECT_EQ(errno, ETIMEDOUT);
  close(fds[0]);
  close(fds[1]);

  ASSERT_EQ(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
  std::string drained;
  std::thread reader([&] {
    const int flags = fcntl(fds[0], F_GETFL);
    fcntl(fds[0], F_SETFL, flags & ~O_NONBLOCK);
    char buffer[65536];
    for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) drained.append(buffer, static_cast<size_t>(n));
  });
  EXPECT_TRUE(WriteJsonLine(fds[1], big, -1, 10000));
  close(fds[1]);
  reader.join();
  close(fds[0]);
  EXPECT_EQ(drained, big.dump() + "\n");
}

}  // namespace
}  // namespace cocoon
