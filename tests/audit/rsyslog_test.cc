// Real SIEM-side ingestion: a private rsyslogd (Debian package) listens on a
// loopback TCP port with its own config, pid file and work dir (never the
// system daemon or /etc/rsyslog.conf), stores the MSG of each RFC 5424
// message in a private file, and the stored copy must still verify.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <chrono>
#include <thread>

#include "tests/audit/audit_test_util.h"

namespace cocoon::audit::testing {
namespace {

constexpr const char* kRsyslogd = "/usr/sbin/rsyslogd";

int FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

bool PortAccepts(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  close(fd);
  return ok;
}

class RsyslogTest : public AuditTempDir {
 protected:
  void TearDown() override {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);  // only the rsyslogd this test started, by its pid
      int status;
      waitpid(pid_, &status, 0);
    }
    AuditTempDir::TearDown();
  }

  void StartRsyslog(int port) {
    std::string config =
        "global(workDirectory=\"" + dir_ + "\" maxMessageSize=\"256k\")\n"
        "module(load=\"imtcp\")\n"
        "template(name=\"msgonly\" type=\"string\" string=\"%msg%\\n\")\n"
        "ruleset(name=\"cocoon\") {\n"
        "  action(type=\"omfile\" file=\"" + Path("stored.log") + "\" template=\"msgonly\")\n"
        "}\n"
        "input(type=\"imtcp\" address=\"127.0.0.1\" port=\"" + std::to_string(port) + "\" ruleset=\"cocoon\")\n";
    WriteFile(Path("rsyslog.conf"), config);
    pid_ = fork();
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      std::string conf = Path("rsyslog.conf"), pidfile = Path("rsyslog.pid");
      execl(kRsyslogd, kRsyslogd, "-n", "-f", conf.c_str(), "-i", pidfile.c_str(), nullptr);
      _exit(127);
    }
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (!PortAccepts(port) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_TRUE(PortAccepts(port)) << "rsyslogd did not start listening on 127.0.0.1:" << port;
  }

  pid_t pid_ = -1;
};

TEST_F(RsyslogTest, StoredCopyIsIntactAndVerifies) {
  if (access(kRsyslogd, X_OK) != 0) GTEST_FAIL() << "rsyslogd missing: install the rsyslog package (setup.sh)";
  int port = FreeLoopbackPort();
  StartRsyslog(port);

  AuditLogOptions options = Options("unused");
  options.sink = SinkKind::kSyslog;
  options.syslog_address = "tcp:127.0.0.1:" + std::to_string(port);
  constexpr int kEvents = 200;
  {
    auto log = AuditLog::Open(options);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    SandboxLaunchedInfo launch;  // hostile bytes: quotes, controls, non-ASCII, invalid UTF-8
    launch.argv = {"/bin/sh", "-c", "echo \"caf\xc3\xa9\" \t\x01 \xff \xe2\x80\xa8 $(id)"};
    launch.pid = 5;
    ASSERT_TRUE((*log)->Append(SandboxLaunched(launch)).ok());
    for (int i = 0; i < kEvents; ++i) ASSERT_TRUE((*log)->Append(SampleDenial(i)).ok());
    ASSERT_TRUE((*log)->Close().ok());
  }
  const size_t expected_lines = kEvents + 3 + kEvents / 1000;  // start, launch, events, seal
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (SplitLines(ReadFile(Path("stored.log"))).size() < expected_lines &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  auto stored = SplitLines(ReadFile(Path("stored.log")));
  ASSERT_EQ(stored.size(), expected_lines);
  EXPECT_NE(stored[1].find("caf\xc3\xa9"), std::string::npos) << stored[1];
  VerifyReport report = Verify({Path("stored.log")});
  EXPECT_EQ(report.verdict, VerifyVerdict::kSealed) << FormatReport(report);
  EXPECT_EQ(report.lines, expected_lines);
}

}  // namespace
}  // namespace cocoon::audit::testing
