// The security probe suite: every case runs one escape probe (probes/*.c)
// inside a real sandbox started with the real `cocoon enforce` CLI under
// policies/strict.cocoon, once as root and once as the unprivileged user
// `cocoon-probe`, and asserts that the escape FAILED.
//
// A case passes only on positive evidence: the probe's BLOCKED verdict, or a
// PENDING verdict whose host-side check passes (the host sleep lives, no
// datagram arrived, nothing escaped into the work dir...), or an Outcome that
// shows the sandbox was killed for the attempt (seccomp kill, OOM, timeout
// where that is the expected result). No verdict, an ERROR verdict, a refused
// run or a missing Outcome all FAIL. A probe that needs a kernel feature this
// machine lacks is skipped with a loud reason; a skip never counts as a pass.
// After every run the host's /proc is scanned for the run's nonce: no process
// of the sandbox may outlive `cocoon enforce`.
#include <signal.h>

#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "tests/security/probe_checks.h"
#include "tests/security/probe_harness.h"

namespace cocoon::security_test {
namespace {

std::vector<ProbeCase> Ops(const std::string& probe, std::vector<std::string> ops) {
  std::vector<ProbeCase> cases;
  for (const auto& op : ops) {
    ProbeCase c;
    c.name = probe + "_" + op;
    c.probe = probe;
    c.args = {"op=" + op};
    cases.push_back(std::move(c));
  }
  return cases;
}

ProbeCase Case(std::string name, std::string probe, std::vector<std::string> args, SetupFn setup = nullptr,
               VerifyFn verify = nullptr) {
  ProbeCase c;
  c.name = std::move(name);
  c.probe = std::move(probe);
  c.args = std::move(args);
  c.setup = std::move(setup);
  c.verify = std::move(verify);
  return c;
}

std::vector<ProbeCase> AllCases() {
  std::vector<ProbeCase> all;
  auto add = [&all](std::vector<ProbeCase> more) { all.insert(all.end(), more.begin(), more.end()); };
  add(Ops("readonly", {"write", "append", "truncate", "rename", "unlink", "chmod", "chown", "utimes", "create"}));
  add(Ops("mount", {"tmpfs", "remount_rw", "bind_over", "umount", "fsopen", "open_tree", "setattr"}));
  add(Ops("namespaces", {"unshare_user", "unshare_mnt", "unshare_net", "unshare_pid", "unshare_ipc",
                         "unshare_uts", "unshare_cgroup", "unshare_time", "clone_newuser", "clone_newns",
                         "clone_newnet", "clone3_newuser"}));
  all.push_back(Case("setns_proc1", "setns", {}));
  all.push_back(Case("namespaces_owned_above_the_command", "ns_owner", {}));
  add(Ops("ptrace", {"traceme", "attach", "seize", "process_vm_readv", "process_vm_writev", "pidfd_getfd"}));
  add(Ops("kernel_iface", {"keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
                           "io_uring_setup", "kexec_load", "init_module", "iopl", "syslog", "personality"}));
  all.push_back(Case("personality", "personality", {}));
  // The prologue alone under `default allow` (its own personality refusal).
  ProbeCase permissive_personality = Case("personality_permissive_default", "personality", {});
  permissive_personality.policy = std::string(COCOON_SOURCE_DIR) + "/tests/security/policies/permissive.cocoon";
  all.push_back(permissive_personality);
  add(Ops("abi", {"x32", "int80"}));
  all.push_back(Case("tiocsti", "tiocsti", {}, SetupPty, VerifyPtyClean));
  all.push_back(Case("fcntl_setlease", "lease", {}));
  all.push_back(Case("open_by_handle_at", "open_by_handle", {}, SetupFileHandle));
  all.push_back(Case("kill_host_pid", "kill_host", {}, SetupHostSleep, VerifyHostSleepAlive));
  all.push_back(Case("host_processes_hidden", "host_procs", {}, SetupHostSleep, VerifyHostSleepAlive));
  all.push_back(Case("net_tcp_host_loopback", "net", {"op=tcp"}, SetupTcp, VerifyTcp));
  all.push_back(Case("net_udp_host_loopback", "net", {"op=udp"}, SetupUdp, VerifyUdp));
  all.push_back(Case("net_unix_abstract", "net", {"op=unix_abstract"}, SetupUnixAbstract, VerifyUnixAbstract));
  add(Ops("net", {"raw", "packet", "vsock", "alg"}));
  all.push_back(Case("netlink", "netlink", {}));
  all.push_back(Case("aio_io_setup", "aio", {}));
  all.push_back(Case("numa_mempolicy", "mempolicy", {}));
  all.push_back(Case("env_canary", "env_canary", {}, SetupCanary));
  all.push_back(Case("fd_leak", "fd_leak", {}, SetupLeakedFds));
  all.push_back(Case("setuid_helper", "setuid", {}, SetupSetuidHelper));
  all.push_back(Case("fork_bomb", "fork_bomb", {"max=4096"}, nullptr, VerifyForkBomb));
  ProbeCase memory = Case("memory_bomb", "memory_bomb", {"mib=512"});
  memory.oom_is_blocked = true;
  all.push_back(memory);
  all.push_back(Case("disk_fill", "disk_fill", {"max_mib=2048"}, nullptr, VerifyDiskFill));
  all.push_back(Case("output_flood_1gib", "output_flood", {"mib=1024"}, nullptr, VerifyOutputFlood));
  all.push_back(Case("output_flood_nul_256mib", "output_flood", {"mib=256", "byte=0"}, nullptr, VerifyOutputFlood));
  ProbeCase loop = Case("infinite_loop_timeout", "infinite_loop", {"op=spin"}, nullptr, VerifyTimedOut);
  loop.expect = Expect::kTimeout;
  all.push_back(loop);
  ProbeCase loop124 = Case("infinite_loop_exit_124", "infinite_loop", {"op=sleep"}, nullptr, VerifyExit124);
  loop124.expect = Expect::kTimeout;
  loop124.json = false;
  all.push_back(loop124);
  all.push_back(Case("daemon_outlives_parent", "daemon", {}, nullptr, VerifyDaemonGone));
  all.push_back(Case("work_dir_links", "links", {}, nullptr, VerifyLinks));
  all.push_back(Case("core_dump", "core_dump", {}, nullptr, VerifyNoCoreFile));
  all.push_back(Case("rtprio", "rtprio", {}));
  return all;
}

class SecurityProbeTest : public ::testing::TestWithParam<std::tuple<ProbeCase, RunAs>> {};

// Judges a run that printed no verdict line: only an Outcome showing the
// sandbox was killed for the attempt counts as blocked.
void JudgeWithoutVerdict(const ProbeCase& c, const LaunchResult& r) {
  if (!r.outcome) {
    ADD_FAILURE() << "no verdict and no Outcome\n" << r.Describe();
    return;
  }
  const auto& o = *r.outcome;
  std::string reason = JsonString(o, "termination_reason");
  if (reason.find("seccomp") != std::string::npos || JsonInt(o, "signal", 0) == SIGSYS) return;
  if (c.oom_is_blocked && (JsonBool(o, "oom_killed") || reason.find("oom") != std::string::npos)) return;
  ADD_FAILURE() << "the probe printed no verdict and the sandbox was not killed for the attempt\n"
                << o.dump(1).substr(0, 6000);
}

TEST_P(SecurityProbeTest, EscapeFails) {
  const auto& [c, run_as] = GetParam();
  if (std::string why = CannotRunAs(run_as); !why.empty())
    GTEST_SKIP() << "SKIPPED, NOT PASSED: cannot run as " << RunAsName(run_as) << ": " << why;
  Scratch scratch(run_as);
  ASSERT_TRUE(scratch.ok()) << "cannot make the scratch dir";
  Context ctx;
  ctx.run_as = run_as;
  ctx.scratch = &scratch;
  ctx.nonce = Nonce();
  if (c.setup) c.setup(ctx);
  if (HasFatalFailure()) return;
  if (!ctx.skip_reason.empty()) GTEST_SKIP() << "SKIPPED, NOT PASSED: " << ctx.skip_reason;

  std::string probe = scratch.StageProbe(c.probe);
  ctx.launch.run_as = run_as;
  ctx.launch.cocoon_args = {c.policy.empty() ? PolicyPath() : c.policy, "--work", scratch.work(), "--copy", probe};
  if (c.json) ctx.launch.cocoon_args.push_back("--json");
  ctx.launch.cocoon_args.insert(ctx.launch.cocoon_args.end(), ctx.cocoon_args.begin(), ctx.cocoon_args.end());
  ctx.launch.command = {"/work/probe_" + c.probe};
  ctx.launch.command.insert(ctx.launch.command.end(), c.args.begin(), c.args.end());
  ctx.launch.command.insert(ctx.launch.command.end(), ctx.probe_args.begin(), ctx.probe_args.end());
  std::vector<std::string> ids = HostIdArgs();
  ctx.launch.command.insert(ctx.launch.command.end(), ids.begin(), ids.end());
  ctx.launch.command.push_back("run=" + ctx.nonce);
  if (c.probe == "daemon") ctx.launch.command.push_back("marker=" + ctx.nonce);

  LaunchResult r = Launch(ctx.launch);
  ASSERT_TRUE(r.started) << r.Describe();
  ASSERT_FALSE(r.harness_killed) << "cocoon did not return within " << ctx.launch.timeout_s << "s\n" << r.Describe();
  if (c.json) {
    ASSERT_TRUE(r.outcome.has_value()) << "cocoon printed no JSON Outcome\n" << r.Describe();
  }

  // No process of the sandbox outlives cocoon (checked from the host).
  std::vector<pid_t> left = HostProcessesWith("run=" + ctx.nonce);
  EXPECT_TRUE(left.empty()) << "ESCAPE: " << left.size() << " sandbox process(es) outlived cocoon";
  for (pid_t pid : left) kill(pid, SIGKILL);

  std::string text = r.outcome ? OutcomeStream(*r.outcome, "stdout") + "\n" + OutcomeStream(*r.outcome, "stderr")
                               : r.out + "\n" + r.err;
  Verdict v = FindVerdict(text, VerdictName(c));
  RecordProperty("verdict", v.found ? v.kind + " " + v.detail : "(none)");
  if (v.kind == "SKIP") GTEST_SKIP() << "SKIPPED, NOT PASSED: probe " << VerdictName(c) << ": " << v.detail;
  EXPECT_NE(v.kind, "ESCAPED") << "ESCAPE (" << RunAsName(run_as) << "): " << VerdictName(c) << ": " << v.detail;
  EXPECT_NE(v.kind, "ERROR") << "the probe could not make its attempt: " << v.detail << "\n" << r.Describe();
  if (c.expect == Expect::kBlocked && !v.found) JudgeWithoutVerdict(c, r);
  if (c.verify) c.verify(ctx, r, v);
  if (v.found) std::printf("[  VERDICT ] %s as %s: %s %s\n", VerdictName(c).c_str(), RunAsName(run_as),
                           v.kind.c_str(), v.detail.c_str());
}

// The other side of the netlink refusal: it belongs to the sandbox's
// namespace holding only loopback (the network off, or an allow-list, whose
// connections the supervisor makes from the host). A profile that turns the
// network on keeps netlink (getifaddrs, `ip`, interface lookups), so under it
// the probe's sockets open, which it reports as ESCAPED; its queues are then
// not charged to the memory cgroup (docs/security.md, "What is not
// defended"). Under an allow-list they stay refused (BLOCKED).
Verdict NetlinkVerdictUnder(RunAs run_as, const std::string& policy_file) {
  Scratch scratch(run_as);
  EXPECT_TRUE(scratch.ok()) << "cannot make the scratch dir";
  LaunchOptions launch;
  launch.run_as = run_as;
  launch.cocoon_args = {std::string(COCOON_SOURCE_DIR) + "/tests/security/policies/" + policy_file, "--work",
                        scratch.work(), "--copy", scratch.StageProbe("netlink"), "--json"};
  launch.command = {"/work/probe_netlink"};
  std::vector<std::string> ids = HostIdArgs();
  launch.command.insert(launch.command.end(), ids.begin(), ids.end());
  LaunchResult r = Launch(launch);
  EXPECT_TRUE(r.started) << r.Describe();
  if (!r.outcome.has_value()) {
    ADD_FAILURE() << "cocoon printed no JSON Outcome\n" << r.Describe();
    return {};
  }
  Verdict v = FindVerdict(OutcomeStream(*r.outcome, "stdout") + "\n" + OutcomeStream(*r.outcome, "stderr"), "netlink");
  v.detail += "\n" + r.Describe();
  return v;
}

class NetworkOnTest : public ::testing::TestWithParam<RunAs> {};

TEST_P(NetworkOnTest, NetlinkSocketsStillOpen) {
  const RunAs run_as = GetParam();
  if (std::string why = CannotRunAs(run_as); !why.empty())
    GTEST_SKIP() << "SKIPPED, NOT PASSED: cannot run as " << RunAsName(run_as) << ": " << why;
  Verdict v = NetlinkVerdictUnder(run_as, "network_on.cocoon");
  EXPECT_EQ(v.kind, "ESCAPED") << "with the network on, netlink sockets must still open: " << v.kind << " "
                               << v.detail;
}

TEST_P(NetworkOnTest, AnAllowListStillRefusesNetlink) {
  const RunAs run_as = GetParam();
  if (std::string why = CannotRunAs(run_as); !why.empty())
    GTEST_SKIP() << "SKIPPED, NOT PASSED (security check): cannot run as " << RunAsName(run_as) << ": " << why;
  Verdict v = NetlinkVerdictUnder(run_as, "network_allow_list.cocoon");
  EXPECT_EQ(v.kind, "BLOCKED") << "an allow-list runs in a loopback-only namespace: netlink must stay refused: "
                               << v.kind << " " << v.detail;
}

INSTANTIATE_TEST_SUITE_P(NetworkOn, NetworkOnTest, ::testing::Values(RunAs::kRoot, RunAs::kUser),
                         [](const ::testing::TestParamInfo<RunAs>& info) { return RunAsName(info.param); });

std::string CaseName(const ::testing::TestParamInfo<std::tuple<ProbeCase, RunAs>>& info) {
  return std::get<0>(info.param).name + "_as_" + RunAsName(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(Strict, SecurityProbeTest,
                         ::testing::Combine(::testing::ValuesIn(AllCases()),
                                            ::testing::Values(RunAs::kRoot, RunAs::kUser)),
                         CaseName);

}  // namespace
}  // namespace cocoon::security_test
