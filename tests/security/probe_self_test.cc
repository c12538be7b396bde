// Probe self-tests: each probe must really DETECT its escape when nothing
// blocks it, or a broken probe would pass the suite forever. The probes run
// here WITHOUT cocoon, but never on the host itself: only as the unprivileged
// user inside a throwaway `unshare -Urmpf --mount-proc` (new user, mount and
// pid namespaces), where mounting a tmpfs, creating a nested user namespace,
// ptracing a sibling or reading a keyring succeed harmlessly. Each case
// expects the probe to report ESCAPED there.
#include <fcntl.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/security/probe_checks.h"
#include "tests/security/probe_harness.h"

namespace cocoon::security_test {
namespace {

struct SelfCase {
  std::string name;
  std::string probe;
  std::vector<std::string> args;
  SetupFn setup;
  // Kernels without this ABI cannot show the escape at all: skip, loudly.
  bool skip_if_blocked = false;
};

void PrintTo(const SelfCase& c, std::ostream* os) { *os << c.name; }

void SetupWritableTarget(Context& ctx) {
  std::string path = ctx.scratch->work() + "/writable.txt";
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
  ASSERT_GE(fd, 0);
  close(fd);
  chmod(path.c_str(), 0666);
  ctx.probe_args.push_back("path=" + path);
}

// The lease probe's file goes in the work dir, which the user owns (the
// probe's own directory, bin, is root's here).
void SetupLeaseDir(Context& ctx) { ctx.probe_args.push_back("dir=" + ctx.scratch->work()); }

std::vector<SelfCase> SelfCases() {
  return {
      {"mount_tmpfs", "mount", {"op=tmpfs"}, nullptr},
      {"namespaces_unshare_user", "namespaces", {"op=unshare_user"}, nullptr},
      {"namespaces_clone3_newuser", "namespaces", {"op=clone3_newuser"}, nullptr},
      {"namespaces_owned_above_the_command", "ns_owner", {}, nullptr},
      {"ptrace_attach", "ptrace", {"op=attach"}, nullptr},
      {"ptrace_process_vm_readv", "ptrace", {"op=process_vm_readv"}, nullptr},
      {"kernel_iface_keyctl", "kernel_iface", {"op=keyctl"}, nullptr},
      {"readonly_write", "readonly", {"op=write"}, SetupWritableTarget},
      {"readonly_unlink", "readonly", {"op=unlink"}, SetupWritableTarget},
      {"net_tcp_host_loopback", "net", {"op=tcp"}, SetupTcp},
      {"net_unix_abstract", "net", {"op=unix_abstract"}, SetupUnixAbstract},
      {"env_canary", "env_canary", {}, SetupCanary},
      {"fd_leak", "fd_leak", {}, SetupLeakedFds},
      {"tiocsti", "tiocsti", {}, SetupPty},
      {"fcntl_setlease", "lease", {}, SetupLeaseDir},
      {"netlink", "netlink", {}, nullptr},
      {"aio_io_setup", "aio", {}, nullptr},
      {"numa_mempolicy", "mempolicy", {}, nullptr},
      {"abi_x32", "abi", {"op=x32"}, nullptr, /*skip_if_blocked=*/true},
      {"abi_int80", "abi", {"op=int80"}, nullptr, /*skip_if_blocked=*/true},
  };
}

class ProbeSelfTest : public ::testing::TestWithParam<SelfCase> {};

TEST_P(ProbeSelfTest, DetectsTheEscapeWhenUnconfined) {
  const SelfCase& c = GetParam();
  if (std::string why = CannotRunAs(RunAs::kUser); !why.empty())
    GTEST_SKIP() << "SKIPPED, NOT PASSED: no unprivileged user: " << why;
  if (access("/usr/bin/unshare", X_OK) != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED: /usr/bin/unshare missing";
  Scratch scratch(RunAs::kUser);
  ASSERT_TRUE(scratch.ok());
  Context ctx;
  ctx.run_as = RunAs::kUser;
  ctx.scratch = &scratch;
  ctx.nonce = Nonce();
  if (c.setup) {
    c.setup(ctx);
  }
  if (HasFatalFailure()) return;
  std::vector<std::string> argv = {"/usr/bin/unshare", "-Urmpf", "--mount-proc", "--", scratch.StageProbe(c.probe)};
  argv.insert(argv.end(), c.args.begin(), c.args.end());
  argv.insert(argv.end(), ctx.probe_args.begin(), ctx.probe_args.end());
  std::vector<std::string> ids = HostIdArgs();
  argv.insert(argv.end(), ids.begin(), ids.end());
  ctx.launch.timeout_s = 30;
  LaunchResult r = LaunchRaw(RunAs::kUser, argv, ctx.launch);
  ASSERT_TRUE(r.started) << r.Describe();
  std::string name = c.probe;
  for (const auto& a : c.args)
    if (a.rfind("op=", 0) == 0) name += ":" + a.substr(3);
  Verdict v = FindVerdict(r.out + "\n" + r.err, name);
  ASSERT_TRUE(v.found) << "no verdict from the probe\n" << r.Describe();
  if (c.skip_if_blocked && v.kind == "BLOCKED")
    GTEST_SKIP() << "SKIPPED, NOT PASSED: this kernel does not offer the ABI at all (" << v.detail
                 << "); the sandboxed " << name << " case can only show that the call fails";
  EXPECT_EQ(v.kind, "ESCAPED") << "the probe does not detect its own escape when unconfined: " << v.kind << " "
                               << v.detail;
}

INSTANTIATE_TEST_SUITE_P(Unconfined, ProbeSelfTest, ::testing::ValuesIn(SelfCases()),
                         [](const ::testing::TestParamInfo<SelfCase>& info) { return info.param.name; });

}  // namespace
}  // namespace cocoon::security_test
