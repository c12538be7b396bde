// Groups a SIGKILLed supervisor leaves behind (cgroup_names.h), on this
// machine's real cgroup v1 hierarchies as root: a later supervisor with the
// same name reclaims the group instead of being refused, and the sweep
// removes abandoned groups but never one in use or someone else's.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "enforcer/limits/cgroup.h"
#include "enforcer/limits/cgroup_names.h"
#include "enforcer/limits/host_caps.h"
#include "enforcer/limits/limit_plan.h"

namespace cocoon::enforcer {
namespace {

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

std::string ReadLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// A process parked in the v1 group `dir`, as a sandbox left there would be.
pid_t ParkProcessIn(const std::string& dir) {
  pid_t pid = fork();
  if (pid == 0) {
    pause();
    _exit(0);
  }
  std::ofstream(dir + "/cgroup.procs") << pid << std::flush;
  return pid;
}

// A pid that no process has: a reaped child's (reuse within the test is
// vanishingly unlikely; the sweep checks liveness at the time it runs).
pid_t DeadPid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
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
    for (const std::string& dir : made_) rmdir(dir.c_str());
  }
  std::string MakeGroup(const std::string& name) {
    std::string dir = parent_ + "/" + name;
    EXPECT_EQ(mkdir(dir.c_str(), 0755), 0) << dir;
    made_.push_back(dir);
    return dir;
  }

  HostCapabilities host_;
  std::string parent_;
  std::vector<std::string> made_;
};

TEST_F(StaleCgroupTest, ASupervisorReclaimsTheGroupADeadOneLeftUnderItsName) {
  const std::string name = SandboxCgroupName(1000000 + getpid());
  const std::string stale = MakeGroup(name);
  std::ofstream(stale + "/pids.max") << "max" << std::flush;
  pid_t leftover = ParkProcessIn(stale);

  ir::Limits limits;
  limits.processes = ir::Limit{true, 9, ir::Enforcement::kRequired};
  auto plan = PlanLimits(limits, host_, LimitPlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();

  auto refused = Cgroup::Create(plan->cgroup, host_, name);
  ASSERT_FALSE(refused.ok()) << "an existing group must not be joined silently";
  EXPECT_NE(refused.status().ToString().find("File exists"), std::string::npos) << refused.status().ToString();

  auto cg = Cgroup::Create(plan->cgroup, host_, name, Cgroup::ExistingGroup::kReclaimAsStale);
  ASSERT_TRUE(cg.ok()) << cg.status().ToString();
  int status = 0;
  ASSERT_EQ(waitpid(leftover, &status, 0), leftover);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "the leftover process was not killed";
  EXPECT_EQ(ReadLine(stale + "/pids.max"), "9") << "the reclaimed group must carry this run's limits";
  auto count = (*cg)->ProcessCount();
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 0u);
  EXPECT_TRUE((*cg)->Destroy().ok());
}

TEST_F(StaleCgroupTest, TheSweepRemovesOnlyGroupsOfDeadSupervisorsInThisPidNamespace) {
  const std::string ns = std::to_string(OwnPidNamespace());
  const std::string dead = std::to_string(DeadPid());
  const std::string abandoned = MakeGroup("cocoon-" + ns + "-" + dead + "-1");
  const std::string live = MakeGroup(SandboxCgroupName(2000000 + getpid()));  // ours: we are alive
  const std::string other_namespace = MakeGroup("cocoon-" + std::to_string(OwnPidNamespace() + 1) + "-" + dead + "-1");
  const std::string busy = MakeGroup("cocoon-" + ns + "-" + dead + "-2");
  const std::string older_cocoon = MakeGroup("cocoon-" + dead + "-1");
  pid_t parked = ParkProcessIn(busy);

  size_t removed = SweepAbandonedCgroups({parent_});

  EXPECT_FALSE(Exists(abandoned)) << "a dead supervisor's empty group stays behind";
  EXPECT_TRUE(Exists(live)) << "a live supervisor's group was removed";
  EXPECT_TRUE(Exists(other_namespace)) << "a group of another pid namespace was removed";
  EXPECT_TRUE(Exists(busy)) << "a group holding a process was removed";
  EXPECT_TRUE(Exists(older_cocoon)) << "a name the sweep cannot attribute was removed";
  EXPECT_GE(removed, 1u);
  kill(parked, SIGKILL);
  waitpid(parked, nullptr, 0);
}

}  // namespace
}  // namespace cocoon::enforcer
