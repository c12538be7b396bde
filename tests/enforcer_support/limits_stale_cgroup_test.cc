// Groups a SIGKILLed supervisor leaves behind (cgroup_names.h), on this
// machine's real cgroup v1 hierarchies as root: an existing group is never
// joined, and the sweep removes abandoned groups but never one in use or
// someone else's.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "enforcer/limits/cgroup.h"
#include "enforcer/limits/cgroup_names.h"
#include "enforcer/limits/host_caps.h"
#include "enforcer/limits/limit_plan.h"

namespace cocoon::enforcer {
namespace {

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A pid that no process has: a reaped child's (reuse within the test is
// vanishingly unlikely; the sweep checks liveness at the time it runs).
pid_t DeadPid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

std::string NameOf(uint64_t pid_namespace, pid_t pid) {
  return "cocoon-" + std::to_string(pid_namespace) + "-" + std::to_string(pid) + "-0123456789abcdef";
}

class StaleCgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto detected = DetectHostCapabilities();
    ASSERT_TRUE(detected.ok());
    host_ = *detected;
    if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: needs root to create cgroup v1 groups";
    if (!host_.v1_pids.writable) GTEST_SKIP() << "SKIPPED: no writable cgroup v1 pids hierarchy on this host";
    parent_ = host_.v1_pids.Dir();
  }
  void TearDown() override {
    for (pid_t pid : parked_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    for (const std::string& dir : made_) rmdir(dir.c_str());
  }
  std::string MakeGroup(const std::string& name) {
    std::string dir = parent_ + "/" + name;
    EXPECT_EQ(mkdir(dir.c_str(), 0755), 0) << dir;
    made_.push_back(dir);
    return dir;
  }
  // A process parked in the v1 group `dir`, as a sandbox would be.
  void ParkProcessIn(const std::string& dir) {
    pid_t pid = fork();
    if (pid == 0) {
      pause();
      _exit(0);
    }
    parked_.push_back(pid);
    std::ofstream(dir + "/cgroup.procs") << pid << std::flush;
    const std::string name = dir.substr(dir.rfind('/'));
    ASSERT_NE(ReadAll("/proc/" + std::to_string(pid) + "/cgroup").find(name), std::string::npos)
        << "could not move a process into " << dir;
  }

  HostCapabilities host_;
  std::string parent_;
  std::vector<std::string> made_;
  std::vector<pid_t> parked_;
};

TEST_F(StaleCgroupTest, AnExistingGroupIsNeverJoined) {
  const std::string name = SandboxCgroupName();
  const std::string existing = MakeGroup(name);
  std::ofstream(existing + "/pids.max") << "max" << std::flush;
  ir::Limits limits;
  limits.processes = ir::Limit{true, 9, ir::Enforcement::kRequired};
  auto plan = PlanLimits(limits, host_, LimitPlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();

  auto refused = Cgroup::Create(plan->cgroup, host_, name);
  ASSERT_FALSE(refused.ok()) << "an existing group was joined";
  EXPECT_NE(refused.status().ToString().find("File exists"), std::string::npos) << refused.status().ToString();
  EXPECT_EQ(ReadAll(existing + "/pids.max"), "max\n") << "the existing group was changed";
}

TEST_F(StaleCgroupTest, TheSweepRemovesOnlyGroupsOfDeadSupervisorsInThisPidNamespace) {
  const uint64_t ns = OwnPidNamespace();
  const pid_t dead = DeadPid();
  const std::string abandoned = MakeGroup(NameOf(ns, dead));
  const std::string live = MakeGroup(SandboxCgroupName());  // ours: we are alive
  const std::string other_namespace = MakeGroup(NameOf(ns + 1, dead));
  const std::string busy = MakeGroup("cocoon-" + std::to_string(ns) + "-" + std::to_string(dead) + "-fedcba9876543210");
  const std::string older_cocoon = MakeGroup("cocoon-" + std::to_string(dead) + "-1");
  ParkProcessIn(busy);

  std::vector<std::string> found = FindAbandonedCgroups({parent_});  // what `cocoon doctor` reports
  EXPECT_NE(std::find(found.begin(), found.end(), abandoned), found.end());
  EXPECT_EQ(std::find(found.begin(), found.end(), live), found.end());
  EXPECT_EQ(std::find(found.begin(), found.end(), other_namespace), found.end());
  // Not asserted on the count: a sandbox of another test running at the same
  // time sweeps now and then too (sandbox.cc), and may have removed
  // `abandoned` first (ctest -j2 saw that once).
  SweepAbandonedCgroups({parent_});

  EXPECT_FALSE(Exists(abandoned)) << "a dead supervisor's empty group stays behind";
  EXPECT_TRUE(Exists(live)) << "a live supervisor's group was removed";
  EXPECT_TRUE(Exists(other_namespace)) << "a group of another pid namespace was removed";
  EXPECT_TRUE(Exists(busy)) << "a group holding a process was removed";
  EXPECT_TRUE(Exists(older_cocoon)) << "a name the sweep cannot attribute was removed";
}

}  // namespace
}  // namespace cocoon::enforcer
