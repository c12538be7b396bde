// Real cgroups and rlimits on this machine (root, cgroup v1): a memory bomb is
// OOM-killed at 32 MiB and reported, a fork bomb is capped by pids.max, and
// KillAll leaves nothing behind.
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <string>

#include "enforcer/limits/cgroup.h"
#include "enforcer/limits/host_caps.h"
#include "enforcer/limits/limit_plan.h"
#include "enforcer/limits/rlimits.h"

namespace cocoon::enforcer {
namespace {

ir::Limit Req(uint64_t value) { return ir::Limit{true, value, ir::Enforcement::kRequired}; }

std::string UniqueName(const char* what) { return std::string("cocoon-test-") + what + "-" + std::to_string(getpid()); }

// Skips loudly unless this host can do v1 cgroups as root (this machine can).
#define REQUIRE_ROOT_V1(host)                                                                  \
  do {                                                                                         \
    if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: needs root to create cgroup v1 groups";      \
    if (!(host).v1_memory.writable || !(host).v1_pids.writable)                                \
      GTEST_SKIP() << "SKIPPED: no writable cgroup v1 memory+pids hierarchy on this host";      \
  } while (0)

// Forks a child that waits on a pipe until it is in the cgroup, then runs
// `body` and _exits with its return value.
template <typename Body>
pid_t ForkIntoCgroup(Cgroup& cg, Body body) {
  int go[2];
  if (pipe2(go, O_CLOEXEC) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(go[1]);
    char byte;
    if (read(go[0], &byte, 1) != 1) _exit(100);
    _exit(body());
  }
  close(go[0]);
  Status added = cg.AddProcess(pid);
  EXPECT_TRUE(added.ok()) << added.ToString();
  (void)!write(go[1], "g", 1);
  close(go[1]);
  return pid;
}

TEST(CgroupV1Test, MemoryBombIsOomKilledAndReported) {
  auto host = DetectHostCapabilities();
  ASSERT_TRUE(host.ok());
  REQUIRE_ROOT_V1(*host);
  ir::Limits limits;
  limits.memory_bytes = Req(32 << 20);
  auto plan = PlanLimits(limits, *host, LimitPlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->cgroup.version, CgroupVersion::kV1);
  auto cg = Cgroup::Create(plan->cgroup, *host, UniqueName("oom"));
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();

  pid_t pid = ForkIntoCgroup(**cg, [] {
    const size_t size = 256u << 20;  // 8x the limit
    // volatile: the compiler may otherwise drop the stores and the malloc.
    volatile char* p = static_cast<volatile char*>(malloc(size));
    if (!p) return 3;
    for (size_t i = 0; i < size; i += 4096) p[i] = 1;  // touch every page
    return 0;
  });
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the memory bomb exited normally with " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGKILL);
  auto ooms = (*cg)->OomKillCount();
  ASSERT_TRUE(ooms.ok()) << ooms.status().ToString();
  EXPECT_GE(*ooms, 1u);
  auto peak = (*cg)->PeakMemoryBytes();
  ASSERT_TRUE(peak.ok());
  EXPECT_LE(*peak, 32u << 20);
  EXPECT_GE(*peak, 16u << 20);
  EXPECT_EQ((*cg)->PeakMemorySource(), "cgroup-v1 max_usage_in_bytes");
  auto dirs = (*cg)->dirs();
  EXPECT_TRUE((*cg)->Destroy().ok());
  for (const auto& dir : dirs) EXPECT_NE(access(dir.c_str(), F_OK), 0) << dir << " still exists";
}

// v1 charges TCP/UDP socket buffers only once memory.kmem.tcp.limit_in_bytes
// is set: without it a child of a 32 MiB group queued 256 MiB on loopback
// TCP connections while the group showed a few MiB. Here the child tries to
// queue 256 MiB (unread, both directions) and must stop near the limit.
TEST(CgroupV1Test, LoopbackTcpBuffersAreBoundedByTheGroup) {
  auto host = DetectHostCapabilities();
  ASSERT_TRUE(host.ok());
  REQUIRE_ROOT_V1(*host);
  if (!host->v1_kmem_tcp) GTEST_SKIP() << "SKIPPED LOUDLY: this kernel has no memory.kmem.tcp (socket buffers uncounted)";
  ir::Limits limits;
  limits.memory_bytes = Req(32 << 20);
  auto plan = PlanLimits(limits, *host, LimitPlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  auto cg = Cgroup::Create(plan->cgroup, *host, UniqueName("tcp"));
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();
  std::ifstream tcp_limit((*cg)->dirs().front() + "/memory.kmem.tcp.limit_in_bytes");
  uint64_t written = 0;
  tcp_limit >> written;
  EXPECT_EQ(written, 32u << 20);
  int report[2];
  ASSERT_EQ(pipe(report), 0);
  pid_t pid = ForkIntoCgroup(**cg, [&report] {
    close(report[0]);
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || listen(listener, 64) != 0 ||
        getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      return 3;
    }
    static char chunk[65536];
    uint64_t queued = 0;
    for (int i = 0; i < 32 && queued < (256u << 20); ++i) {
      int client = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
      int big = 8 << 20;
      setsockopt(client, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
      if (connect(client, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) break;
      int server = accept(listener, nullptr, nullptr);  // never read: the data stays queued
      setsockopt(server, SOL_SOCKET, SO_RCVBUF, &big, sizeof big);
      for (int spins = 0; spins < 4096; ++spins) {
        ssize_t n = send(client, chunk, sizeof chunk, MSG_DONTWAIT);
        if (n <= 0) break;
        queued += static_cast<uint64_t>(n);
      }
    }
    (void)!write(report[1], &queued, sizeof queued);
    return 0;
  });
  close(report[1]);
  uint64_t queued = 0;
  ASSERT_EQ(read(report[0], &queued, sizeof queued), static_cast<ssize_t>(sizeof queued));
  close(report[0]);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_LT(queued, 64u << 20) << "queued " << (queued >> 20) << " MiB of TCP buffers under a 32 MiB group";
  EXPECT_TRUE((*cg)->Destroy().ok());
}

TEST(CgroupV1Test, ForkBombIsCappedByPidsMaxAndKillAllEmptiesTheGroup) {
  auto host = DetectHostCapabilities();
  ASSERT_TRUE(host.ok());
  REQUIRE_ROOT_V1(*host);
  ir::Limits limits;
  limits.processes = Req(16);
  auto plan = PlanLimits(limits, *host, LimitPlanOptions{});
  ASSERT_TRUE(plan.ok());
  auto cg = Cgroup::Create(plan->cgroup, *host, UniqueName("pids"));
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();

  int report[2];
  ASSERT_EQ(pipe(report), 0);
  pid_t pid = ForkIntoCgroup(**cg, [&] {
    close(report[0]);
    int forked = 0;
    for (int i = 0; i < 200; ++i) {
      pid_t child = fork();
      if (child == 0) {
        setsid();  // daemonize: only the cgroup still knows it
        pause();
        _exit(0);
      }
      if (child > 0) ++forked;
    }
    (void)!write(report[1], &forked, sizeof forked);
    pause();
    return 0;
  });
  close(report[1]);
  int forked = -1;
  ASSERT_EQ(read(report[0], &forked, sizeof forked), static_cast<ssize_t>(sizeof forked));
  close(report[0]);
  EXPECT_EQ(forked, 15) << "pids.max=16 counts the bomb itself";
  auto count = (*cg)->ProcessCount();
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 16u);

  Status killed = (*cg)->KillAll();
  EXPECT_TRUE(killed.ok()) << killed.ToString();
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status));
  count = (*cg)->ProcessCount();
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 0u);
  EXPECT_TRUE((*cg)->Destroy().ok());
}

TEST(CgroupV1Test, CpuQuotaIsWritten) {
  auto host = DetectHostCapabilities();
  ASSERT_TRUE(host.ok());
  REQUIRE_ROOT_V1(*host);
  if (!host->v1_cpu.writable) GTEST_SKIP() << "SKIPPED: no writable v1 cpu hierarchy";
  ir::Limits limits;
  limits.cpu_percent = Req(25);
  auto plan = PlanLimits(limits, *host, LimitPlanOptions{});
  ASSERT_TRUE(plan.ok());
  auto cg = Cgroup::Create(plan->cgroup, *host, UniqueName("cpu"));
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();
  std::string cpu_dir = host->v1_cpu.Dir() + "/" + UniqueName("cpu");
  FILE* f = fopen((cpu_dir + "/cpu.cfs_quota_us").c_str(), "r");
  ASSERT_NE(f, nullptr);
  long quota = 0;
  ASSERT_EQ(fscanf(f, "%ld", &quota), 1);
  fclose(f);
  EXPECT_EQ(quota, 25000);
}

// The launch path's v1 join: the parent forks, the child opens the groups'
// parent directories, and only then does the parent create the groups; the
// child joins by writing "0" into openat(parent, "<name>/tasks") and lands in every group
// (memory, pids, ...), which then lists it; the parent never writes its pid
// (no RCU grace period).
TEST(CgroupV1Test, ChildJoinsItselfThroughParentDirFds) {
  auto host = DetectHostCapabilities();
  ASSERT_TRUE(host.ok());
  REQUIRE_ROOT_V1(*host);
  ir::Limits limits;
  limits.memory_bytes = Req(64ull << 20);
  limits.processes = Req(8);
  auto plan = PlanLimits(limits, *host, LimitPlanOptions{});
  ASSERT_TRUE(plan.ok());
  std::vector<std::string> parents = Cgroup::V1ParentDirs(plan->cgroup, *host);
  ASSERT_FALSE(parents.empty());
  std::string name = UniqueName("join");
  std::string tasks = name + "/tasks";
  int go[2], done[2];
  ASSERT_EQ(pipe2(go, O_CLOEXEC), 0);
  ASSERT_EQ(pipe2(done, O_CLOEXEC), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(go[1]);
    close(done[0]);
    std::vector<int> parent_fds;
    for (const std::string& dir : parents) parent_fds.push_back(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    char byte = 0;
    if (read(go[0], &byte, 1) != 1) _exit(1);
    for (int parent : parent_fds) {
      int fd = openat(parent, tasks.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0 || write(fd, "0", 1) != 1) _exit(1);
      close(fd);
    }
    (void)!write(done[1], "j", 1);
    pause();
    _exit(0);
  }
  close(go[0]);
  close(done[1]);
  auto cg = Cgroup::Create(plan->cgroup, *host, name);
  // Released or not, the child never blocks forever: closing `go` ends its read.
  if (cg.ok()) {
    EXPECT_EQ(write(go[1], "C", 1), 1);
  }
  close(go[1]);
  char byte = 0;
  ssize_t joined = read(done[0], &byte, 1);
  close(done[0]);
  if (!cg.ok() || joined != 1) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    FAIL() << (cg.ok() ? "the child could not join its cgroups" : cg.status().ToString());
  }
  EXPECT_EQ(parents.size(), (*cg)->dirs().size());
  for (const std::string& dir : (*cg)->dirs()) {
    std::ifstream procs(dir + "/cgroup.procs");
    pid_t listed = 0;
    procs >> listed;
    EXPECT_EQ(listed, pid) << dir;
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

// The v2 mechanics that this machine's controller-less v2 hierarchy still
// offers: a group, CLONE_INTO_CGROUP, cgroup.kill, removal.
TEST(CgroupV2Test, CloneIntoCgroupAndKillAllOnControllerlessHierarchy) {
  auto host = DetectHostCapabilities();
  ASSERT_TRUE(host.ok());
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: needs root to create a v2 group here";
  if (!host->v2.mounted || !host->v2.writable) GTEST_SKIP() << "SKIPPED: no writable cgroup v2 hierarchy";
  if (access((host->v2.Dir() + "/cgroup.procs").c_str(), W_OK) != 0) GTEST_SKIP() << "SKIPPED: v2 not writable";
  CgroupSpec spec;
  spec.version = CgroupVersion::kV2;
  auto cg = Cgroup::Create(spec, *host, UniqueName("v2"));
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();
  ASSERT_GE((*cg)->clone_into_fd(), 0);
  EXPECT_EQ((*cg)->PeakMemoryBytes().status().code(), ErrorCode::kNotFound);

  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  struct clone_args args {};
  args.flags = CLONE_INTO_CGROUP;  // born inside the group (Linux 5.7)
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<uint64_t>((*cg)->clone_into_fd());
  pid_t pid = static_cast<pid_t>(syscall(SYS_clone3, &args, sizeof args));
  ASSERT_GE(pid, 0) << strerror(errno);
  if (pid == 0) {
    for (int i = 0; i < 5; ++i) {
      if (fork() == 0) {
        setsid();
        pause();
        _exit(0);
      }
    }
    (void)!write(ready[1], "r", 1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char byte;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  close(ready[0]);
  auto count = (*cg)->ProcessCount();
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 6u);
  Status killed = (*cg)->KillAll();
  EXPECT_TRUE(killed.ok()) << killed.ToString();
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ(*(*cg)->ProcessCount(), 0u);
  std::string dir = (*cg)->dirs().front();
  EXPECT_TRUE((*cg)->Destroy().ok());
  EXPECT_NE(access(dir.c_str(), F_OK), 0);
}

TEST(CgroupTest, BadNameIsRefused) {
  CgroupSpec spec;
  spec.version = CgroupVersion::kV1;
  HostCapabilities host;
  EXPECT_FALSE(Cgroup::Create(spec, host, "../escape").ok());
  EXPECT_FALSE(Cgroup::Create(spec, host, "").ok());
}

TEST(RlimitTest, AppliedInChildAfterFork) {
  ir::Limits limits;
  limits.open_files = Req(16);
  HostCapabilities host;  // no cgroups at all
  auto plan = PlanLimits(limits, host, LimitPlanOptions{});
  ASSERT_TRUE(plan.ok());
  RlimitSet set = plan->rlimits;
  pid_t pid = fork();
  if (pid == 0) {
    int failed = 0;
    if (ApplyRlimits(set, &failed) != 0) _exit(10);
    struct rlimit core {};
    getrlimit(RLIMIT_CORE, &core);
    if (core.rlim_cur != 0 || core.rlim_max != 0) _exit(11);
    struct rlimit rtprio {};
    getrlimit(RLIMIT_RTPRIO, &rtprio);
    if (rtprio.rlim_max != 0) _exit(12);
    for (int i = 0; i < 32; ++i) {
      if (open("/dev/null", O_RDONLY) < 0) _exit(errno == EMFILE ? 0 : 13);
    }
    _exit(14);  // NOFILE not enforced
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(RlimitTest, ReportsTheFailingResource) {
  RlimitSet set;
  set.count = 1;
  set.entries[0].resource = 9999;  // not a resource: EINVAL
  int failed = 0;
  EXPECT_EQ(ApplyRlimits(set, &failed), EINVAL);
  EXPECT_EQ(failed, 9999);
}

}  // namespace
}  // namespace cocoon::enforcer
