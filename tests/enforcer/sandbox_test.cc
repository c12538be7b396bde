// Real sandboxes (LABELS integration). Each test runs a command under the
// enforcer and asserts what the isolation must guarantee. The same binary is
// run by ctest as root and as an unprivileged user (see CMakeLists.txt).
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "enforcer/outcome.h"
#include "enforcer/sandbox.h"
#include "enforcer/workdir/scratch_dir.h"
#include "tests/enforcer/test_util.h"

namespace cocoon::enforcer {
namespace {

using testing::AssembleFilter;
using testing::MakeRequest;
using testing::TestPolicy;

Outcome MustRun(SandboxRequest request) {
  auto outcome = RunSandbox(std::move(request));
  EXPECT_TRUE(outcome.ok()) << outcome.status().ToString();
  return outcome.ok() ? *outcome : Outcome{};
}

Outcome Sh(const std::string& script, const ir::Policy& policy = TestPolicy()) {
  return MustRun(MakeRequest(policy, {"/bin/sh", "-c", script}));
}

std::string ReadLink(const std::string& path) {
  char buffer[256];
  ssize_t n = readlink(path.c_str(), buffer, sizeof(buffer) - 1);
  return n < 0 ? "" : std::string(buffer, static_cast<size_t>(n));
}

// Host pids whose pid namespace is `ns` ("pid:[4026...]").
std::vector<int> HostPidsInNamespace(const std::string& ns) {
  std::vector<int> pids;
  DIR* dir = opendir("/proc");
  while (dir != nullptr) {
    struct dirent* entry = readdir(dir);
    if (entry == nullptr) break;
    int pid = atoi(entry->d_name);
    if (pid > 0 && ReadLink("/proc/" + std::string(entry->d_name) + "/ns/pid") == ns) pids.push_back(pid);
  }
  if (dir != nullptr) closedir(dir);
  return pids;
}

TEST(SandboxTest, TrueExitsZero) {
  Outcome outcome = MustRun(MakeRequest(TestPolicy(), {"/bin/true"}));
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_EQ(outcome.termination_reason, TerminationReason::kExited);
  EXPECT_EQ(outcome.policy_name, "enforcer-test");
}

TEST(SandboxTest, ExitCodeAndPathLookup) {
  Outcome outcome = MustRun(MakeRequest(TestPolicy(), {"sh", "-c", "echo out; echo err >&2; exit 7"}));
  EXPECT_EQ(outcome.exit_code, 7);
  EXPECT_EQ(outcome.stdout_data, "out\n");
  EXPECT_EQ(outcome.stderr_data, "err\n");
  EXPECT_EQ(ShellExitStatus(outcome), 7);
}

TEST(SandboxTest, MissingCommandIsRefusedClearly) {
  auto outcome = RunSandbox(MakeRequest(TestPolicy(), {"/usr/bin/definitely-not-here"}));
  ASSERT_FALSE(outcome.ok());
  EXPECT_NE(outcome.status().message().find("execve"), std::string::npos) << outcome.status().message();
  EXPECT_FALSE(RunSandbox(MakeRequest(TestPolicy(), {})).ok());
}

TEST(SandboxTest, ProcOneIsTheSandboxAndHostProcessesAreInvisible) {
  Outcome outcome = Sh("cat /proc/1/comm; ls /proc | grep -c '^[0-9]'");
  ASSERT_EQ(outcome.exit_code, 0) << outcome.stderr_data;
  // pid 1 is our sh; only sh, ls and grep (at most) exist in the namespace.
  EXPECT_EQ(outcome.stdout_data.substr(0, 3), "sh\n");
  int count = atoi(outcome.stdout_data.substr(3).c_str());
  EXPECT_GE(count, 1);
  EXPECT_LE(count, 3) << outcome.stdout_data;
}

TEST(SandboxTest, ReadOnlyMountsCannotBeWritten) {
  Outcome outcome = Sh("echo x > /usr/cocoon-probe; echo rc=$?; touch /etc/cocoon-probe; echo rc=$?; "
                       "mkdir /cocoon-probe; echo rc=$?");
  EXPECT_EQ(outcome.stdout_data, "rc=2\nrc=1\nrc=1\n") << outcome.stderr_data;  // dash: 2 for a failed redirection
  EXPECT_NE(outcome.stderr_data.find("Read-only file system"), std::string::npos);
  struct stat st;
  EXPECT_NE(stat("/usr/cocoon-probe", &st), 0);
  EXPECT_NE(stat("/etc/cocoon-probe", &st), 0);
}

// Merged /usr: a top-level host symlink into a bound /usr (/bin -> usr/bin)
// is recreated as that symlink, not bound a second time; it is as read-only
// as /usr, and the root it lives on cannot be changed. Without /usr bound,
// the same path is still a bind of what it points to.
TEST(SandboxTest, MergedUsrSymlinksAreTheHostsAndReadOnly) {
  char host_link[PATH_MAX] = {};
  if (readlink("/bin", host_link, sizeof(host_link) - 1) <= 0) {
    GTEST_SKIP() << "SKIPPED: this host's /bin is not a symlink (no merged /usr): nothing to recreate";
  }
  Outcome outcome = Sh("readlink /bin; test -x /bin/sh && echo exec-ok; touch /bin/cocoon-probe; echo rc=$?; "
                       "ln -sfn /tmp /bin; echo rc=$?; readlink /bin");
  EXPECT_EQ(outcome.stdout_data, std::string(host_link) + "\nexec-ok\nrc=1\nrc=1\n" + host_link + "\n")
      << outcome.stderr_data;

  ir::Policy without_usr = TestPolicy();
  std::erase_if(without_usr.filesystem.mounts, [](const ir::Mount& m) { return m.target == "/usr"; });
  Outcome bound = MustRun(MakeRequest(without_usr, {"/bin/sh", "-c", "test -L /bin || echo bound; test -d /usr || echo no-usr"}));
  EXPECT_EQ(bound.stdout_data, "bound\nno-usr\n") << bound.stderr_data;
}

TEST(SandboxTest, WritablePlacesWork) {
  Outcome outcome = Sh("echo hi > /tmp/a && cat /tmp/a && echo w > /work/b && cat /work/b && pwd");
  EXPECT_EQ(outcome.stdout_data, "hi\nw\n/work\n") << outcome.stderr_data;
}

TEST(SandboxTest, OnlyLoopbackWhenNetworkOff) {
  Outcome outcome = Sh("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
  EXPECT_EQ(outcome.stdout_data, "lo\n") << outcome.stderr_data;
  Outcome up = Sh("cat /sys/class/net/lo/operstate 2>/dev/null || grep -c . /proc/net/if_inet6 2>/dev/null || echo none");
  EXPECT_EQ(up.exit_code, 0);
}

// Network off: the namespace is the sandbox's own, loopback is up and works,
// nothing else is reachable, and no process but the command's is left in the
// sandbox when it runs.
TEST(SandboxTest, OwnNetworkNamespaceWithWorkingLoopbackAndNoOtherProcess) {
  // Builtins only after readlink, so every process listed is the shell (pid 1).
  Outcome outcome = Sh("readlink /proc/self/ns/net; for f in /proc/[0-9]*/comm; do read c < $f; echo $c; done");
  std::string host_ns = ReadLink("/proc/self/ns/net");
  ASSERT_FALSE(host_ns.empty());
  size_t newline = outcome.stdout_data.find('\n');
  ASSERT_NE(newline, std::string::npos) << outcome.stderr_data;
  std::string sandbox_ns = outcome.stdout_data.substr(0, newline);
  EXPECT_EQ(sandbox_ns.rfind("net:[", 0), 0u) << sandbox_ns;
  EXPECT_NE(sandbox_ns, host_ns);
  EXPECT_EQ(outcome.stdout_data.substr(newline + 1), "sh\n") << "a process other than the command is left";
  const char* script =
      "import socket\n"
      "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(1)\n"
      "c = socket.create_connection(s.getsockname()); a, _ = s.accept(); c.sendall(b'lo'); print(a.recv(2).decode())\n"
      "try:\n"
      "    socket.create_connection(('192.0.2.1', 80), timeout=1); print('reached')\n"
      "except OSError as e:\n"
      "    print(e.errno)\n";
  Outcome python = MustRun(MakeRequest(TestPolicy(), {"/usr/bin/python3", "-I", "-S", "-c", script}));
  EXPECT_EQ(python.stdout_data, "lo\n101\n") << python.stderr_data;  // ENETUNREACH
}

// An ignored signal survives clone and execve: the sandbox must start with
// default dispositions whatever its caller ignores or handles.
TEST(SandboxTest, SignalsStartAtTheirDefaults) {
  struct sigaction ignore {}, handle {}, old_pipe {}, old_usr1 {}, old_usr2 {};
  ignore.sa_handler = SIG_IGN;
  handle.sa_handler = [](int) {};
  ASSERT_EQ(sigaction(SIGPIPE, &ignore, &old_pipe), 0);
  ASSERT_EQ(sigaction(SIGUSR1, &ignore, &old_usr1), 0);
  ASSERT_EQ(sigaction(SIGUSR2, &handle, &old_usr2), 0);
  // cat installs no handler of its own (grep does: SIGSEGV), so its SigCgt
  // shows whether a handler leaked through too.
  Outcome outcome = MustRun(MakeRequest(TestPolicy(), {"/bin/cat", "/proc/self/status"}));
  sigaction(SIGPIPE, &old_pipe, nullptr);
  sigaction(SIGUSR1, &old_usr1, nullptr);
  sigaction(SIGUSR2, &old_usr2, nullptr);
  for (const char* line : {"\nSigBlk:\t0000000000000000\n", "\nSigIgn:\t0000000000000000\n",
                           "\nSigCgt:\t0000000000000000\n"}) {
    EXPECT_NE(outcome.stdout_data.find(line), std::string::npos) << line << outcome.stdout_data;
  }
}

TEST(SandboxTest, EnvironmentIsOnlyThePolicys) {
  setenv("COCOON_TEST_CANARY_SECRET", "hunter2", 1);
  Outcome outcome = MustRun(MakeRequest(TestPolicy(), {"/usr/bin/env"}));
  unsetenv("COCOON_TEST_CANARY_SECRET");
  EXPECT_EQ(outcome.stdout_data, "HOME=/work\nPATH=/usr/bin:/bin\n");
}

TEST(SandboxTest, NoHostFdLeaks) {
  int leaked = open("/etc/hostname", O_RDONLY);  // deliberately not O_CLOEXEC
  ASSERT_GE(leaked, 0);
  Outcome outcome = MustRun(MakeRequest(TestPolicy(), {"/bin/ls", "/proc/self/fd"}));
  close(leaked);
  EXPECT_EQ(outcome.stdout_data, "0\n1\n2\n3\n") << "only stdio and ls's own dir fd";
}

TEST(SandboxTest, NoCapabilitiesNoNewPrivsNoTty) {
  Outcome outcome = Sh("grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status; "
                       "id -u; id -g; hostname; test -e /dev/tty && echo tty || echo notty");
  EXPECT_NE(outcome.stdout_data.find("CapInh:\t0000000000000000"), std::string::npos) << outcome.stdout_data;
  EXPECT_NE(outcome.stdout_data.find("CapPrm:\t0000000000000000"), std::string::npos);
  EXPECT_NE(outcome.stdout_data.find("CapEff:\t0000000000000000"), std::string::npos);
  EXPECT_NE(outcome.stdout_data.find("CapBnd:\t0000000000000000"), std::string::npos);
  EXPECT_NE(outcome.stdout_data.find("CapAmb:\t0000000000000000"), std::string::npos);
  EXPECT_NE(outcome.stdout_data.find("NoNewPrivs:\t1"), std::string::npos);
  EXPECT_NE(outcome.stdout_data.find("Seccomp:\t2"), std::string::npos);
  EXPECT_NE(outcome.stdout_data.find("65534\n65534\ncocoon\nnotty\n"), std::string::npos) << outcome.stdout_data;
}

TEST(SandboxTest, RlimitsApplied) {
  Outcome outcome = Sh("ulimit -c; ulimit -n; ulimit -r");
  EXPECT_EQ(outcome.stdout_data, "0\n1024\n0\n") << outcome.stderr_data;
}

TEST(SandboxTest, TimeoutKillsEveryProcess) {
  ir::Policy policy = TestPolicy();
  policy.limits.wall_time_ms = {true, 700, ir::Enforcement::kRequired};
  SandboxRequest request = MakeRequest(policy, {"/bin/sh", "-c", "sleep 100 & (setsid sleep 100 &); echo started; wait"});
  auto sandbox = Sandbox::Prepare(std::move(request));
  ASSERT_TRUE(sandbox.ok()) << sandbox.status().ToString();
  auto outcome = (*sandbox)->Run();
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_TRUE(outcome->timed_out);
  EXPECT_EQ(outcome->termination_reason, TerminationReason::kTimeout);
  EXPECT_EQ(ShellExitStatus(*outcome), 124);
  EXPECT_GE(outcome->wall_ms, 600u);
  EXPECT_LT(outcome->wall_ms, 5000u);
  pid_t init = (*sandbox)->pid();
  EXPECT_NE(kill(init, 0), 0) << "the sandbox init was reaped";
}

TEST(SandboxTest, NoProcessSurvivesTimeoutOrExit) {
  for (const char* script : {"(setsid sleep 100 &); sleep 100 & echo started; wait",
                             "(setsid sleep 100 &); sleep 100 & echo started; exit 0"}) {
    ir::Policy policy = TestPolicy();
    policy.limits.wall_time_ms = {true, 800, ir::Enforcement::kRequired};
    SandboxRequest request = MakeRequest(policy, {"/bin/sh", "-c", script});
    std::string ns;
    Sandbox* sandbox_ptr = nullptr;
    request.on_output = [&](OutputStream, std::string_view) {
      if (ns.empty() && sandbox_ptr != nullptr) ns = ReadLink("/proc/" + std::to_string(sandbox_ptr->pid()) + "/ns/pid");
    };
    auto sandbox = Sandbox::Prepare(std::move(request));
    ASSERT_TRUE(sandbox.ok()) << sandbox.status().ToString();
    sandbox_ptr = sandbox->get();
    auto outcome = (*sandbox)->Run();
    ASSERT_TRUE(outcome.ok());
    ASSERT_FALSE(ns.empty()) << "could not observe the sandbox's pid namespace";
    EXPECT_TRUE(HostPidsInNamespace(ns).empty()) << script;
  }
}

TEST(SandboxTest, OutputCapBoundsMemoryAndCountsEverything) {
  ir::Policy policy = TestPolicy();
  policy.limits.output_bytes = {true, 1000, ir::Enforcement::kRequired};
  Outcome outcome = MustRun(MakeRequest(policy, {"/bin/sh", "-c", "head -c 50000000 /dev/zero; echo done >&2"}));
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_EQ(outcome.stdout_data.size(), 1000u);
  EXPECT_TRUE(outcome.stdout_truncated);
  EXPECT_EQ(outcome.stdout_bytes, 50000000u);
  EXPECT_EQ(outcome.stderr_data, "done\n");
  EXPECT_FALSE(outcome.stderr_truncated);
}

TEST(SandboxTest, StreamOnlyDeliversChunksAndKeepsNothing) {
  SandboxRequest request = MakeRequest(TestPolicy(), {"/bin/sh", "-c", "echo a; echo b >&2"});
  std::string seen_out, seen_err;
  request.output_mode = OutputMode::kStreamOnly;
  request.on_output = [&](OutputStream stream, std::string_view chunk) {
    (stream == OutputStream::kStdout ? seen_out : seen_err).append(chunk);
  };
  Outcome outcome = MustRun(std::move(request));
  EXPECT_EQ(seen_out, "a\n");
  EXPECT_EQ(seen_err, "b\n");
  EXPECT_TRUE(outcome.stdout_data.empty());
  EXPECT_EQ(outcome.stdout_bytes, 2u);
}

TEST(SandboxTest, SeccompErrnoAndKill) {
  // mkdir(83) / mkdirat(258) -> EPERM
  std::string deny = AssembleFilter({{83, SECCOMP_RET_ERRNO | EPERM}, {258, SECCOMP_RET_ERRNO | EPERM}});
  Outcome denied = MustRun(MakeRequest(TestPolicy(), {"/bin/mkdir", "/tmp/x"}, deny));
  EXPECT_NE(denied.exit_code, 0);
  EXPECT_NE(denied.stderr_data.find("Operation not permitted"), std::string::npos) << denied.stderr_data;
  std::string kill = AssembleFilter({{83, SECCOMP_RET_KILL_PROCESS}, {258, SECCOMP_RET_KILL_PROCESS}});
  Outcome killed = MustRun(MakeRequest(TestPolicy(), {"/bin/mkdir", "/tmp/x"}, kill));
  EXPECT_EQ(killed.signal, SIGSYS);
  EXPECT_EQ(killed.termination_reason, TerminationReason::kSeccompKill);
}

// A SIGSYS death is taken for a seccomp kill (SetTermination), and that
// holds because the command is the init of its own pid namespace: the kernel
// drops every signal an init has no handler for unless it forces it
// (pid_namespaces(7)), and on x86_64 only seccomp forces SIGSYS (a KILL or an
// unhandled TRAP action). A SIGSYS the command sends itself, even queued
// while a handler was set and delivered after SIG_DFL is back, or one from
// the host, is dropped, and a child's self-inflicted SIGSYS death is that
// child's exit status, not the init's signal. None of these is a
// `seccomp_kill` (docs/security.md, "Supervision").
TEST(SandboxTest, ASelfSentSigsysIsNoSeccompKill) {
  Outcome self = Sh("kill -SYS $$; echo survived");
  EXPECT_EQ(self.termination_reason, TerminationReason::kExited);
  EXPECT_EQ(self.stdout_data, "survived\n");
  Outcome queued = MustRun(MakeRequest(
      TestPolicy(), {"/usr/bin/python3", "-c",
                     "import os, signal\n"
                     "signal.signal(signal.SIGSYS, lambda *a: None)\n"
                     "signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGSYS])\n"
                     "os.kill(os.getpid(), signal.SIGSYS)\n"
                     "signal.signal(signal.SIGSYS, signal.SIG_DFL)\n"
                     "signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGSYS])\n"
                     "print('survived', os.getpid())\n"}));
  EXPECT_EQ(queued.termination_reason, TerminationReason::kExited) << queued.stderr_data;
  EXPECT_EQ(queued.stdout_data, "survived 1\n") << queued.stderr_data;
  Outcome child = Sh("/bin/sh -c 'kill -SYS $$'; exit $?");
  EXPECT_EQ(child.termination_reason, TerminationReason::kExited);
  EXPECT_EQ(child.exit_code, 128 + SIGSYS);
}

TEST(SandboxTest, UserNotificationLogAndKill) {
  std::string bpf = AssembleFilter({{83, SECCOMP_RET_USER_NOTIF}, {258, SECCOMP_RET_USER_NOTIF}});
  const char* sidecar_log = R"({"format":"cocoon.seccomp.v1","needs_listener":true,
      "default_action":{"action":"errno","errno":38},
      "supervised":[{"syscall":"mkdir","action":"log","numbers":{"x86_64":83}},
                    {"syscall":"mkdirat","action":"log","numbers":{"x86_64":258}}]})";
  SandboxRequest request = MakeRequest(TestPolicy(), {"/bin/sh", "-c", "mkdir /tmp/x && mkdir /tmp/y && ls /tmp"}, bpf);
  request.seccomp_sidecar_json = sidecar_log;
  Outcome logged = MustRun(std::move(request));
  EXPECT_EQ(logged.exit_code, 0) << logged.stderr_data;
  EXPECT_EQ(logged.stdout_data, "x\ny\n");
  ASSERT_EQ(logged.denied_syscalls.size(), 1u);
  EXPECT_EQ(logged.denied_syscalls[0].action, "log");
  EXPECT_EQ(logged.denied_syscalls[0].count, 2u) << "coalesced";

  std::string sidecar_kill = sidecar_log;
  for (size_t pos; (pos = sidecar_kill.find("\"log\"")) != std::string::npos;) sidecar_kill.replace(pos, 5, "\"kill\"");
  request = MakeRequest(TestPolicy(), {"/bin/sh", "-c", "mkdir /tmp/x; echo survived"}, bpf);
  request.seccomp_sidecar_json = sidecar_kill;
  Outcome killed = MustRun(std::move(request));
  EXPECT_EQ(killed.termination_reason, TerminationReason::kSeccompKill);
  EXPECT_EQ(killed.stdout_data, "");
}

// A kill rule holds for the i386 calling convention (int 0x80) as well: the
// supervisor matches a notification on its architecture and number, and one
// the table has no rule for is killed, never given the default action
// (`default allow` turned such a kill rule into allow before).
TEST(SandboxTest, AKillRuleHoldsForInt80CallsAndAnUnlistedOneIsKilledToo) {
  std::vector<sock_filter> prog = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_I386, 0, 4),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 20, 0, 1),  // i386 getpid
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  std::string bpf(reinterpret_cast<const char*>(prog.data()), prog.size() * sizeof(sock_filter));
  // mov eax, 20; int 0x80; ret: getpid through the i386 entry, from python.
  const std::string script =
      "import ctypes,mmap\n"
      "m=mmap.mmap(-1,4096,prot=mmap.PROT_READ|mmap.PROT_WRITE|mmap.PROT_EXEC)\n"
      "m.write(bytes([0xb8,20,0,0,0,0xcd,0x80,0xc3]))\n"
      "f=ctypes.CFUNCTYPE(ctypes.c_long)(ctypes.addressof(ctypes.c_char.from_buffer(m)))\n"
      "print('int80 getpid', f(), flush=True)\n";
  for (const char* numbers : {R"({"x86":20,"x86_64":39})", R"({"x86_64":39})"}) {
    std::string sidecar = std::string(R"({"format":"cocoon.seccomp.v1","needs_listener":true,
        "default_action":{"action":"allow"},
        "supervised":[{"syscall":"getpid","action":"kill","numbers":)") + numbers + "}]}";
    SandboxRequest request = MakeRequest(TestPolicy(), {"/usr/bin/python3", "-c", script}, bpf);
    request.seccomp_sidecar_json = sidecar;
    Outcome killed = MustRun(std::move(request));
    EXPECT_EQ(killed.termination_reason, TerminationReason::kSeccompKill) << numbers << killed.stdout_data
                                                                          << killed.stderr_data;
    EXPECT_EQ(killed.stdout_data, "") << numbers;
    ASSERT_EQ(killed.denied_syscalls.size(), 1u) << numbers;
    EXPECT_EQ(killed.denied_syscalls[0].arch, "x86");
    EXPECT_EQ(killed.denied_syscalls[0].number, 20);
    EXPECT_EQ(killed.denied_syscalls[0].action, "kill");
  }
}

// `hide` on a path that is, or goes through, a symlink in a bound directory
// would leave the file readable (or mask something on the host): refused.
// Hiding the real path works and is what the message asks for.
TEST(SandboxTest, HideThroughASymlinkIsRefusedAndTheRealPathIsHidden) {
  char pattern[] = "/tmp/cocoon-hide-test-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  std::string dir = pattern;
  chmod(dir.c_str(), 0755);
  ASSERT_EQ(mkdir((dir + "/conf").c_str(), 0755), 0);
  std::ofstream(dir + "/conf/secret.txt") << "SECRET\n";
  chmod((dir + "/conf/secret.txt").c_str(), 0644);
  ASSERT_EQ(symlink((dir + "/conf").c_str(), (dir + "/cfg").c_str()), 0);  // absolute, as in the review
  ASSERT_EQ(symlink("conf/secret.txt", (dir + "/secretlink").c_str()), 0);
  auto policy_hiding = [&](std::vector<std::string> hidden) {
    ir::Policy policy = TestPolicy();
    policy.filesystem.mounts.push_back({ir::MountKind::kReadOnly, dir, "/data", 0, false});
    policy.filesystem.hidden = std::move(hidden);
    return policy;
  };
  const std::string show = "cat /data/conf/secret.txt /data/cfg/secret.txt /data/secretlink 2>&1; echo end";
  for (const char* through_link : {"/data/cfg/secret.txt", "/data/secretlink"}) {
    auto refused = RunSandbox(MakeRequest(policy_hiding({through_link}), {"/bin/sh", "-c", show}));
    ASSERT_FALSE(refused.ok()) << through_link << ": ran, printing " << refused->stdout_data;
    EXPECT_NE(refused.status().message().find("is or goes through a symlink"), std::string::npos)
        << refused.status().ToString();
  }
  Outcome hidden = MustRun(MakeRequest(policy_hiding({"/data/conf/secret.txt"}), {"/bin/sh", "-c", show}));
  EXPECT_EQ(hidden.stdout_data.find("SECRET"), std::string::npos) << hidden.stdout_data;
  EXPECT_NE(hidden.stdout_data.find("end"), std::string::npos) << hidden.stdout_data;
  ASSERT_EQ(system(("rm -rf " + dir).c_str()), 0);
}

// `hide` wins over a bind of the very same path (a parent's mount a child
// hides, `cocoon run --ro` of a path the base hides), over a bind nested in
// a bound directory, and over binds below the hidden path: each is covered
// by an empty read-only file or directory. Before, a mask found no host path
// "inside" a bind at its own target and was skipped, so every one of these
// showed the host's data.
TEST(SandboxTest, HideCoversABindOfThatPathAndBindsBelowIt) {
  char pattern[] = "/tmp/cocoon-hide-bind-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  std::string dir = pattern;
  chmod(dir.c_str(), 0755);
  for (const char* sub : {"/sub", "/other", "/w"}) ASSERT_EQ(mkdir((dir + sub).c_str(), 0755), 0);
  chmod((dir + "/w").c_str(), 0777);
  for (const char* file : {"/secret.txt", "/sub/s2", "/other/o2", "/w/keep"}) {
    std::ofstream(dir + file) << "TOPSECRET\n";
    chmod((dir + file).c_str(), 0666);
  }
  ir::Policy policy = TestPolicy();
  auto bind = [&](ir::MountKind kind, const std::string& source, const std::string& target) {
    policy.filesystem.mounts.push_back({kind, source, target, 0, false});
  };
  bind(ir::MountKind::kReadOnly, dir + "/secret.txt", "/x/secret.txt");  // a file, exactly hidden
  bind(ir::MountKind::kReadOnly, dir + "/sub", "/x/sub");                // a directory, exactly hidden
  bind(ir::MountKind::kReadOnly, dir + "/sub", "/deep/a/b");             // below a hidden path
  bind(ir::MountKind::kReadOnly, dir, "/data");                          // a bound directory ...
  bind(ir::MountKind::kReadOnly, dir + "/other", "/data/sub");           // ... with a bind in it, hidden
  bind(ir::MountKind::kWritable, dir + "/w", "/w");                      // writable, exactly hidden
  std::sort(policy.filesystem.mounts.begin(), policy.filesystem.mounts.end(),
            [](const ir::Mount& a, const ir::Mount& b) { return a.target < b.target; });
  policy.filesystem.hidden = {"/data/sub", "/deep", "/w", "/x/secret.txt", "/x/sub"};
  const std::string show =
      "cat /x/secret.txt /x/sub/s2 /deep/a/b/s2 /data/sub/o2 /w/keep 2>&1; "
      "echo leak > /w/keep 2>&1; echo new > /w/new 2>&1; "
      "test -e /x/secret.txt && test ! -s /x/secret.txt && echo empty-file; "
      "test -d /x/sub && echo dir-there; ls -A /x/sub /deep /data/sub /w; echo end";
  Outcome outcome = MustRun(MakeRequest(policy, {"/bin/sh", "-c", show}));
  EXPECT_EQ(outcome.stdout_data.find("TOPSECRET"), std::string::npos) << outcome.stdout_data;
  EXPECT_NE(outcome.stdout_data.find("empty-file"), std::string::npos) << outcome.stdout_data;
  EXPECT_NE(outcome.stdout_data.find("dir-there"), std::string::npos) << outcome.stdout_data;
  EXPECT_NE(outcome.stdout_data.find("end"), std::string::npos) << outcome.stdout_data;
  std::ifstream kept(dir + "/w/keep");
  std::string line;
  std::getline(kept, line);
  EXPECT_EQ(line, "TOPSECRET") << "the hidden writable bind was written through";
  EXPECT_FALSE(std::filesystem::exists(dir + "/w/new")) << "a file was created in the hidden writable bind";
  ASSERT_EQ(system(("rm -rf " + dir).c_str()), 0);
}

// A hidden host file shows in the sandbox under every name a bind gives it:
// `readonly DIR/data DIR/alias` with alias -> data binds both from DIR/data,
// and a bind of a directory inside a hidden one shows part of it. Each name
// is masked. Before, the mask landed only on the name the `hide` gave, and
// `cat DIR/data/secret` printed the secret.
TEST(SandboxTest, HideMasksEveryNameABindGivesTheHiddenFile) {
  char pattern[] = "/tmp/cocoon-hide-alias-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  std::string dir = pattern;
  chmod(dir.c_str(), 0755);
  for (const char* sub : {"/data", "/data/sub", "/top"}) ASSERT_EQ(mkdir((dir + sub).c_str(), 0755), 0);
  for (const char* file : {"/data/secret", "/data/sub/s2", "/top/t"}) {
    std::ofstream(dir + file) << "TOPSECRET\n";
    chmod((dir + file).c_str(), 0644);
  }
  ASSERT_EQ(symlink("data", (dir + "/alias").c_str()), 0);
  ir::Policy policy = TestPolicy();
  for (const char* bound : {"/data", "/alias", "/top"}) {
    policy.filesystem.mounts.push_back({ir::MountKind::kReadOnly, dir + bound, dir + bound, 0, false});
  }
  policy.filesystem.mounts.push_back({ir::MountKind::kReadOnly, dir + "/data/sub", "/elsewhere", 0, false});
  std::sort(policy.filesystem.mounts.begin(), policy.filesystem.mounts.end(),
            [](const ir::Mount& a, const ir::Mount& b) { return a.target < b.target; });
  const std::string show = "cat " + dir + "/data/secret " + dir + "/alias/secret /elsewhere/s2 " + dir +
                           "/data/sub/s2 2>&1; cat " + dir + "/top/t; echo end";
  policy.filesystem.hidden = {dir + "/alias/secret", dir + "/data/sub"};
  Outcome outcome = MustRun(MakeRequest(policy, {"/bin/sh", "-c", show}));
  // Only top/t, which is not hidden, is read; each hidden name is empty or gone.
  auto reads = [](const std::string& out) {
    size_t n = 0;
    for (size_t at = out.find("TOPSECRET"); at != std::string::npos; at = out.find("TOPSECRET", at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(reads(outcome.stdout_data), 1u) << outcome.stdout_data << outcome.stderr_data;
  EXPECT_NE(outcome.stdout_data.find("end"), std::string::npos) << outcome.stdout_data;
  policy.filesystem.hidden = {dir + "/data"};  // a directory: its alias and the bind of its sub/ too
  Outcome whole = MustRun(MakeRequest(policy, {"/bin/sh", "-c", show + "; ls -A " + dir + "/alias /elsewhere"}));
  EXPECT_EQ(reads(whole.stdout_data), 1u) << whole.stdout_data << whole.stderr_data;
  EXPECT_NE(whole.stdout_data.find("/elsewhere:\n\n"), std::string::npos) << whole.stdout_data;  // empty
  ASSERT_EQ(system(("rm -rf " + dir).c_str()), 0);
}

// On a merged-/usr host /bin is a link to usr/bin: `hide /bin/cat` is
// /usr/bin/cat as well, through the /usr bind. Before, /bin/cat was empty
// and /usr/bin/cat readable.
TEST(SandboxTest, HidingAMergedUsrAliasHidesTheRealPathToo) {
  char host_link[PATH_MAX] = {};
  if (readlink("/bin", host_link, sizeof(host_link) - 1) <= 0 || !std::filesystem::exists("/usr/bin/cat")) {
    GTEST_SKIP() << "SKIPPED, NOT PASSED (security check): this host's /bin is not a symlink (no merged /usr) or "
                    "has no /usr/bin/cat: the alias masking of /bin/cat was not checked";
  }
  ir::Policy policy = TestPolicy();
  policy.filesystem.hidden = {"/bin/cat"};
  Outcome outcome = MustRun(MakeRequest(policy, {"/usr/bin/sh", "-c", "wc -c < /bin/cat; wc -c < /usr/bin/cat"}));
  EXPECT_EQ(outcome.stdout_data, "0\n0\n") << outcome.stderr_data;
}

// A hidden /sbin on a merged-/usr host stays a bind (not the host's
// `sbin -> usr/sbin` link, which a mask could not cover: mount(2) would
// follow it), so the mask lands on it. Before, the link was made and the
// mask skipped, and `ls /sbin` listed the host's programs.
TEST(SandboxTest, AHiddenMergedUsrPathIsMaskedNotRecreatedAsALink) {
  char host_link[PATH_MAX] = {};
  if (readlink("/sbin", host_link, sizeof(host_link) - 1) <= 0) {
    GTEST_SKIP() << "SKIPPED, NOT PASSED (security check): this host's /sbin is not a symlink (no merged /usr): "
                    "no link to keep from being made";
  }
  ir::Policy policy = TestPolicy();
  policy.filesystem.hidden = {"/sbin"};
  Outcome outcome = MustRun(MakeRequest(policy, {"/bin/sh", "-c", "test -L /sbin && echo link; ls -A /sbin | wc -l"}));
  EXPECT_EQ(outcome.stdout_data, "0\n") << outcome.stderr_data;
}

// A path inside a bound host directory that someone on the host swaps for a
// symlink while the sandbox is being set up (here a thread exchanging
// conf/ with a link to another directory as fast as it can) never
// redirects a mount: the child opens its mount points without following
// symlinks, so each run either refuses (ELOOP, or the parent's own check)
// or hides the real file. Before, mount(2) followed the link at the moment
// of the swap, masked the other directory's file and left SECRET readable.
TEST(SandboxTest, AMountPointSwappedForASymlinkDuringSetupIsRefusedNeverMisplaced) {
  char pattern[] = "/tmp/cocoon-swap-test-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  std::string dir = pattern;
  chmod(dir.c_str(), 0755);
  for (const char* sub : {"/conf", "/elsewhere"}) ASSERT_EQ(mkdir((dir + sub).c_str(), 0755), 0);
  std::ofstream(dir + "/conf/secret.txt") << "SECRET\n";
  std::ofstream(dir + "/elsewhere/secret.txt") << "DECOY\n";
  for (const char* file : {"/conf/secret.txt", "/elsewhere/secret.txt"}) chmod((dir + file).c_str(), 0644);
  ASSERT_EQ(symlink((dir + "/elsewhere").c_str(), (dir + "/swap").c_str()), 0);
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    const std::string conf = dir + "/conf", swap = dir + "/swap";
    while (!stop.load()) syscall(SYS_renameat2, AT_FDCWD, conf.c_str(), AT_FDCWD, swap.c_str(), RENAME_EXCHANGE);
  });
  ir::Policy policy = TestPolicy();
  policy.filesystem.mounts.push_back({ir::MountKind::kReadOnly, dir, "/data", 0, false});
  policy.filesystem.hidden = {"/data/conf/secret.txt"};
  int ran = 0, refused = 0;
  for (int i = 0; i < 40; ++i) {
    auto outcome = RunSandbox(MakeRequest(policy, {"/bin/sh", "-c", "cat /data/conf/secret.txt /data/swap/secret.txt 2>/dev/null; true"}));
    if (!outcome.ok()) {
      ++refused;
      const std::string message = outcome.status().message();
      EXPECT_TRUE(message.find("after cocoon checked it") != std::string::npos ||
                  message.find("was replaced while cocoon checked it") != std::string::npos ||
                  message.find("hide the real path") != std::string::npos ||
                  message.find("must exist (and not be a symlink)") != std::string::npos)
          << message;
      continue;
    }
    ++ran;
    EXPECT_EQ(outcome->stdout_data.find("SECRET"), std::string::npos) << "run " << i << " read the hidden file";
  }
  stop = true;
  swapper.join();
  std::cerr << "[ swapped  ] " << ran << " runs hid the file, " << refused << " were refused\n";
  EXPECT_EQ(ran + refused, 40);
  ASSERT_EQ(system(("rm -rf " + dir).c_str()), 0);
}

// An optional read-only bind (the presets' `readonly optional /etc/fonts`)
// whose source comes and goes, or is swapped for a symlink that root must
// not follow (another user's), while sandboxes start: the parent checks the
// path and the child binds only the inode it checked, opened with no
// symlink followed. So each run sees the real directory, or nothing (the
// optional source was missing when checked), or is refused with a clear
// reason; never the directory the link points to, and never a failure that
// lets the run go on without saying so.
TEST(SandboxTest, AnOptionalBindSourceThatComesAndGoesNeverMountsAnythingElse) {
  if (geteuid() != 0) {
    GTEST_SKIP() << "SKIPPED, NOT PASSED (security check): as a user, a link of one's own is followed by design; "
                    "the optional bind's check-to-mount race with a link root must not follow was not checked";
  }
  char pattern[] = "/tmp/cocoon-optional-swap-XXXXXX";
  ASSERT_NE(mkdtemp(pattern), nullptr);
  const std::string dir = pattern;
  chmod(dir.c_str(), 0755);
  for (const char* sub : {"/real", "/secret"}) ASSERT_EQ(mkdir((dir + sub).c_str(), 0755), 0);
  std::ofstream(dir + "/real/f") << "REAL\n";
  std::ofstream(dir + "/secret/f") << "SECRET\n";
  ASSERT_EQ(symlink((dir + "/secret").c_str(), (dir + "/link").c_str()), 0);
  ASSERT_EQ(lchown((dir + "/link").c_str(), 65534, 65534), 0);  // not root's: root must not follow it
  const std::string source = dir + "/opt";
  std::atomic<bool> stop{false};
  std::thread swapper([&] {
    const std::string real = dir + "/real", link = dir + "/link";
    while (!stop.load()) {  // opt: the real directory, nothing, the link, nothing
      rename(real.c_str(), source.c_str());
      rename(source.c_str(), real.c_str());
      rename(link.c_str(), source.c_str());
      rename(source.c_str(), link.c_str());
    }
  });
  ir::Policy policy = TestPolicy();
  policy.filesystem.mounts.push_back({ir::MountKind::kReadOnly, source, "/mnt/opt", 0, true});
  int real = 0, skipped = 0, refused = 0;
  for (int i = 0; i < 40; ++i) {
    auto outcome = RunSandbox(MakeRequest(policy, {"/bin/sh", "-c", "cat /mnt/opt/f 2>/dev/null; echo end"}));
    if (!outcome.ok()) {
      ++refused;
      const std::string message = outcome.status().message();
      EXPECT_TRUE(message.find("after cocoon checked it") != std::string::npos ||
                  message.find("was replaced while cocoon checked it") != std::string::npos ||
                  message.find("a symlink owned by uid 65534") != std::string::npos)
          << message;
      continue;
    }
    EXPECT_EQ(outcome->stdout_data.find("SECRET"), std::string::npos) << "run " << i << " bound the link's target";
    EXPECT_NE(outcome->stdout_data.find("end"), std::string::npos) << outcome->stderr_data;
    (outcome->stdout_data.find("REAL") != std::string::npos ? real : skipped)++;
  }
  stop = true;
  swapper.join();
  std::cerr << "[ optional ] " << real << " runs saw the real directory, " << skipped << " skipped it, " << refused
            << " were refused\n";
  EXPECT_EQ(real + skipped + refused, 40);
  ASSERT_EQ(system(("rm -rf " + dir).c_str()), 0);
}

TEST(SandboxTest, CancelKillsTheSandbox) {
  SandboxRequest request = MakeRequest(TestPolicy(), {"/bin/sh", "-c", "echo go; sleep 100"});
  auto cancel = std::make_shared<CancelHandle>();
  request.cancel = cancel;
  request.on_output = [&](OutputStream, std::string_view) { cancel->Cancel(); };
  Outcome outcome = MustRun(std::move(request));
  EXPECT_EQ(outcome.termination_reason, TerminationReason::kCancelled);
  EXPECT_LT(outcome.wall_ms, 5000u);
}

TEST(SandboxTest, BadInputIsRefusedBeforeLaunch) {
  SandboxRequest request = MakeRequest(TestPolicy(), {"/bin/true"});
  request.seccomp_bpf = request.seccomp_bpf.substr(0, 7);
  EXPECT_FALSE(RunSandbox(request).ok()) << "BPF hash mismatch";
  request = MakeRequest(TestPolicy(), {"/bin/true"}, "1234567");
  auto status = RunSandbox(request);
  EXPECT_FALSE(status.ok());
  ir::Policy policy = TestPolicy();
  policy.filesystem.mounts.push_back({ir::MountKind::kReadOnly, "/nonexistent-cocoon", "/zz", 0, false});
  auto missing = RunSandbox(MakeRequest(policy, {"/bin/true"}));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent-cocoon"), std::string::npos) << missing.status().message();
  // The spec (and so this mistake) is built after clone, while the child
  // creates its namespaces: that child must be gone, reaped, when the
  // refusal is returned.
  errno = 0;
  EXPECT_EQ(waitpid(-1, nullptr, WNOHANG), -1);
  EXPECT_EQ(errno, ECHILD) << "a refused launch left a child process behind";
}

TEST(SandboxTest, MaskedPathsAreHidden) {
  ir::Policy policy = TestPolicy();
  policy.filesystem.hidden = {"/etc/hostname", "/etc/ssl"};
  Outcome outcome = Sh("wc -c < /etc/hostname; ls /etc/ssl | wc -l; cat /proc/kcore 2>/dev/null | wc -c", policy);
  EXPECT_EQ(outcome.stdout_data, "0\n0\n0\n") << outcome.stderr_data;
}

// The sandbox's own root owns its namespaces' sysctls (net.*, kernel.shm*),
// so file permissions alone would let it write them, capabilities or not.
// /proc/sys and friends are bound read-only over themselves: EROFS.
TEST(SandboxTest, KernelKnobsUnderProcAreReadOnlyEvenForTheSandboxRoot) {
  ir::Policy policy = TestPolicy();
  policy.user = {0, 0};
  Outcome outcome = Sh(
      "cat /proc/sys/net/ipv4/ip_forward >/dev/null && echo readable; "
      "(echo 1 > /proc/sys/net/ipv4/ip_forward) 2>&1 | grep -c 'Read-only file system'; "
      "(echo 1 > /proc/sys/kernel/shmmni) 2>&1 | grep -c 'Read-only file system'; "
      "awk '$5 == \"/proc/sys\" { print $6 }' /proc/self/mountinfo | cut -d, -f1",
      policy);
  EXPECT_EQ(outcome.stdout_data, "readable\n1\n1\nro\n") << outcome.stderr_data;
}

// Defence below seccomp: the filter here allows everything (the compiled
// prologue would refuse namespace creation with EPERM first), and still no
// user namespace can be made below the command's, where capabilities would
// return (the kernel's own limit in the sandbox's first user namespace:
// nested_userns.cc); the command holds none, and its namespaces are owned
// above it, so mounts stay as built.
TEST(SandboxTest, NoUserNamespaceBelowTheCommandsEvenWhenTheFilterAllowsIt) {
  Outcome outcome = Sh(
      "unshare -U true 2>&1 | grep -c 'No space left on device'; "
      "unshare -m true 2>&1 | grep -c 'Operation not permitted'; "
      "umount /usr 2>/dev/null || echo umount-refused; "
      "cat /proc/sys/user/max_user_namespaces");
  // The nested namespace's own limit is the kernel's default for a new
  // namespace; the limit that holds is its parent's, unreadable from here.
  EXPECT_EQ(outcome.stdout_data, "1\n1\numount-refused\n2147483647\n") << outcome.stderr_data;
}

// Device nodes are bound read-only: their data still flows (a read-only
// mount does not stop writes to a special file) but their metadata cannot
// change. /dev/shm is writable and noexec: no staging of binaries there.
TEST(SandboxTest, DevicesKeepWorkingButDevIsNoPlaceToChangeOrRun) {
  ir::Policy policy = TestPolicy();
  policy.user = {0, 0};
  Outcome outcome = Sh(
      "echo data > /dev/null && echo writes-ok; "
      "head -c 4 /dev/zero | wc -c; "
      "touch /dev/null 2>/dev/null || echo touch-refused; "
      "awk '$5 == \"/dev/null\" { print $6 }' /proc/self/mountinfo | cut -d, -f1; "
      "cp /bin/true /dev/shm/t && chmod +x /dev/shm/t && echo staged; "
      "/dev/shm/t 2>/dev/null; echo exec-rc=$?",
      policy);
  EXPECT_EQ(outcome.stdout_data, "writes-ok\n4\ntouch-refused\nro\nstaged\nexec-rc=126\n") << outcome.stderr_data;
}

// environment { inherit; unset NAME } passes the caller's environment minus
// the named variables.
TEST(SandboxTest, UnsetNamesLeaveAnInheritedEnvironment) {
  ir::Policy policy = TestPolicy();
  policy.environment.clear = false;
  policy.environment.unset = {"COCOON_TEST_SECRET"};
  setenv("COCOON_TEST_SECRET", "hunter2", 1);
  setenv("COCOON_TEST_VISIBLE", "shown", 1);
  Outcome outcome = Sh("echo \"${COCOON_TEST_SECRET:-gone} ${COCOON_TEST_VISIBLE:-missing}\"", policy);
  unsetenv("COCOON_TEST_SECRET");
  unsetenv("COCOON_TEST_VISIBLE");
  EXPECT_EQ(outcome.stdout_data, "gone shown\n") << outcome.stderr_data;
}

// A caller's realtime policy must not reach the sandboxed code (it could
// monopolise a CPU), nor stop the sandbox joining a v1 cpu group (which
// refuses realtime tasks). Root only: only root may take SCHED_FIFO here.
TEST(SandboxTest, RealtimeCallerRunsTheSandboxUnderSchedOther) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: setting SCHED_FIFO on the test needs root";
  struct sched_param fifo {};
  fifo.sched_priority = 1;
  ASSERT_EQ(sched_setscheduler(0, SCHED_FIFO, &fifo), 0) << strerror(errno);
  ir::Policy policy = TestPolicy();
  policy.limits.cpu_percent = {true, 50, ir::Enforcement::kRequired};
  policy.limits.memory_bytes = {true, 64ull << 20, ir::Enforcement::kRequired};
  // Field 41 of stat(5) is the scheduling policy (0 = SCHED_OTHER).
  auto outcome = RunSandbox(MakeRequest(policy, {"/bin/sh", "-c", "cut -d' ' -f41 /proc/self/stat"}));
  struct sched_param other {};
  sched_setscheduler(0, SCHED_OTHER, &other);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->exit_code, 0) << outcome->stderr_data;
  EXPECT_EQ(outcome->stdout_data, "0\n");
}

// `cocoon mcp` runs sandboxes on several threads at once: each must get its
// own cgroup. (The groups' names once came from an unsynchronised counter;
// two runs got the same name and one was refused with EEXIST.)
TEST(SandboxTest, ConcurrentRunsGetTheirOwnCgroups) {
  ir::Policy policy = TestPolicy();
  policy.limits.memory_bytes = {true, 256ull << 20, ir::Enforcement::kBestEffort};
  policy.limits.processes = {true, 64, ir::Enforcement::kBestEffort};
  // A race shows only sometimes: several bursts of runs released together.
  constexpr int kThreads = 8;
  for (int round = 0; round < 6; ++round) {
    std::vector<Result<Outcome>> results(kThreads, InternalError("not run"));
    std::vector<SandboxRequest> requests;
    for (int i = 0; i < kThreads; ++i) requests.push_back(MakeRequest(policy, {"/bin/sh", "-c", "echo $$"}));
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&, i] {
        ready.fetch_add(1);
        while (ready.load() < kThreads) {
        }
        results[i] = RunSandbox(std::move(requests[i]));
      });
    }
    for (auto& thread : threads) thread.join();
    for (int i = 0; i < kThreads; ++i) {
      ASSERT_TRUE(results[i].ok()) << "round " << round << ", run " << i << ": " << results[i].status().ToString();
      EXPECT_EQ(results[i]->exit_code, 0) << results[i]->stderr_data;
      EXPECT_EQ(results[i]->stdout_data, "1\n") << "each run is the init of its own pid namespace";
    }
  }
}

TEST(SandboxTest, MeasuresCpuAndMemory) {
  Outcome outcome = Sh("i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done");
  EXPECT_EQ(outcome.exit_code, 0);
  EXPECT_GT(outcome.user_cpu_ms + outcome.system_cpu_ms, 0u);
  EXPECT_GT(outcome.peak_memory_kib, 0u);
  EXPECT_FALSE(outcome.peak_memory_source.empty());
}

// Without a cgroup the peak is wait4's ru_maxrss, which does not count a
// process still running when the command exits (the kernel kills and reaps
// it with the pid namespace). A background python3 holding 100 MiB past the
// command's exit left a 3 MiB figure labelled "upper bound"; the label now
// says which processes the figure covers. As root the sandbox's memory
// cgroup counts every process, and this is not checked.
TEST(SandboxTest, ARusagePeakSaysProcessesStillRunningAreNotCounted) {
  Outcome outcome = Sh("/usr/bin/python3 -c 'a = bytearray(100 << 20); a[::4096] = b\"x\" * len(a[::4096]); "
                       "import time; time.sleep(5)' & sleep 1; echo done");
  EXPECT_EQ(outcome.stdout_data, "done\n") << outcome.stderr_data;
  std::cerr << "[ peak     ] " << outcome.peak_memory_kib << " KiB (" << outcome.peak_memory_source << ")\n";
  if (outcome.peak_memory_source.rfind("cgroup", 0) == 0) {
    GTEST_SKIP() << "SKIPPED, NOT PASSED: the sandbox has a memory cgroup here (root); the rusage label was not "
                    "checked (the unprivileged run of this binary checks it)";
  }
  EXPECT_NE(outcome.peak_memory_source.find("processes still running at the end are not counted"), std::string::npos)
      << outcome.peak_memory_source;
  EXPECT_EQ(outcome.peak_memory_source.find("upper bound"), std::string::npos) << outcome.peak_memory_source;
}

// Without a cgroup (this binary's unprivileged run) the peak is wait4's
// ru_maxrss, which the kernel also fills with the child's high-water RSS
// from before its execve, when it ran in this process's memory. Here this
// process holds 128 MiB: before, /bin/true was reported as a 128 MiB
// "rusage maxrss" peak. Now such a figure says it may be cocoon's, and a
// command that does use more (dd's 192 MiB buffer) is reported as its own.
// As root the sandbox's memory cgroup counts only the sandbox.
TEST(SandboxTest, APeakMemoryNeverPassesCocoonsOwnMemoryOffAsTheCommands) {
  constexpr size_t kOwn = size_t{128} << 20;
  void* own = mmap(nullptr, kOwn, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(own, MAP_FAILED);
  memset(own, 1, kOwn);  // resident: this process's high-water RSS is now above 128 MiB
  Outcome tiny = MustRun(MakeRequest(TestPolicy(), {"/bin/true"}));
  Outcome large = Sh("dd if=/dev/zero of=/dev/null bs=192M count=1 2>&1");
  munmap(own, kOwn);
  EXPECT_EQ(tiny.exit_code, 0) << tiny.stderr_data;
  EXPECT_EQ(large.exit_code, 0) << large.stdout_data << large.stderr_data;
  std::cerr << "[ peaks    ] /bin/true " << tiny.peak_memory_kib << " KiB (" << tiny.peak_memory_source << "), dd "
            << large.peak_memory_kib << " KiB (" << large.peak_memory_source << ")\n";
  if (tiny.peak_memory_source.rfind("cgroup", 0) == 0) {
    EXPECT_LT(tiny.peak_memory_kib, 64u << 10) << "the sandbox's cgroup counted more than /bin/true";
  } else {
    EXPECT_TRUE(tiny.peak_memory_kib < (64u << 10) || tiny.peak_memory_source == kRusagePeakMayBeCocoons)
        << tiny.peak_memory_kib << " KiB reported as /bin/true's own peak (" << tiny.peak_memory_source << ")";
  }
  EXPECT_GE(large.peak_memory_kib, 192u << 10) << large.peak_memory_source;
  EXPECT_NE(large.peak_memory_source, kRusagePeakMayBeCocoons) << "dd's own 192 MiB is above this process's 128 MiB";
}

}  // namespace
}  // namespace cocoon::enforcer

namespace cocoon::enforcer {
namespace {

class WorkDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/cocoon-workdir-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    chmod(dir_.c_str(), 0755);
    int fd = open((dir_ + "/input.txt").c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(write(fd, "in\n", 3), 3);
    close(fd);
  }
  void TearDown() override { ASSERT_EQ(system(("rm -rf " + dir_).c_str()), 0); }
  std::string dir_;
};

// A kill rule's call made while another thread exits the process: the
// kernel drops the notification if the process dies before the supervisor
// takes it (docs/security.md, "Supervision"), so whether the call is seen
// varies from run to run. What must hold in every run: a kill-rule call the
// supervisor took is recorded, the run is then a seccomp kill and commits
// nothing; a run that ends "exited" recorded none and commits. (Unit tests
// in supervisor_test.cc show the exit-time drain deterministically.)
TEST_F(WorkDirTest, AKillRuleCallRacingTheExitIsRecordedAndCommitsNothingWhenSeen) {
  const std::string bpf = AssembleFilter({{SYS_uname, SECCOMP_RET_USER_NOTIF}, {SYS_getppid, SECCOMP_RET_USER_NOTIF}});
  const char* sidecar = R"({"format":"cocoon.seccomp.v1","needs_listener":true,
      "default_action":{"action":"allow"},
      "supervised":[{"syscall":"uname","action":"log","numbers":{"x86_64":63}},
                    {"syscall":"getppid","action":"kill","numbers":{"x86_64":110}}]})";
  const std::string script =
      "import ctypes, os, threading\n"
      "l = ctypes.CDLL(None)\n"
      "open('result.txt', 'w').write('x')\n"
      "buf = ctypes.create_string_buffer(1024)\n"
      "def spin():\n"
      "    while True: l.syscall(63, buf)\n"
      "for _ in range(16): threading.Thread(target=spin, daemon=True).start()\n"
      "r, w = os.pipe()\n"
      "def killer():\n"
      "    os.write(w, b'x')\n"
      "    l.syscall(110)\n"
      "threading.Thread(target=killer, daemon=True).start()\n"
      "os.read(r, 1)\n"
      "os._exit(0)\n";
  int seen = 0;
  constexpr int kRuns = 5;
  for (int i = 0; i < kRuns; ++i) {
    std::filesystem::remove(dir_ + "/result.txt");
    SandboxRequest request = MakeRequest(TestPolicy(), {"/usr/bin/python3", "-c", script}, bpf);
    request.seccomp_sidecar_json = sidecar;
    request.work_host_dir = dir_;
    Outcome outcome = MustRun(std::move(request));
    bool kill_row = false;
    for (const auto& row : outcome.denied_syscalls) kill_row |= row.action == "kill" && row.number == SYS_getppid;
    const bool committed_file = std::filesystem::exists(dir_ + "/result.txt");
    if (kill_row) {
      ++seen;
      EXPECT_EQ(outcome.termination_reason, TerminationReason::kSeccompKill) << "run " << i << ": " << outcome.stderr_data;
      EXPECT_FALSE(outcome.committed) << "run " << i;
      EXPECT_FALSE(committed_file) << "run " << i;
    } else {
      EXPECT_EQ(outcome.termination_reason, TerminationReason::kExited) << "run " << i << ": " << outcome.stderr_data;
      EXPECT_EQ(outcome.exit_code, 0) << "run " << i << ": " << outcome.stderr_data;
      EXPECT_TRUE(outcome.committed) << "run " << i;
    }
  }
  std::cerr << "kill-rule call seen in " << seen << " of " << kRuns << " runs\n";
}

TEST_F(WorkDirTest, StagedResultsAreCommittedAndEscapesLeftOut) {
  SandboxRequest request = testing::MakeRequest(
      testing::TestPolicy(),
      {"/bin/sh", "-c", "cat input.txt; echo out > result.txt; ln -s /etc/passwd escape; ln -s result.txt ok"});
  request.work_host_dir = dir_;
  auto outcome = RunSandbox(std::move(request));
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->exit_code, 0) << outcome->stderr_data;
  EXPECT_EQ(outcome->stdout_data, "in\n");
  EXPECT_TRUE(outcome->committed);
  EXPECT_FALSE(outcome->breakout_clean);
  ASSERT_EQ(outcome->breakout_findings.size(), 1u);
  EXPECT_EQ(outcome->breakout_findings[0].path, "escape");
  struct stat st;
  EXPECT_EQ(stat((dir_ + "/result.txt").c_str(), &st), 0);
  EXPECT_NE(lstat((dir_ + "/escape").c_str(), &st), 0) << "the escaping link never reaches the host";
  EXPECT_EQ(lstat((dir_ + "/ok").c_str(), &st), 0);
}

// The overlay's stage (quota tmpfs with upper/ and work/) is mounted on a host
// path, the user's state dir /tmp/.cocoon-<euid>. A policy's recursive bind
// of a tree that holds it, mounted later, must not carry it into the
// sandbox: its user owns upper/, and whiteouts written there directly would
// delete host files at commit. The stage is unbindable, so the bind shows an
// empty directory.
TEST_F(WorkDirTest, TheOverlayStageIsNotReachableThroughABindOfItsHostPath) {
  // Over the 64 MiB threshold (st_size counts; sparse, so nothing is written).
  ASSERT_EQ(truncate((dir_ + "/input.txt").c_str(), 65ll << 20), 0);
  auto state_dir = PrivateStateDir();
  ASSERT_TRUE(state_dir.ok()) << state_dir.status().ToString();
  // 0711: the sandbox's user could not list it to find the stage; listable
  // for this test only.
  ASSERT_EQ(chmod(state_dir->c_str(), 0755), 0);
  ir::Policy policy = testing::TestPolicy();
  policy.filesystem.mounts.push_back({ir::MountKind::kWritable, *state_dir, "/zz-hoststate", 0, false});
  SandboxRequest request = testing::MakeRequest(
      policy, {"/bin/sh", "-c",
               "found=0; seen=0; for d in /zz-hoststate/cocoon-stage-*; do [ -d \"$d\" ] && seen=1; "
               "[ -e \"$d/upper\" ] && found=1 && echo \"$d\"; done; echo seen=$seen found=$found"});
  request.work_host_dir = dir_;
  auto outcome = RunSandbox(std::move(request));
  chmod(state_dir->c_str(), 0711);
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  ASSERT_EQ(outcome->work_mode, "staged-overlay") << "the test needs the overlay strategy";
  EXPECT_EQ(outcome->exit_code, 0) << outcome->stderr_data;
  EXPECT_NE(outcome->stdout_data.find("seen=1 found=0"), std::string::npos)
      << "the stage's mount point is in the bound dir, and nothing of the stage shows through it: "
      << outcome->stdout_data;
}

// A SIGTERM or SIGQUIT to cocoon that came during the commit's install
// (after its last cancel check; the install holds every signal until the
// work dir is whole) was drained with no record when the signal guard went:
// the Outcome said nothing and cocoon exited 0, though docs/cli.md says a
// cancel while committing exits 130. The commit still stands (it is whole),
// the Outcome now says a cancel came after it could stop the commit, and
// ShellExitStatus gives 130. Synchronised on the install's own steps (the
// hook raises the signal in this thread, which the run's signalfd holds).
// Seen failing with the recording disabled (no note, exit 0).
TEST_F(WorkDirTest, ACancelSignalDuringTheInstallLeavesTheCommitWholeAndSaysSo) {
  for (int signal : {SIGTERM, SIGQUIT}) {
    const std::string name = signal == SIGTERM ? "SIGTERM" : "SIGQUIT";
    SandboxRequest request = testing::MakeRequest(testing::TestPolicy(), {"/bin/sh", "-c", "echo " + name + " > result.txt"});
    request.work_host_dir = dir_;
    request.signals = SignalHandling::kCancelOnSigintSigterm;
    int raised = 0;
    request.after_commit_install_step_for_test = [&](uint64_t steps) {
      if (steps == 1 && raise(signal) == 0) ++raised;
    };
    auto outcome = RunSandbox(std::move(request));
    ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
    ASSERT_EQ(raised, 1) << name << ": the install hook did not run: nothing checked";
    EXPECT_TRUE(outcome->committed) << name;
    EXPECT_EQ(outcome->verification, "before-commit") << name;
    std::ifstream result(dir_ + "/result.txt");
    std::string line;
    std::getline(result, line);
    EXPECT_EQ(line, name) << "the commit did not stand";
    EXPECT_NE(outcome->cancelled_after_commit.find(name + " came while the work dir was being committed"),
              std::string::npos)
        << name << ": " << outcome->cancelled_after_commit;
    EXPECT_EQ(ShellExitStatus(*outcome), 130) << name;
    nlohmann::json j = OutcomeToJson(*outcome);
    EXPECT_EQ(j["breakout"].value("cancelled_after_commit", ""), outcome->cancelled_after_commit);
    EXPECT_NE(outcome->cancelled_after_end.find(name + " came after the command had ended"), std::string::npos)
        << name << ": " << outcome->cancelled_after_end;
    sigset_t pending;
    sigpending(&pending);
    EXPECT_FALSE(sigismember(&pending, signal)) << name << " is still pending";
  }
}

// A cancel that came after the command had ended, in a run with no staged
// commit (no work dir, a direct work dir, a staged run discarded by
// request), was drained unrecorded when the signal guard went: the Outcome
// said nothing and cocoon exited as if nothing had come, while a committed
// run said cancelled_after_commit and exited 130. Now every such run says
// cancelled_after_end, and ShellExitStatus gives 130. Synchronised on the
// run's own step (the hook raises the signal in this thread once the
// command has ended and the run is verified; the run's signalfd holds it). Seen failing before
// the change (no note, exit 0).
TEST_F(WorkDirTest, ACancelSignalAfterTheCommandEndedIsRecordedWithoutAStagedCommit) {
  enum class Work { kNone, kDirect, kDiscarded };
  for (Work work : {Work::kNone, Work::kDirect, Work::kDiscarded}) {
    const std::string name = work == Work::kNone ? "no work dir" : work == Work::kDirect ? "direct" : "discarded";
    ir::Policy policy = testing::TestPolicy();
    if (work == Work::kDirect) policy.filesystem.work.mode = ir::WorkMode::kDirect;
    SandboxRequest request = testing::MakeRequest(policy, {"/bin/sh", "-c", "echo done"});
    if (work != Work::kNone) request.work_host_dir = dir_;
    request.discard_work_dir = work == Work::kDiscarded;
    request.signals = SignalHandling::kCancelOnSigintSigterm;
    int raised = 0;
    request.after_run_verified_for_test = [&] {
      if (raise(SIGTERM) == 0) ++raised;
    };
    auto outcome = RunSandbox(std::move(request));
    ASSERT_TRUE(outcome.ok()) << name << ": " << outcome.status().ToString();
    ASSERT_EQ(raised, 1) << name << ": the hook did not run: nothing checked";
    EXPECT_EQ(outcome->termination_reason, TerminationReason::kExited) << name;
    EXPECT_EQ(outcome->exit_code, 0) << name;
    EXPECT_EQ(outcome->stdout_data, "done\n") << name;
    EXPECT_FALSE(outcome->committed) << name;
    EXPECT_TRUE(outcome->cancelled_after_commit.empty()) << name << ": " << outcome->cancelled_after_commit;
    EXPECT_NE(outcome->cancelled_after_end.find("SIGTERM came after the command had ended"), std::string::npos)
        << name << ": " << outcome->cancelled_after_end;
    EXPECT_EQ(ShellExitStatus(*outcome), 130) << name;
    nlohmann::json j = OutcomeToJson(*outcome);
    EXPECT_EQ(j.value("cancelled_after_end", ""), outcome->cancelled_after_end) << name;
    sigset_t pending;
    sigpending(&pending);
    EXPECT_FALSE(sigismember(&pending, SIGTERM)) << name << ": SIGTERM is still pending";
  }
}

TEST_F(WorkDirTest, TimedOutRunCommitsNothing) {
  ir::Policy policy = testing::TestPolicy();
  policy.limits.wall_time_ms = {true, 500, ir::Enforcement::kRequired};
  SandboxRequest request = testing::MakeRequest(policy, {"/bin/sh", "-c", "echo partial > result.txt; sleep 100"});
  request.work_host_dir = dir_;
  auto outcome = RunSandbox(std::move(request));
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_TRUE(outcome->timed_out);
  EXPECT_FALSE(outcome->committed);
  struct stat st;
  EXPECT_NE(stat((dir_ + "/result.txt").c_str(), &st), 0);
}

// A run that a limit ends is interrupted like a timed-out one: what it half
// wrote is not committed. The CPU limit kills the sandbox's init with
// SIGKILL at RLIMIT_CPU's hard limit (an init gets no SIGXCPU):
// reported as a CPU timeout, not as an anonymous signal. The memory limit
// (cgroups, root only here) is reported as an OOM kill.
TEST_F(WorkDirTest, ARunALimitEndsCommitsNothingAndSaysWhichLimit) {
  ir::Policy cpu = testing::TestPolicy();
  cpu.limits.cpu_time_ms = {true, 1000, ir::Enforcement::kRequired};
  cpu.limits.wall_time_ms = {true, 20000, ir::Enforcement::kRequired};
  SandboxRequest request = testing::MakeRequest(cpu, {"/bin/sh", "-c", "echo partial > result.txt; while :; do :; done"});
  request.work_host_dir = dir_;
  auto outcome = RunSandbox(std::move(request));
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->termination_reason, TerminationReason::kTimeout);
  EXPECT_EQ(outcome->limit_hit, "cpu_time");
  ASSERT_FALSE(outcome->limits_reached.empty());
  EXPECT_EQ(outcome->limits_reached[0].limit, "cpu_time");
  EXPECT_TRUE(outcome->limits_reached[0].ended_the_run);
  EXPECT_TRUE(outcome->timed_out);
  EXPECT_FALSE(outcome->committed);
  EXPECT_EQ(outcome->verification, "not-run");
  EXPECT_GE(outcome->user_cpu_ms + outcome->system_cpu_ms, 750u);  // 1 s, less finish.cc's kCpuLimitSlackMs
  struct stat st;
  EXPECT_NE(stat((dir_ + "/result.txt").c_str(), &st), 0) << "half-written results of a killed run reached the host";

  if (geteuid() != 0) {
    std::cerr << "[ SKIPPED  ] the memory half of this test: a memory cgroup needs root here\n";
    return;
  }
  ir::Policy memory = testing::TestPolicy();
  memory.limits.memory_bytes = {true, 64ull << 20, ir::Enforcement::kRequired};
  request = testing::MakeRequest(
      memory, {"/usr/bin/python3", "-c", "open('result.txt','w').write('partial'); x = bytearray(512 << 20); print('done')"});
  request.work_host_dir = dir_;
  outcome = RunSandbox(std::move(request));
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->termination_reason, TerminationReason::kOomKilled) << outcome->stderr_data;
  EXPECT_EQ(outcome->limit_hit, "memory");
  EXPECT_FALSE(outcome->committed);
  EXPECT_NE(stat((dir_ + "/result.txt").c_str(), &st), 0) << "half-written results of an OOM-killed run reached the host";
}

// `cpu_time 100ms`: RLIMIT_CPU is whole seconds, and its SIGXCPU at the soft
// limit never reaches the sandbox's init, so only the hard limit acts.
// Before, that was one second past the rounded-up soft limit: a command that
// used 1.5 s of CPU and exited ran to its end ("exited", mechanism rlimit,
// required). Now the hard limit is the rounded-up value: killed at 1 s, a
// CPU timeout, and the row says what was enforced.
TEST(SandboxTest, ASubSecondCpuTimeKillsAtTheFirstSecond) {
  ir::Policy policy = TestPolicy();
  policy.limits.cpu_time_ms = {true, 100, ir::Enforcement::kRequired};
  policy.limits.wall_time_ms = {true, 20000, ir::Enforcement::kRequired};
  Outcome outcome = MustRun(MakeRequest(
      policy, {"/usr/bin/python3", "-c",
               "import time\nwhile time.process_time() < 1.5: pass\nprint('ran past the limit', flush=True)\n"}));
  EXPECT_EQ(outcome.termination_reason, TerminationReason::kTimeout) << outcome.stdout_data << outcome.stderr_data;
  EXPECT_EQ(outcome.limit_hit, "cpu_time");
  EXPECT_EQ(outcome.stdout_data, "");
  EXPECT_LT(outcome.user_cpu_ms + outcome.system_cpu_ms, 1500u);
  bool row = false;
  for (const auto& limit : outcome.limits) {
    if (limit.limit != "cpu_time") continue;
    row = true;
    EXPECT_NE(limit.note.find("requested 100 ms; enforced as RLIMIT_CPU 1 s per process"), std::string::npos)
        << limit.note;
  }
  EXPECT_TRUE(row) << "no cpu_time row";
}

// A child the OOM killer ended, then the command killed by the CPU limit:
// the memory cgroup's oom_kill count and the command's SIGKILL were read as
// the command's OOM kill (termination_reason oom_killed, memory
// ended_the_run, no cpu_time entry) although it had used its whole CPU time.
// The command's CPU time now decides (finish.cc, CpuLimitKilledRatherThanOom):
// the CPU limit ended the run, the child's OOM kill is listed as not having
// ended it. Seen failing on the old code (oom_killed, memory ended the run).
TEST_F(WorkDirTest, ACPULimitKillAfterAChildsOomKillIsTheCPULimits) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED: a memory cgroup needs root here";
  ir::Policy policy = testing::TestPolicy();
  policy.limits.memory_bytes = {true, 64ull << 20, ir::Enforcement::kRequired};
  policy.limits.cpu_time_ms = {true, 1000, ir::Enforcement::kRequired};
  policy.limits.wall_time_ms = {true, 20000, ir::Enforcement::kRequired};
  SandboxRequest request = testing::MakeRequest(
      policy, {"/bin/sh", "-c", "/usr/bin/python3 -c 'x = bytearray(512 << 20)'; while :; do :; done"});
  auto outcome = RunSandbox(std::move(request));
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  ASSERT_TRUE(outcome->oom_killed) << "the child was not OOM-killed: nothing checked; " << outcome->stderr_data;
  EXPECT_EQ(outcome->termination_reason, TerminationReason::kTimeout) << outcome->stderr_data;
  EXPECT_EQ(outcome->limit_hit, "cpu_time");
  EXPECT_GE(outcome->user_cpu_ms + outcome->system_cpu_ms, 750u);
  bool cpu_ended = false, memory_listed = false;
  for (const LimitReached& reached : outcome->limits_reached) {
    if (reached.limit == "cpu_time") cpu_ended = reached.ended_the_run;
    if (reached.limit == "memory") {
      memory_listed = true;
      EXPECT_FALSE(reached.ended_the_run) << "the child's OOM kill is said to have ended the run";
    }
  }
  EXPECT_TRUE(cpu_ended) << "no cpu_time entry that ended the run";
  EXPECT_TRUE(memory_listed) << "the child's OOM kill is not listed";
}

// The converse: children that used more CPU time than the limit (each one
// under it), then the command itself OOM-killed. RLIMIT_CPU is per process,
// so the CPU limit cannot have ended it; the OOM killer did. wait4's rusage
// adds the reaped children's time, and with it the run was called a CPU
// timeout (exit 124, limit_hit cpu_time) in a review; the command's own CPU
// time, read from /proc before it is reaped, decides now.
TEST_F(WorkDirTest, AnOomKillAfterChildrenUsedMoreThanTheCpuLimitIsTheOomKill) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED: a memory cgroup needs root here";
  ir::Policy policy = testing::TestPolicy();
  policy.limits.memory_bytes = {true, 64ull << 20, ir::Enforcement::kRequired};
  policy.limits.cpu_time_ms = {true, 1000, ir::Enforcement::kRequired};
  policy.limits.wall_time_ms = {true, 30000, ir::Enforcement::kRequired};
  // Three children of 0.8 s CPU each (each under the 1 s limit), then the
  // command grows until the memory cgroup's OOM killer ends it.
  const char* command = R"PY(
import subprocess
burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.8: pass"
for i in range(3): subprocess.run(["/usr/bin/python3", "-c", burn])
a = []
while True: a.append(b"x" * (1 << 20))
)PY";
  SandboxRequest request = testing::MakeRequest(policy, {"/usr/bin/python3", "-c", command});
  auto outcome = RunSandbox(std::move(request));
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  ASSERT_GE(outcome->user_cpu_ms + outcome->system_cpu_ms, 2000u)
      << "the children did not use more than the CPU limit: nothing checked; " << outcome->stderr_data;
  EXPECT_EQ(outcome->termination_reason, TerminationReason::kOomKilled) << outcome->stderr_data;
  EXPECT_EQ(outcome->limit_hit, "memory");
  EXPECT_FALSE(outcome->timed_out);
  for (const LimitReached& reached : outcome->limits_reached) {
    EXPECT_NE(reached.limit, "cpu_time") << "the children's CPU time was taken for the command's";
    if (reached.limit == "memory") {
      EXPECT_TRUE(reached.ended_the_run);
    }
  }
}

// A limit a process of the sandbox other than the command reaches, while
// the command itself goes on, is reported with the mechanism that observed
// it: a child the kernel OOM-killed (the memory cgroup's oom_kill count), a
// fork refused at pids.max (pids.events max). The command finished on its
// own, so its work is committed. Seen failing on the old code: limit_hit
// was "" (null in the JSON) in both runs, and nothing said which mechanism
// saw the limit.
TEST_F(WorkDirTest, ALimitAChildReachesIsReportedWithWhatObservedIt) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED: memory and pids cgroups need root here";
  ir::Policy memory = testing::TestPolicy();
  memory.limits.memory_bytes = {true, 64ull << 20, ir::Enforcement::kRequired};
  SandboxRequest request = testing::MakeRequest(
      memory, {"/bin/sh", "-c", "/usr/bin/python3 -c 'x = bytearray(512 << 20)'; echo child=$? > result.txt"});
  request.work_host_dir = dir_;
  auto outcome = RunSandbox(std::move(request));
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->termination_reason, TerminationReason::kExited) << outcome->stderr_data;
  EXPECT_EQ(outcome->exit_code, 0);
  EXPECT_TRUE(outcome->oom_killed);
  EXPECT_EQ(outcome->limit_hit, "memory");
  ASSERT_EQ(outcome->limits_reached.size(), 1u);
  EXPECT_EQ(outcome->limits_reached[0].limit, "memory");
  EXPECT_NE(outcome->limits_reached[0].observed_by.find("oom_kill"), std::string::npos)
      << outcome->limits_reached[0].observed_by;
  EXPECT_GE(outcome->limits_reached[0].count, 1u);
  EXPECT_FALSE(outcome->limits_reached[0].ended_the_run);
  EXPECT_TRUE(outcome->committed);
  nlohmann::json j = OutcomeToJson(*outcome);
  EXPECT_EQ(j["limit_hit"], "memory");
  EXPECT_EQ(j["limits_reached"][0]["ended_the_run"], false);

  ir::Policy procs = testing::TestPolicy();
  procs.limits.processes = {true, 4, ir::Enforcement::kRequired};
  request = testing::MakeRequest(
      procs, {"/bin/sh", "-c", "for i in 1 2 3 4 5 6 7 8; do /bin/sleep 0.2 & done 2>/dev/null; wait; exit 0"});
  outcome = RunSandbox(std::move(request));
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->termination_reason, TerminationReason::kExited) << outcome->stderr_data;
  EXPECT_EQ(outcome->limit_hit, "processes") << outcome->stderr_data;
  ASSERT_EQ(outcome->limits_reached.size(), 1u);
  EXPECT_EQ(outcome->limits_reached[0].limit, "processes");
  EXPECT_NE(outcome->limits_reached[0].observed_by.find("pids.events max"), std::string::npos);
  EXPECT_FALSE(outcome->limits_reached[0].ended_the_run);
}

// `root rootfs DIR`: a bundle's own tree is the sandbox's whole view. The
// bundle here is a minimal one built from host files (dash, cat and their
// loader and libc), plus a marker file, a relative symlink and a FIFO.
class RootfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/cocoon-rootfs-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void CopyIn(const std::string& host, const std::string& inside) {
    std::filesystem::create_directories(std::filesystem::path(dir_ + inside).parent_path());
    std::filesystem::copy_file(std::filesystem::canonical(host), dir_ + inside);
  }
  ir::Policy RootfsPolicy() {
    ir::Policy policy;
    policy.name = "rootfs-test";
    policy.source_sha256 = std::string(64, '0');
    policy.filesystem.root = ir::RootKind::kRootfs;
    policy.filesystem.rootfs = dir_;
    policy.filesystem.mounts.push_back({ir::MountKind::kTmpfs, "", "/tmp", 1 << 20, false});
    policy.limits.wall_time_ms = {true, 10000, ir::Enforcement::kRequired};
    policy.limits.output_bytes = {true, 1 << 20, ir::Enforcement::kRequired};
    policy.environment.set = {{"PATH", "/bin"}};
    return policy;
  }
  std::string dir_;
};

TEST_F(RootfsTest, BundleIsTheWholeViewAndReadOnly) {
  CopyIn("/bin/dash", "/bin/sh");
  CopyIn("/bin/cat", "/bin/cat");
  CopyIn("/lib64/ld-linux-x86-64.so.2", "/lib64/ld-linux-x86-64.so.2");
  CopyIn("/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6");
  std::filesystem::create_directories(dir_ + "/etc");
  std::filesystem::create_directories(dir_ + "/tmp");
  { std::ofstream(dir_ + "/etc/bundle-marker") << "from the bundle\n"; }
  std::filesystem::create_symlink("etc", dir_ + "/config");
  ASSERT_EQ(mkfifo((dir_ + "/fifo").c_str(), 0644), 0);
  std::filesystem::permissions(dir_, std::filesystem::perms(0755));
  auto outcome = RunSandbox(testing::MakeRequest(
      RootfsPolicy(), {"sh", "-c",
                       "cat /config/bundle-marker; echo /*; cat /proc/1/comm; "
                       "echo x > /etc/probe; echo rc=$?; echo y > /tmp/ok && cat /tmp/ok"}));
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->exit_code, 0) << outcome->stderr_data;
  // The host's /usr and the bundle's FIFO are absent; /proc, /dev and /work
  // are the enforcer's own; the bundle's symlink is recreated.
  EXPECT_EQ(outcome->stdout_data,
            "from the bundle\n/bin /config /dev /etc /lib /lib64 /proc /tmp /work\nsh\nrc=2\ny\n");
  struct stat st;
  EXPECT_NE(stat((dir_ + "/etc/probe").c_str(), &st), 0) << "the bundle on the host is never written";
  EXPECT_NE(stat((dir_ + "/work").c_str(), &st), 0) << "no mount point is created inside the bundle";
}

TEST_F(RootfsTest, MissingBundleAndMountsUnderItsSymlinksAreRefused) {
  ir::Policy missing = RootfsPolicy();
  missing.filesystem.rootfs = dir_ + "/nope";
  auto refused = RunSandbox(testing::MakeRequest(missing, {"/bin/sh"}));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("nope"), std::string::npos) << refused.status().message();

  std::filesystem::create_symlink("/usr/lib", dir_ + "/lib");
  ir::Policy under_link = RootfsPolicy();
  under_link.filesystem.mounts.push_back({ir::MountKind::kTmpfs, "", "/lib/x", 1 << 20, false});
  refused = RunSandbox(testing::MakeRequest(under_link, {"/bin/sh"}));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("symlink in the rootfs"), std::string::npos) << refused.status().message();
}

TEST_F(WorkDirTest, MissingWorkDirIsRefused) {
  SandboxRequest request = testing::MakeRequest(testing::TestPolicy(), {"/bin/true"});
  request.work_host_dir = dir_ + "/does-not-exist";
  EXPECT_FALSE(RunSandbox(std::move(request)).ok());
}

}  // namespace
}  // namespace cocoon::enforcer
