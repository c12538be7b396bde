// `network allow { ... }` end to end (LABELS integration security): real
// sandboxes whose connect(2) goes to the enforcer's broker. The only server
// is an echo server in this process, bound to one of THIS machine's own
// non-loopback addresses: no test sends traffic anywhere else. Run as root
// and, through setpriv, as an unprivileged user (CMakeLists.txt).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <iostream>
#include <thread>

#include "compiler/backends/artifact.h"
#include "enforcer/sandbox.h"
#include "tests/enforcer/test_util.h"

namespace cocoon::enforcer {
namespace {

using testing::AssembleFilter;
using testing::TestPolicy;

// connect -> user notification, everything else allowed; the sidecar says
// the notification means "notify" (what the compiler emits for allow-lists).
constexpr char kSidecar[] = R"({"default_action":{"action":"allow"},"needs_listener":true,
  "supervised":[{"syscall":"connect","action":"notify","numbers":{"x86_64":42}}]})";

// The first non-loopback address of `family` on an up interface.
std::string LocalAddress(int family) {
  struct ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return "";
  std::string found;
  for (auto* a = list; a != nullptr && found.empty(); a = a->ifa_next) {
    if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != family || (a->ifa_flags & IFF_LOOPBACK) != 0) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const void* raw = family == AF_INET ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(a->ifa_addr)->sin_addr)
                                        : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(a->ifa_addr)->sin6_addr);
    if (family == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(reinterpret_cast<const in6_addr*>(raw))) continue;
    inet_ntop(family, raw, text, sizeof(text));
    found = text;
  }
  freeifaddrs(list);
  return found;
}

// A TCP echo server on ip:0 in this process (host network namespace).
class EchoServer {
 public:
  explicit EchoServer(const std::string& ip) {
    // IPv4 or IPv6 (no ':' in an IPv4 literal).
    const int family = ip.find(':') == std::string::npos ? AF_INET : AF_INET6;
    sockaddr_in6 addr{};  // large enough for both; sin_port sits at the same offset
    addr.sin6_family = static_cast<sa_family_t>(family);
    inet_pton(family, ip.c_str(), family == AF_INET ? static_cast<void*>(&reinterpret_cast<sockaddr_in*>(&addr)->sin_addr)
                                                     : static_cast<void*>(&addr.sin6_addr));
    fd_ = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    socklen_t len = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 || listen(fd_, 16) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return;
    }
    port_ = ntohs(addr.sin6_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~EchoServer() {
    stop_ = true;
    if (fd_ >= 0) shutdown(fd_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    if (fd_ >= 0) close(fd_);
  }
  uint16_t port() const { return port_; }
  int accepted() const { return accepted_.load(); }

 private:
  void Serve() {
    while (!stop_) {
      struct pollfd p {fd_, POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      int client = accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (client < 0) continue;
      ++accepted_;
      char buffer[4096];
      ssize_t n;
      while ((n = read(client, buffer, sizeof(buffer))) > 0) {
        if (send(client, buffer, static_cast<size_t>(n), MSG_NOSIGNAL) != n) break;
      }
      close(client);
    }
  }
  int fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepted_{0};
  std::thread thread_;
};

class NetBrokerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ip_ = LocalAddress(AF_INET);
    if (ip_.empty()) GTEST_SKIP() << "SKIPPED LOUDLY: this host has no non-loopback IPv4 address to run the echo server on";
    echo_ = std::make_unique<EchoServer>(ip_);
    other_ = std::make_unique<EchoServer>(ip_);  // listening, but NOT in the allow-list
    ASSERT_NE(echo_->port(), 0);
    ASSERT_NE(other_->port(), 0);
  }

  ir::Policy AllowPolicy(std::vector<ir::NetworkEndpoint> extra = {}) {
    ir::Policy policy = TestPolicy();
    policy.network.mode = ir::NetworkMode::kAllowList;
    policy.network.allow = {{ip_, echo_->port()}};
    policy.network.allow.insert(policy.network.allow.end(), extra.begin(), extra.end());
    return policy;
  }

  Result<Outcome> Run(const ir::Policy& policy, const std::string& script) {
    auto request = testing::MakeRequest(policy, {"/bin/bash", "-c", script},
                                        AssembleFilter({{SYS_connect, SECCOMP_RET_USER_NOTIF}}));
    request.seccomp_sidecar_json = kSidecar;
    return RunSandbox(std::move(request));
  }

  std::string ip_;
  std::unique_ptr<EchoServer> echo_, other_;
};

std::string Tcp(const std::string& host, uint16_t port) { return "/dev/tcp/" + host + "/" + std::to_string(port); }

TEST_F(NetBrokerTest, AllowedEndpointEchoesBothWays) {
  // bash's /dev/tcp for a line, then python for 300 kB both ways (more than
  // the relay's buffers) and a half-close: the server sees EOF, we see it close.
  std::string port = std::to_string(echo_->port());
  std::string script = "exec 3<>" + Tcp(ip_, echo_->port()) +
                       " || exit 9; printf 'hello broker\\n' >&3; read -r line <&3; echo \"got:$line\"; exec 3<&-\n"
                       "python3 -c \"import socket,threading\n"
                       "c=socket.create_connection(('" + ip_ + "'," + port + ")); data=b'x'*300000\n"
                       "t=threading.Thread(target=c.sendall,args=(data,)); t.start(); got=0\n"
                       "while got<len(data):\n b=c.recv(65536)\n if not b: break\n got+=len(b)\n"
                       "t.join(); c.shutdown(socket.SHUT_WR); print('bulk', got, c.recv(10)==b'')\"";
  auto outcome = Run(AllowPolicy(), script);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->exit_code, 0) << outcome->stderr_data;
  EXPECT_NE(outcome->stdout_data.find("got:hello broker"), std::string::npos) << outcome->stderr_data;
  EXPECT_NE(outcome->stdout_data.find("bulk 300000 True"), std::string::npos) << outcome->stdout_data << outcome->stderr_data;
  ASSERT_TRUE(outcome->has_network_report);
  EXPECT_EQ(outcome->network.connections_allowed, 2u);
  EXPECT_EQ(outcome->network.connections_denied, 0u);
  EXPECT_GE(echo_->accepted(), 1);
  EXPECT_NE(outcome->network.mechanism.find("seccomp user-notification"), std::string::npos);
}

TEST_F(NetBrokerTest, StrayConnectsToTheBrokersListenerDoNotBlockLaterConnections) {
  // The sandbox can learn the in-namespace listener's port (getpeername of a
  // brokered socket) and fill its backlog with connects of its own; the
  // broker closes those before each connection it makes, so the allowed
  // endpoint stays reachable.
  std::string script =
      "python3 -c \"import socket,time\n"
      "a=('" + ip_ + "'," + std::to_string(echo_->port()) + ")\n"
      "first=socket.create_connection(a, timeout=10); port=first.getpeername()[1]; first.close()\n"
      "strays=[]\n"
      "for i in range(100):\n"
      " t=socket.socket(); t.setblocking(False)\n"
      " try: t.connect(('127.0.0.1', port))\n"
      " except BlockingIOError: pass\n"
      " strays.append(t)\n"
      "time.sleep(0.2)\n"
      "c=socket.create_connection(a, timeout=10); c.sendall(b'ping'); print('echo', c.recv(10))\"";
  auto outcome = Run(AllowPolicy(), script);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->exit_code, 0) << outcome->stderr_data;
  EXPECT_NE(outcome->stdout_data.find("echo b'ping'"), std::string::npos) << outcome->stdout_data << outcome->stderr_data;
  ASSERT_TRUE(outcome->has_network_report);
  EXPECT_EQ(outcome->network.connections_allowed, 2u);
}

// A connect on a socket that already has a handshake under way: s2 is left
// in SYN_SENT toward the broker's own in-namespace listener (its backlog
// kept full, TCP_SYNCNT 127, so the SYN is dropped for hours), then
// connect(s2, allowed) while two forked processes keep clearing O_NONBLOCK
// on the shared open file. The broker's worker made its inside connect on
// that socket after setting O_NONBLOCK; when a clearer won the race, the
// connect waited for the pending handshake, for ever, holding the accept
// lock, so no later allowed connect went through, and a worker waiting for
// that lock made Shutdown spin for ever (no Outcome; SIGTERM ignored). Now
// such a socket is refused (EALREADY, what a non-blocking connect answers),
// and any inside connect is bounded by a timer. The run must end on its own,
// with an Outcome, and the broker must still work afterwards.
TEST_F(NetBrokerTest, ConnectOnASocketAlreadyConnectingNeverBlocksTheBroker) {
  std::string script =
      "python3 -c \"import socket,threading,time,os,fcntl,errno,signal\n"
      "A=('" + ip_ + "'," + std::to_string(echo_->port()) + ")\n"
      "first=socket.create_connection(A,timeout=10); P=('127.0.0.1',first.getpeername()[1]); first.close()\n"
      "def state(s): return s.getsockopt(socket.IPPROTO_TCP,socket.TCP_INFO,1)[0]\n"
      "run=[True]\n"
      "def flood():\n"
      " ring=[]\n"
      " while run[0]:\n"
      "  t=socket.socket(); t.setblocking(False)\n"
      "  try: t.connect(P)\n"
      "  except OSError: pass\n"
      "  ring.append(t)\n"
      "  if len(ring)>100: ring.pop(0).close()\n"
      "  time.sleep(0.0003)\n"
      "fl=threading.Thread(target=flood); fl.start(); time.sleep(0.3)\n"
      "results={}; raced=0\n"
      "for attempt in range(200):\n"
      " s=socket.socket(); s.setsockopt(socket.IPPROTO_TCP,socket.TCP_SYNCNT,127); s.setblocking(False)\n"
      " try: s.connect(P)\n"
      " except BlockingIOError: pass\n"
      " time.sleep(0.05)\n"
      " if state(s)!=2:\n"
      "  s.close(); continue\n"
      " kids=[]\n"
      " for i in range(3):\n"
      "  pid=os.fork()\n"
      "  if pid==0:\n"
      "   while True: fcntl.fcntl(s.fileno(),fcntl.F_SETFL,0)\n"
      "  kids.append(pid)\n"
      " raced+=1; e=s.connect_ex(A)\n"
      " for pid in kids: os.kill(pid,signal.SIGKILL); os.waitpid(pid,0)\n"
      " name=errno.errorcode.get(e,str(e)); results[name]=results.get(name,0)+1; s.close()\n"
      "run[0]=False; fl.join()\n"
      "print('raced',raced,sorted(results.items()))\n"
      "c=socket.create_connection(A,timeout=10); c.sendall(b'ping'); print('echo',c.recv(10))\"";
  ir::Policy policy = AllowPolicy();
  constexpr int kWallMs = 60000;
  policy.limits.wall_time_ms = {true, kWallMs, ir::Enforcement::kRequired};
  // The harness's own bound on "the run ends": the wall limit plus a minute.
  // Past it the run is stuck in the supervisor, which no assertion can
  // unwind: say so and end the test binary.
  auto running = std::async(std::launch::async, [&] { return Run(policy, script); });
  if (running.wait_for(std::chrono::milliseconds(kWallMs) + std::chrono::minutes(1)) != std::future_status::ready) {
    std::cerr << "FAILED: the run did not end within its wall limit plus a minute: the broker's shutdown is stuck\n";
    std::_Exit(1);
  }
  auto outcome = running.get();
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->termination_reason, TerminationReason::kExited) << outcome->stdout_data << outcome->stderr_data;
  EXPECT_EQ(outcome->exit_code, 0) << outcome->stdout_data << outcome->stderr_data;
  EXPECT_NE(outcome->stdout_data.find("echo b'ping'"), std::string::npos) << outcome->stdout_data << outcome->stderr_data;
  EXPECT_EQ(outcome->stdout_data.find("raced 0 "), std::string::npos)
      << "the in-namespace listener's backlog never filled: nothing was checked\n" << outcome->stdout_data;
  EXPECT_EQ(outcome->stdout_data.find("'0'"), std::string::npos) << "a connect on a connecting socket succeeded\n"
                                                                   << outcome->stdout_data;
  std::cerr << outcome->stdout_data;
}

TEST_F(NetBrokerTest, OtherPortOnTheAllowedIpIsRefusedAndReported) {
  auto outcome = Run(AllowPolicy(), "exec 3<>" + Tcp(ip_, other_->port()) + " && echo connected || echo refused");
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_NE(outcome->stdout_data.find("refused"), std::string::npos) << outcome->stdout_data;
  EXPECT_NE(outcome->stderr_data.find("Connection refused"), std::string::npos) << outcome->stderr_data;
  EXPECT_EQ(other_->accepted(), 0);
  ASSERT_TRUE(outcome->has_network_report);
  EXPECT_EQ(outcome->network.connections_denied, 1u);
  ASSERT_EQ(outcome->network.denied.size(), 1u);
  EXPECT_EQ(outcome->network.denied[0].destination, ip_ + ":" + std::to_string(other_->port()));
  bool audited = false;
  for (const auto& row : outcome->denied_syscalls) audited = audited || (row.name == "connect" && row.count == 1);
  EXPECT_TRUE(audited);
}

// The denied list is bounded. It used to drop every destination after 256
// rows without a word, so 256 decoys hid the one that mattered. Now the
// Outcome says it is truncated and how many connects it left out, and
// internal destinations (the metadata service, private ranges) have rows of
// their own that public decoys cannot use up. Nothing leaves the sandbox:
// every destination here is refused by the broker before any packet.
TEST_F(NetBrokerTest, DecoysCannotHideAnInternalDestinationFromTheDeniedList) {
  std::string script =
      "python3 -c \"import socket\n"
      "def tryto(a):\n s=socket.socket(); s.connect_ex(a); s.close()\n"
      "for p in range(1,301): tryto(('203.0.113.9',p))\n"
      "tryto(('169.254.169.254',80)); tryto(('10.1.2.3',22)); tryto(('203.0.113.9',1))\"";
  auto outcome = Run(AllowPolicy(), script);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->exit_code, 0) << outcome->stderr_data;
  const NetworkReport& n = outcome->network;
  EXPECT_EQ(n.connections_denied, 303u);
  EXPECT_EQ(n.denied.size(), 258u);
  bool metadata = false, private_range = false;
  for (const auto& row : n.denied) {
    metadata = metadata || row.destination == "169.254.169.254:80";
    private_range = private_range || row.destination == "10.1.2.3:22";
  }
  EXPECT_TRUE(metadata);
  EXPECT_TRUE(private_range);
  EXPECT_TRUE(n.denied_truncated);
  EXPECT_EQ(n.denied_not_listed, 44u);  // ports 257..300; the repeated port 1 is counted on its row
  auto j = OutcomeToJson(*outcome);
  EXPECT_EQ(j["network"]["denied_truncated"], true);
  EXPECT_EQ(j["network"]["denied_not_listed"], 44);
}

TEST_F(NetBrokerTest, OtherIpIsRefused) {
  // Another of this machine's own addresses (never a foreign one).
  std::string other_ip = LocalAddress(AF_INET6);
  if (other_ip.empty()) GTEST_SKIP() << "SKIPPED LOUDLY: no second local (IPv6) address to use as a non-allowed IP";
  auto outcome = Run(AllowPolicy(), "exec 3<>" + Tcp(other_ip, echo_->port()) + " && echo connected || echo refused");
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_NE(outcome->stdout_data.find("refused"), std::string::npos) << outcome->stdout_data;
  EXPECT_EQ(outcome->network.connections_denied, 1u);
  EXPECT_EQ(echo_->accepted(), 0);
}

// An IPv6 endpoint: the sandbox's AF_INET6 socket is connected to the
// IPv4 in-namespace listener as ::ffff:127.0.0.1.
TEST_F(NetBrokerTest, AllowedIpv6EndpointEchoes) {
  std::string ip6 = LocalAddress(AF_INET6);
  if (ip6.empty()) GTEST_SKIP() << "SKIPPED LOUDLY: no non-loopback, non-link-local IPv6 address on this host";
  EchoServer echo6(ip6);
  ASSERT_NE(echo6.port(), 0);
  ir::Policy policy = AllowPolicy({{ip6, echo6.port()}});
  auto outcome = Run(policy, "exec 3<>" + Tcp(ip6, echo6.port()) +
                                 " || exit 9; printf 'six\\n' >&3; read -r line <&3; echo \"got:$line\"");
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_NE(outcome->stdout_data.find("got:six"), std::string::npos) << outcome->stderr_data;
  EXPECT_EQ(outcome->network.connections_allowed, 1u);
  EXPECT_EQ(echo6.accepted(), 1);
}

TEST_F(NetBrokerTest, UdpToTheAllowedEndpointFails) {
  auto outcome = Run(AllowPolicy(), "echo x > /dev/udp/" + ip_ + "/" + std::to_string(echo_->port()) +
                                        " && echo sent || echo failed");
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_NE(outcome->stdout_data.find("failed"), std::string::npos) << outcome->stdout_data;
  ASSERT_EQ(outcome->network.denied.size(), 1u);
  EXPECT_NE(outcome->network.denied[0].reason.find("not TCP"), std::string::npos);
}

// Paths out that never call connect(2): the namespace is the barrier.
TEST_F(NetBrokerTest, SendsWithoutConnectCannotLeaveTheNamespace) {
  std::string target = "('" + ip_ + "'," + std::to_string(echo_->port()) + ")";
  std::string script =
      "python3 -c \"import socket\n"
      "for kind,flags in (('fastopen',socket.MSG_FASTOPEN),('udp',0)):\n"
      " s=socket.socket(type=socket.SOCK_STREAM if kind=='fastopen' else socket.SOCK_DGRAM)\n"
      " try:\n  s.sendto(b'x',flags," + target + "); print(kind,'sent')\n"
      " except OSError as e: print(kind,'errno',e.errno)\"";
  auto outcome = Run(AllowPolicy(), script);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_NE(outcome->stdout_data.find("fastopen errno " + std::to_string(ENETUNREACH)), std::string::npos)
      << outcome->stdout_data << outcome->stderr_data;
  EXPECT_NE(outcome->stdout_data.find("udp errno " + std::to_string(ENETUNREACH)), std::string::npos)
      << outcome->stdout_data << outcome->stderr_data;
  EXPECT_EQ(echo_->accepted(), 0);
}

// TOCTOU: a second thread flips the connect address between a loopback one
// (continued in the kernel, which re-reads it) and a host one that is not
// allowed, while connect(2) waits for the broker. Whatever the kernel reads
// last runs inside the namespace, so nothing ever reaches the host server.
TEST_F(NetBrokerTest, SwappingTheAddressDuringTheCheckNeverEscapes) {
  std::string port = std::to_string(other_->port());
  std::string script =
      "python3 -c \"import ctypes,socket,struct,threading\n"
      "libc=ctypes.CDLL(None,use_errno=True)\n"
      "def sa(ip): return struct.pack('=H',2)+struct.pack('!H'," + port + ")+socket.inet_aton(ip)+bytes(8)\n"
      "a=sa('127.0.0.1'); b=sa('" + ip_ + "'); buf=ctypes.create_string_buffer(a,16); run=[True]\n"
      "def flip():\n while run[0]:\n  ctypes.memmove(buf,a,16); ctypes.memmove(buf,b,16)\n"
      "t=threading.Thread(target=flip); t.start(); ok=0\n"
      "for i in range(300):\n"
      " s=socket.socket(); ok+=libc.connect(s.fileno(),buf,16)==0; s.close()\n"
      "run[0]=False; t.join(); print('connected',ok)\"";
  auto outcome = Run(AllowPolicy(), script);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_NE(outcome->stdout_data.find("connected 0"), std::string::npos) << outcome->stdout_data << outcome->stderr_data;
  EXPECT_EQ(other_->accepted(), 0);
  EXPECT_EQ(outcome->network.connections_allowed, 0u);
  std::cerr << "broker denials during the race: " << outcome->network.connections_denied << " of 300\n";
}

TEST_F(NetBrokerTest, LoopbackStillWorksInside) {
  // A server and a client inside the sandbox, on its own 127.0.0.1.
  const char* script =
      "python3 -c \"import socket,threading\n"
      "s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(1); p=s.getsockname()[1]\n"
      "def srv():\n c,_=s.accept(); c.sendall(c.recv(100)); c.close()\n"
      "threading.Thread(target=srv).start()\n"
      "c=socket.create_connection(('127.0.0.1',p)); c.sendall(b'loop'); print('inside:'+c.recv(100).decode())\"";
  auto outcome = Run(AllowPolicy(), script);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_NE(outcome->stdout_data.find("inside:loop"), std::string::npos) << outcome->stderr_data;
  EXPECT_EQ(outcome->network.connections_denied, 0u);
  EXPECT_EQ(outcome->network.connections_allowed, 0u);
}

TEST_F(NetBrokerTest, HostNameResolvesInsideThroughGeneratedHosts) {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  struct addrinfo hints {};
  hints.ai_family = AF_INET;
  struct addrinfo* list = nullptr;
  if (getaddrinfo(name, nullptr, &hints, &list) != 0) GTEST_SKIP() << "SKIPPED LOUDLY: this host's name does not resolve";
  freeaddrinfo(list);
  std::string host = name;
  auto outcome = Run(AllowPolicy({{host, 1}}), "getent hosts " + host + "; cat /etc/hosts");
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->exit_code, 0) << outcome->stdout_data;
  EXPECT_NE(outcome->stdout_data.find(host), std::string::npos);
  EXPECT_NE(outcome->stdout_data.find("generated by cocoon"), std::string::npos) << outcome->stdout_data;
}

// The generated /etc/hosts is the enforcer's own bind, made after the
// policy's masks: over a hidden /etc/hosts it undid the `hide` (the file
// read "generated by cocoon"). The hide wins; the allowed IP still connects.
TEST_F(NetBrokerTest, AHiddenEtcHostsStaysHidden) {
  ir::Policy policy = AllowPolicy();
  policy.filesystem.hidden = {"/etc/hosts"};
  auto outcome = Run(policy, "wc -c < /etc/hosts; exec 3<>" + Tcp(ip_, echo_->port()) + " && echo connected");
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->stdout_data, "0\nconnected\n") << outcome->stderr_data;
}

TEST_F(NetBrokerTest, UnresolvableHostRefusesTheRun) {
  auto outcome = Run(AllowPolicy({{"no-such-host.invalid", 443}}), "true");
  ASSERT_FALSE(outcome.ok());
  EXPECT_NE(outcome.status().ToString().find("no-such-host.invalid"), std::string::npos) << outcome.status().ToString();
}

// The whole pipeline: the seccomp back end's own filter and sidecar for an
// allow-list policy (connect routed to the broker), run by the enforcer.
TEST_F(NetBrokerTest, CompiledAllowListPolicyIsEnforced) {
  ir::Policy policy = AllowPolicy();
  policy.syscalls.default_action = ir::Action{ir::ActionKind::kAllow, 0};
  policy.syscalls.default_explicitly_allows = true;
  auto artifacts = backends::CompileSeccomp(policy);
  ASSERT_TRUE(artifacts.ok()) << artifacts.status().ToString();
  std::string bpf, sidecar;
  for (const auto& a : *artifacts) {
    if (a.path == "linux.seccomp.bpf") bpf = a.bytes;
    if (a.path == "linux.seccomp.json") sidecar = a.bytes;
  }
  std::string script = "exec 3<>" + Tcp(ip_, echo_->port()) +
                       " || exit 9; printf 'compiled\\n' >&3; read -r line <&3; echo \"got:$line\"; "
                       "exec 4<>" + Tcp(ip_, other_->port()) + " && echo connected || echo refused";
  auto request = testing::MakeRequest(policy, {"/bin/bash", "-c", script}, bpf);
  request.seccomp_sidecar_json = sidecar;
  auto outcome = RunSandbox(std::move(request));
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_NE(outcome->stdout_data.find("got:compiled"), std::string::npos) << outcome->stderr_data;
  EXPECT_NE(outcome->stdout_data.find("refused"), std::string::npos) << outcome->stdout_data;
  EXPECT_EQ(outcome->network.connections_allowed, 1u);
  EXPECT_EQ(outcome->network.connections_denied, 1u);
  EXPECT_EQ(other_->accepted(), 0);
}

TEST_F(NetBrokerTest, ProgramWithoutConnectNotificationIsRefused) {
  auto request = testing::MakeRequest(AllowPolicy(), {"/bin/true"});  // allow-all filter: no broker
  auto outcome = RunSandbox(std::move(request));
  ASSERT_FALSE(outcome.ok());
  EXPECT_NE(outcome.status().ToString().find("does not route connect"), std::string::npos);
}

}  // namespace
}  // namespace cocoon::enforcer
