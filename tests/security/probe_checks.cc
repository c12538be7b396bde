// Setup and host-side verification hooks; see probe_checks.h.
#include "tests/security/probe_checks.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace cocoon::security_test {

std::string PolicyPath() {
  // COCOON_SECURITY_POLICY lets CI point the suite at a compiled policy dir.
  if (const char* p = std::getenv("COCOON_SECURITY_POLICY")) return p;
  return std::string(COCOON_SOURCE_DIR) + "/policies/strict.cocoon";
}

std::string VerdictName(const ProbeCase& c) {
  for (const auto& a : c.args)
    if (a.rfind("op=", 0) == 0) return c.probe + ":" + a.substr(3);
  return c.probe;
}

namespace {
// ------------------------------------------------------------ setup hooks
int Listen(int type, uint16_t* port) {
  int fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  struct sockaddr_in addr {};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      (type == SOCK_STREAM && listen(fd, 16) != 0) ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    return -1;
  *port = ntohs(addr.sin_port);
  return fd;
}

}  // namespace

void SetupTcp(Context& ctx) {
  uint16_t port = 0;
  ctx.tcp_listener = ctx.Keep(Listen(SOCK_STREAM, &port));
  ASSERT_GE(ctx.tcp_listener, 0) << "host TCP listener";
  ctx.probe_args.push_back("port=" + std::to_string(port));
}

void SetupUdp(Context& ctx) {
  uint16_t port = 0;
  ctx.udp_socket = ctx.Keep(Listen(SOCK_DGRAM, &port));
  ASSERT_GE(ctx.udp_socket, 0) << "host UDP socket";
  ctx.probe_args.push_back("port=" + std::to_string(port));
  ctx.probe_args.push_back("nonce=udp-" + ctx.nonce);
}

void SetupUnixAbstract(Context& ctx) {
  std::string name = "cocoon-probe-" + ctx.nonce;
  int fd = ctx.Keep(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  struct sockaddr_un addr {};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path + 1, name.data(), name.size());
  socklen_t len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), len), 0) << std::strerror(errno);
  ASSERT_EQ(listen(fd, 4), 0);
  ctx.unix_listener = fd;
  ctx.probe_args.push_back("name=" + name);
}

static void ExpectNoConnection(int listener, const char* what) {
  int fd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
  EXPECT_LT(fd, 0) << "ESCAPE: the sandbox connected to the host's " << what;
  if (fd >= 0) close(fd);
}

void SetupCanary(Context& ctx) {
  ctx.launch.extra_env.emplace_back("COCOON_CANARY", "secret-" + ctx.nonce);
}

void SetupLeakedFds(Context& ctx) {
  // A directory fd of the host root (the runc CVE-2024-21626 shape) and a
  // plain file, both without O_CLOEXEC, above stdio.
  int dir = ctx.Keep(open("/", O_RDONLY | O_DIRECTORY));
  int file = ctx.Keep(open("/etc/hostname", O_RDONLY));
  ASSERT_GE(dir, 3);
  ctx.launch.leak_fds = {dir};
  if (file >= 0) ctx.launch.leak_fds.push_back(file);
}

void SetupHostSleep(Context& ctx) {
  // "600.<digits>" is a valid GNU sleep interval and a unique marker.
  std::string marker = "600." + std::to_string(std::strtoull(ctx.nonce.substr(0, 8).c_str(), nullptr, 16));
  ctx.host_sleep = SpawnHostSleep(ctx.run_as, marker);
  ASSERT_GT(ctx.host_sleep, 0);
  usleep(50 * 1000);
  ctx.probe_args.push_back("target=" + std::to_string(ctx.host_sleep));
  ctx.probe_args.push_back("marker=" + marker);
}

void VerifyHostSleepAlive(Context& ctx, const LaunchResult&, const Verdict&) {
  int status = 0;
  EXPECT_EQ(waitpid(ctx.host_sleep, &status, WNOHANG), 0)
      << "ESCAPE: the host sleep (pid " << ctx.host_sleep << ") died during the run, status " << status;
  EXPECT_EQ(kill(ctx.host_sleep, 0), 0) << "host sleep gone";
}

void SetupSetuidHelper(Context& ctx) {
  if (geteuid() != 0) {
    ctx.skip_reason = "the harness is not root and cannot make a setuid-root helper";
    return;
  }
  std::string helper = ctx.scratch->StageProbe("setuid", "suid_helper");
  ASSERT_EQ(chown(helper.c_str(), 0, 0), 0);
  ASSERT_EQ(chmod(helper.c_str(), 04755), 0);
  ctx.cocoon_args.insert(ctx.cocoon_args.end(), {"--copy", helper});
  ctx.probe_args.push_back("helper=/work/suid_helper");
}

void SetupFileHandle(Context& ctx) {
  // A secret on the host's root filesystem, outside anything the sandbox
  // mounts; its handle is what a shocker-style attack would brute-force.
  std::string secret_dir = ctx.scratch->root() + "/secret";
  mkdir(secret_dir.c_str(), 0700);
  std::string path = secret_dir + "/secret.txt";
  std::ofstream(path) << "host-secret-" << ctx.nonce << "\n";
  alignas(struct file_handle) char space[sizeof(struct file_handle) + 128];
  auto* fh = reinterpret_cast<struct file_handle*>(space);
  fh->handle_bytes = 128;
  int mount_id = 0;
  if (name_to_handle_at(AT_FDCWD, path.c_str(), fh, &mount_id, 0) != 0) {
    ctx.skip_reason = std::string("name_to_handle_at on the host failed: ") + std::strerror(errno);
    return;
  }
  // f_handle is a flexible array member: read the bytes through `space`.
  const auto* bytes = reinterpret_cast<const unsigned char*>(space) + offsetof(struct file_handle, f_handle);
  std::string hex;
  for (unsigned i = 0; i < fh->handle_bytes && i < 128; ++i) {
    char b[3];
    std::snprintf(b, sizeof b, "%02x", bytes[i]);
    hex += b;
  }
  ctx.probe_args.push_back("handle_type=" + std::to_string(fh->handle_type));
  ctx.probe_args.push_back("handle=" + hex);
  ctx.probe_args.push_back("secret=host-secret-" + ctx.nonce);
}

void SetupPty(Context& ctx) {
  ctx.pty_master = ctx.Keep(posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  ASSERT_GE(ctx.pty_master, 0);
  ASSERT_EQ(grantpt(ctx.pty_master), 0);
  ASSERT_EQ(unlockpt(ctx.pty_master), 0);
  const char* name = ptsname(ctx.pty_master);
  ASSERT_NE(name, nullptr);
  ctx.launch.ctty_slave = name;
  ctx.pty_slave = ctx.Keep(open(name, O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK));
}

void VerifyPtyClean(Context& ctx, const LaunchResult&, const Verdict&) {
  // Injected input would sit in the slave's input queue (and echo on the master).
  std::string seen;
  char buf[4096];
  for (int fd : {ctx.pty_slave, ctx.pty_master}) {
    if (fd < 0) continue;
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) seen.append(buf, static_cast<size_t>(n));
  }
  EXPECT_EQ(seen.find("cocoon-tiocsti"), std::string::npos)
      << "ESCAPE: characters were injected into the caller's terminal: " << seen;
}

void VerifyTcp(Context& ctx, const LaunchResult&, const Verdict&) {
  ExpectNoConnection(ctx.tcp_listener, "TCP listener on 127.0.0.1");
}

void VerifyUnixAbstract(Context& ctx, const LaunchResult&, const Verdict&) {
  ExpectNoConnection(ctx.unix_listener, "abstract unix socket");
}

void VerifyUdp(Context& ctx, const LaunchResult&, const Verdict&) {
  char buf[256];
  ssize_t n = recv(ctx.udp_socket, buf, sizeof buf, MSG_DONTWAIT);
  EXPECT_LT(n, 0) << "ESCAPE: a datagram from the sandbox reached the host: "
                  << std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
}

void VerifyForkBomb(Context&, const LaunchResult& r, const Verdict& v) {
  long long limit = r.outcome ? LimitRequested(*r.outcome, "processes") : -1;
  const char* at = std::strstr(v.detail.c_str(), "after ");
  if (limit > 0 && at != nullptr) {
    long long forked = std::strtoll(at + 6, nullptr, 10);
    EXPECT_LE(forked, limit) << "forked more children than the process limit " << limit;
  }
}

void VerifyDiskFill(Context& ctx, const LaunchResult& r, const Verdict& v) {
  long long quota = r.outcome ? LimitRequested(*r.outcome, "disk") : -1;
  const char* at = std::strstr(v.detail.c_str(), "after ");
  if (quota > 0 && at != nullptr) {
    long long written = std::strtoll(at + 6, nullptr, 10);
    EXPECT_LE(written, quota + (1 << 20)) << "wrote past the disk quota " << quota;
  }
  struct stat st;
  std::string fill = ctx.scratch->work() + "/fill";
  if (lstat(fill.c_str(), &st) == 0 && quota > 0) {
    EXPECT_LE(st.st_size, quota) << "a file larger than the quota was committed to the host";
  }
}

void VerifyOutputFlood(Context& ctx, const LaunchResult& r, const Verdict& v) {
  ASSERT_TRUE(r.outcome.has_value());
  const auto& o = *r.outcome;
  EXPECT_TRUE(JsonBool(o, "stdout_truncated")) << "a 1 GiB flood must be marked truncated";
  long long cap = LimitRequested(o, "output");
  size_t captured = OutcomeStream(o, "stdout").size();
  if (cap > 0) {
    EXPECT_LE(captured, static_cast<size_t>(cap) + 4096) << "captured more than the output cap";
  }
  EXPECT_LE(captured, 64u << 20) << "the Outcome carries " << captured << " bytes of stdout";
  if (v.detail.rfind("wrote ", 0) == 0) {
    long long wrote = std::strtoll(v.detail.c_str() + 6, nullptr, 10);
    long long counted = JsonInt(o, "stdout_bytes");
    if (counted >= 0) {
      EXPECT_EQ(counted, wrote) << "stdout_bytes must count everything the command wrote";
    }
  }
  // wait4(2) on cocoon: its own peak RSS (the probe it reaped is ~2 MiB).
  long max_rss_kib = r.usage.ru_maxrss;
  ::testing::Test::RecordProperty("cocoon_max_rss_kib", static_cast<int>(max_rss_kib));
  EXPECT_LT(max_rss_kib, 64 * 1024) << "the supervisor's RSS grew with the flood";
  // Issue 4: the flood must not grow the supervisor's memory beyond the cap.
  // Both figures come from rss_meter (wait4 from the test binary would count
  // the test's own memory, see rss_meter.c): this flood and the same launch
  // running /bin/true. The slack covers the drain buffers and the JSON
  // document's own overhead. Escaping must not count: a NUL is six
  // characters of JSON, and the Outcome text is streamed out rather than
  // built (compiler/common/json_fd_writer.h).
  if (cap > 0) {
    LaunchOptions measured = ctx.launch;
    measured.measure_rss = true;
    LaunchResult flood = Launch(measured);
    measured.command = {"/bin/true"};
    LaunchResult quiet = Launch(measured);
    ASSERT_GT(flood.cocoon_max_rss_kib, 0) << flood.Describe();
    ASSERT_GT(quiet.cocoon_max_rss_kib, 0) << quiet.Describe();
    long growth_kib = flood.cocoon_max_rss_kib - quiet.cocoon_max_rss_kib;
    ::testing::Test::RecordProperty("cocoon_rss_growth_kib", static_cast<int>(growth_kib));
    EXPECT_LE(growth_kib, cap / 1024 + 2048)
        << "the supervisor grew by " << growth_kib << " KiB over a /bin/true launch (" << quiet.cocoon_max_rss_kib
        << " KiB) for an output cap of " << cap / 1024 << " KiB";
  }
}

void VerifyTimedOut(Context&, const LaunchResult& r, const Verdict&) {
  ASSERT_TRUE(r.outcome.has_value());
  EXPECT_TRUE(JsonBool(*r.outcome, "timed_out")) << r.outcome->dump().substr(0, 2000);
  EXPECT_NE(JsonString(*r.outcome, "termination_reason").find("timeout"), std::string::npos);
}

void VerifyExit124(Context&, const LaunchResult& r, const Verdict&) {
  EXPECT_EQ(r.exit_status, 124) << "without --json, a timeout exits 124 like timeout(1)\n" << r.Describe();
}

void VerifyDaemonGone(Context& ctx, const LaunchResult&, const Verdict&) {
  // The generic post-run scan looks for run=<nonce>; the daemon re-execs with
  // marker=<nonce> only, so look for that too.
  std::vector<pid_t> left = HostProcessesWith("marker=" + ctx.nonce);
  for (int i = 0; i < 10 && !left.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    left = HostProcessesWith("marker=" + ctx.nonce);
  }
  EXPECT_TRUE(left.empty()) << "ESCAPE: " << left.size() << " daemonized sandbox process(es) outlived cocoon, first pid "
                            << (left.empty() ? 0 : left[0]);
  for (pid_t pid : left) kill(pid, SIGKILL);
}

namespace {

// outcome.breakout = {clean, findings[{path, kind, target}]} (enforcer/outcome.cc).
const nlohmann::json* Findings(const nlohmann::json& outcome) {
  auto b = outcome.find("breakout");
  if (b == outcome.end() || !b->is_object()) return nullptr;
  auto f = b->find("findings");
  return (f != b->end() && f->is_array()) ? &*f : nullptr;
}

bool BreakoutClean(const nlohmann::json& outcome) {
  auto b = outcome.find("breakout");
  return b != outcome.end() && b->is_object() && JsonBool(*b, "clean");
}

bool FindingListed(const nlohmann::json& outcome, const std::string& path) {
  const nlohmann::json* findings = Findings(outcome);
  if (findings == nullptr) return false;
  for (const auto& f : *findings) {
    std::string p = JsonString(f, "path");
    if (p == path || p == "/" + path || (p.size() > path.size() && p.compare(p.size() - path.size() - 1, std::string::npos, "/" + path) == 0))
      return true;
  }
  return false;
}

// Was `what=ok` in the probe's PENDING report (did the probe create it)?
bool Created(const Verdict& v, const std::string& what) {
  return (" " + v.detail + " ").find(" " + what + "=ok ") != std::string::npos;
}

}  // namespace

void VerifyLinks(Context& ctx, const LaunchResult& r, const Verdict& v) {
  ASSERT_TRUE(r.outcome.has_value());
  SCOPED_TRACE("probe created: " + v.detail + "\nOutcome breakout: " +
               r.outcome->value("breakout", nlohmann::json::object()).dump());
  const std::string work = ctx.scratch->work();
  struct stat st;
  EXPECT_EQ(lstat((work + "/ok.txt").c_str(), &st), 0) << "the ordinary file was not committed";
  // Entries that must never reach the host, and must be listed in the Outcome.
  for (const char* bad : {"abs_passwd", "sub/dotdot", "sub/esc_dir", "fifo", "sock", "dev_null"}) {
    std::string host_path = work + "/" + bad;
    EXPECT_NE(lstat(host_path.c_str(), &st), 0) << "ESCAPE: " << bad << " reached the host work dir";
    if (Created(v, bad)) {
      EXPECT_TRUE(FindingListed(*r.outcome, bad)) << bad << " is not listed in breakout_findings";
    }
  }
  for (const char* bits : {"suid_file", "sgid_file"}) {
    std::string host_path = work + "/" + bits;
    if (lstat(host_path.c_str(), &st) == 0) {
      EXPECT_EQ(st.st_mode & 06000, 0u) << "ESCAPE: " << bits << " reached the host with its set-id bit";
    }
    if (Created(v, bits)) {
      EXPECT_TRUE(FindingListed(*r.outcome, bits)) << bits << " is not listed in breakout_findings";
    }
  }
  struct stat passwd;
  std::string hard = work + "/hard_passwd";
  if (lstat(hard.c_str(), &st) == 0 && stat("/etc/passwd", &passwd) == 0) {
    EXPECT_FALSE(st.st_ino == passwd.st_ino && st.st_dev == passwd.st_dev) << "ESCAPE: a hardlink to /etc/passwd";
  }
  if (Created(v, "hard_passwd")) {
    EXPECT_TRUE(FindingListed(*r.outcome, "hard_passwd"));
  }
  EXPECT_FALSE(BreakoutClean(*r.outcome)) << "the Outcome says the work dir was clean";
}

void VerifyNoCoreFile(Context& ctx, const LaunchResult&, const Verdict&) {
  std::string work = ctx.scratch->work();
  for (const char* name : {"core", "core.1", "core.2"}) {
    struct stat st;
    EXPECT_NE(lstat((work + "/" + name).c_str(), &st), 0) << "a core file reached the host work dir";
  }
}

}  // namespace cocoon::security_test
