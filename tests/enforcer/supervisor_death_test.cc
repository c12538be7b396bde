// A sandbox never outlives its supervisor (issue 4: "a sandbox must never
// outlive the process that enforces its timeout"). As root the child's drop
// to host uid 65534 clears the parent-death signal it armed first
// (commit_creds), so it must arm it again (child_main.cc); this kills a
// supervisor with SIGKILL, which runs no cleanup of ours, and checks from the
// host that the sandboxed command is gone, and that the cgroups it left are
// swept. Runs as root and unprivileged (enforcer_sandbox_test_unprivileged).
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "enforcer/limits/cgroup_names.h"
#include "enforcer/limits/host_caps.h"
#include "enforcer/sandbox.h"
#include "tests/enforcer/test_util.h"

namespace cocoon::enforcer {
namespace {

using testing::MakeRequest;
using testing::TestPolicy;

// The pid of the process whose argv is exactly `argv` (NUL-separated), or -1.
pid_t FindProcess(const std::string& argv) {
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return -1;
  pid_t found = -1;
  while (dirent* entry = readdir(proc)) {
    pid_t pid = static_cast<pid_t>(atoi(entry->d_name));
    if (pid <= 0) continue;
    std::ifstream cmdline("/proc/" + std::string(entry->d_name) + "/cmdline");
    std::stringstream text;
    text << cmdline.rdbuf();
    if (text.str() == argv) {
      found = pid;
      break;
    }
  }
  closedir(proc);
  return found;
}

pid_t WaitForProcess(const std::string& argv, bool present, std::chrono::milliseconds limit) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    pid_t pid = FindProcess(argv);
    if ((pid > 0) == present || std::chrono::steady_clock::now() > deadline) return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// Every directory sandbox cgroups are made in on this host.
std::vector<std::string> CgroupParentDirs() {
  auto host = DetectHostCapabilities();
  return host.ok() ? AllSandboxCgroupParents(*host) : std::vector<std::string>{};
}

// The sandbox groups under `parents` whose supervisor was `pid`.
std::vector<std::string> GroupsOf(pid_t pid, const std::vector<std::string>& parents) {
  std::vector<std::string> groups;
  for (const std::string& parent : parents) {
    DIR* dir = opendir(parent.c_str());
    if (dir == nullptr) continue;
    while (dirent* entry = readdir(dir)) {
      SandboxCgroupOwner owner = ParseSandboxCgroupName(entry->d_name);
      if (owner.valid && owner.pid == pid) groups.push_back(parent + "/" + entry->d_name);
    }
    closedir(dir);
  }
  return groups;
}

TEST(SupervisorDeathTest, KillingTheSupervisorKillsTheSandbox) {
  // A duration no other test uses, so the process is ours.
  const std::string seconds = "41." + std::to_string(getpid() % 1000);
  const std::string argv = std::string("/bin/sleep") + '\0' + seconds + '\0';
  pid_t supervisor = fork();
  ASSERT_GE(supervisor, 0);
  if (supervisor == 0) {
    auto sandbox = Sandbox::Prepare(MakeRequest(TestPolicy(), {"/bin/sleep", seconds}));
    if (sandbox.ok()) (void)(*sandbox)->Run();
    _exit(0);
  }
  pid_t sandboxed = WaitForProcess(argv, true, std::chrono::seconds(10));
  ASSERT_GT(sandboxed, 0) << "the sandboxed sleep never started";
  // Its groups, counted while it lives: once it is dead, any other test's
  // supervisor may sweep them.
  std::vector<std::string> parents = CgroupParentDirs();
  const size_t groups = GroupsOf(supervisor, parents).size();
  kill(supervisor, SIGKILL);
  int status = 0;
  waitpid(supervisor, &status, 0);
  pid_t left = WaitForProcess(argv, false, std::chrono::seconds(3));
  if (left > 0) kill(left, SIGKILL);  // do not leave it running for the rest of the suite
  EXPECT_LE(left, 0) << "the sandboxed command (host pid " << left << ") outlived its SIGKILLed supervisor";

  // The dead supervisor ran no cleanup, so its cgroups (root: v1) are still
  // there; the next supervisors' sweep removes them (cgroup_names.h). Until
  // the sandbox's last zombie is reaped (by the host's init now), rmdir is
  // refused, so this retries for a while, as later supervisors would.
  auto host = DetectHostCapabilities();
  if (host.ok() && geteuid() == 0 && host->v1_pids.writable) {
    EXPECT_GT(groups, 0u) << "a root run made no v1 cgroup to leave (test is vacuous)";
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  do {
    SweepAbandonedCgroups(parents);
    if (GroupsOf(supervisor, parents).empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < deadline);
  for (const std::string& group : GroupsOf(supervisor, parents)) {
    ADD_FAILURE() << "the SIGKILLed supervisor's cgroup " << group << " survived the sweep";
  }
}

}  // namespace
}  // namespace cocoon::enforcer
