// Setup and host-side verification hooks of the security probe suite: what
// the harness plants before a run (listeners, canaries, a host process, a
// pty, a setuid helper) and what it checks on the host afterwards.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "tests/security/probe_harness.h"

namespace cocoon::security_test {

// The policy under test: policies/strict.cocoon, or $COCOON_SECURITY_POLICY.
std::string PolicyPath();

// Per-case state: what the setup hook planted and must clean up.
struct Context {
  RunAs run_as = RunAs::kRoot;
  Scratch* scratch = nullptr;
  std::string nonce;
  std::vector<std::string> probe_args;   // appended to the probe's argv
  std::vector<std::string> cocoon_args;  // appended to cocoon's options
  LaunchOptions launch;
  std::string skip_reason;
  std::vector<int> fds;  // closed at the end
  pid_t host_sleep = -1;
  int tcp_listener = -1, udp_socket = -1, unix_listener = -1;
  int pty_master = -1;
  int pty_slave = -1;

  ~Context() {
    for (int fd : fds) close(fd);
    if (host_sleep > 0) {
      kill(host_sleep, SIGKILL);
      waitpid(host_sleep, nullptr, 0);
    }
  }
  int Keep(int fd) {
    if (fd >= 0) fds.push_back(fd);
    return fd;
  }
};

enum class Expect {
  kBlocked,  // BLOCKED or PENDING (with a host check), or a seccomp kill
  kTimeout,  // the probe never finishes; the Outcome must say timed out
};

using SetupFn = std::function<void(Context&)>;
using VerifyFn = std::function<void(Context&, const LaunchResult&, const Verdict&)>;

struct ProbeCase {
  std::string name;                // test name
  std::string probe;               // probes/<probe>.c
  std::vector<std::string> args;   // op=..., ...
  Expect expect = Expect::kBlocked;
  SetupFn setup;
  VerifyFn verify;
  bool json = true;
  bool oom_is_blocked = false;     // an OOM-killed sandbox counts as blocked
  std::string policy;              // the policy file; empty: PolicyPath()
};

// gtest prints parameters with this (the default dumps raw bytes).
inline void PrintTo(const ProbeCase& c, std::ostream* os) { *os << c.name; }

// "<probe>" or "<probe>:<op>", as the probe prints it.
std::string VerdictName(const ProbeCase& c);

// ------------------------------------------------------------ hooks
void SetupTcp(Context& ctx);
void SetupUdp(Context& ctx);
void SetupUnixAbstract(Context& ctx);
void SetupCanary(Context& ctx);
void SetupLeakedFds(Context& ctx);
void SetupHostSleep(Context& ctx);
void SetupSetuidHelper(Context& ctx);
void SetupFileHandle(Context& ctx);
void SetupPty(Context& ctx);

void VerifyTcp(Context& ctx, const LaunchResult& r, const Verdict& v);
void VerifyUdp(Context& ctx, const LaunchResult& r, const Verdict& v);
void VerifyUnixAbstract(Context& ctx, const LaunchResult& r, const Verdict& v);
void VerifyHostSleepAlive(Context& ctx, const LaunchResult& r, const Verdict& v);
void VerifyPtyClean(Context& ctx, const LaunchResult& r, const Verdict& v);
void VerifyForkBomb(Context& ctx, const LaunchResult& r, const Verdict& v);
void VerifyDiskFill(Context& ctx, const LaunchResult& r, const Verdict& v);
void VerifyOutputFlood(Context& ctx, const LaunchResult& r, const Verdict& v);
void VerifyTimedOut(Context& ctx, const LaunchResult& r, const Verdict& v);
void VerifyExit124(Context& ctx, const LaunchResult& r, const Verdict& v);
void VerifyDaemonGone(Context& ctx, const LaunchResult& r, const Verdict& v);
void VerifyLinks(Context& ctx, const LaunchResult& r, const Verdict& v);
void VerifyNoCoreFile(Context& ctx, const LaunchResult& r, const Verdict& v);

}  // namespace cocoon::security_test
