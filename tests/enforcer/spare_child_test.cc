// Spares (spare_child.h), in real sandboxes, as root and unprivileged
// (enforcer_sandbox_test): a spare started between runs serves the next run
// with the whole isolation sequence; one that no longer fits, or that copied
// a mount table the host has changed since, is killed instead of used; and
// the keeper leaves no process behind.
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "enforcer/memory_sharing_clone.h"
#include "enforcer/sandbox.h"
#include "enforcer/spare_child.h"
#include "enforcer/started_child.h"
#include "tests/enforcer/test_util.h"

namespace cocoon::enforcer {
namespace {

using testing::IsolationReportProblems;
using testing::kIsolationReport;
using testing::MakeRequest;
using testing::TestPolicy;

// The options a launch of TestPolicy (network off, no work dir) asks for
// before its plan is parsed.
ChildStartOptions NetworkOffOptions() {
  ChildStartOptions options;
  options.new_network = true;
  options.share_memory = LauncherMayShareMemory();
  return options;
}

// On a loaded test machine a spare may take longer than the server's 5 ms
// to make its namespaces; a Take then (rightly) keeps it for later, which
// would make these tests depend on the scheduler.
constexpr std::chrono::microseconds kTestReadyWait = std::chrono::seconds(5);

// Replenish, then wait until the keeper has started `count` spares in all.
bool ReplenishAndWait(SpareChildKeeper& keeper, uint64_t count) {
  keeper.Replenish();
  for (int i = 0; i < 5000; ++i) {
    if (keeper.counts().started >= count) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// Children of any thread of this process (/proc/self/task/*/children).
std::vector<pid_t> ChildPids() {
  std::vector<pid_t> pids;
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return pids;
  while (dirent* task = readdir(tasks)) {
    if (task->d_name[0] == '.') continue;
    std::ifstream children(std::string("/proc/self/task/") + task->d_name + "/children");
    pid_t pid = 0;
    while (children >> pid) pids.push_back(pid);
  }
  closedir(tasks);
  return pids;
}

int CountChildren() { return static_cast<int>(ChildPids().size()); }

// Waits (up to 5 s) until `pid` has exited and is not yet reaped.
bool BecomesAZombie(pid_t pid) {
  for (int i = 0; i < 5000; ++i) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    size_t paren = line.rfind(')');
    if (paren != std::string::npos && line.compare(paren, 4, ") Z ") == 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

// Spares serve only a process that ignores SIGPIPE (spare_child.h), as
// `cocoon mcp` does; each test ignores it and restores what it was.
class SpareChildKeeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ASSERT_EQ(sigaction(SIGPIPE, &ignore, &previous_), 0);
  }
  void TearDown() override { sigaction(SIGPIPE, &previous_, nullptr); }

 private:
  struct sigaction previous_ {};
};

TEST_F(SpareChildKeeperTest, ASpareStartedBetweenRunsServesTheNextRunWithTheWholeSequence) {
  SpareChildKeeper keeper(kTestReadyWait);
  EXPECT_EQ(keeper.Take(NetworkOffOptions()), nullptr) << "no spare before the first Replenish";
  EXPECT_EQ(keeper.counts().missed, 1u);
  ASSERT_TRUE(ReplenishAndWait(keeper, 1)) << "no spare started; failed starts: " << keeper.counts().failed;
  std::unique_ptr<StartedChild> spare = keeper.Take(NetworkOffOptions());
  ASSERT_NE(spare, nullptr);
  EXPECT_EQ(keeper.counts().taken, 1u);
  pid_t spare_pid = spare->pid();

  SandboxRequest request = MakeRequest(TestPolicy(), {"/bin/sh", "-c", kIsolationReport});
  request.started_child = std::shared_ptr<StartedChild>(std::move(spare));
  auto sandbox = Sandbox::Prepare(std::move(request));
  ASSERT_TRUE(sandbox.ok()) << sandbox.status().ToString();
  auto outcome = (*sandbox)->Run();
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ((*sandbox)->pid(), spare_pid) << "the spare was not the process that ran";
  EXPECT_EQ(outcome->exit_code, 0) << outcome->stderr_data;
  EXPECT_EQ(IsolationReportProblems(outcome->stdout_data), "");
}

// A spare started for "network on" shares the host's network namespace: it
// must never serve a launch that asks for the network off.
TEST_F(SpareChildKeeperTest, ASpareThatDoesNotFitIsKilledNotHandedOut) {
  ChildStartOptions network_on = NetworkOffOptions();
  network_on.new_network = false;
  SpareChildKeeper keeper(kTestReadyWait);
  EXPECT_EQ(keeper.Take(network_on), nullptr);
  ASSERT_TRUE(ReplenishAndWait(keeper, 1));
  EXPECT_EQ(CountChildren(), 1);
  EXPECT_EQ(keeper.Take(NetworkOffOptions()), nullptr);
  EXPECT_EQ(keeper.counts().unfit, 1u);
  EXPECT_EQ(CountChildren(), 0) << "the spare that did not fit is still there";
}

// A spare that died while it waited is not handed out: the launch starts a
// child of its own instead of failing on the spare's old error.
TEST_F(SpareChildKeeperTest, ASpareThatDiedWhileWaitingIsNotHandedOut) {
  SpareChildKeeper keeper(kTestReadyWait);
  (void)keeper.Take(NetworkOffOptions());
  ASSERT_TRUE(ReplenishAndWait(keeper, 1));
  std::vector<pid_t> spares = ChildPids();
  ASSERT_EQ(spares.size(), 1u);
  ASSERT_EQ(kill(spares[0], SIGKILL), 0);
  ASSERT_TRUE(BecomesAZombie(spares[0]));
  EXPECT_EQ(keeper.Take(NetworkOffOptions()), nullptr);
  EXPECT_EQ(keeper.counts().dead, 1u);
  EXPECT_TRUE(ChildPids().empty()) << "the dead spare was not reaped";
}

// A server expects its first call's shape: that call is served by a spare
// too. A run that spares may not serve (its own signal handling) is not.
TEST_F(SpareChildKeeperTest, AnExpectedShapeIsStartedBeforeTheFirstCall) {
  SpareChildKeeper keeper(kTestReadyWait);
  keeper.Expect(NetworkOffOptions());
  for (int i = 0; i < 5000 && keeper.counts().started == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(keeper.counts().started, 1u);
  ChildStartOptions own_signals = NetworkOffOptions();
  own_signals.signals = SignalHandling::kCancelOnSigintSigterm;
  EXPECT_EQ(keeper.Take(own_signals), nullptr);
  EXPECT_NE(keeper.Take(NetworkOffOptions()), nullptr) << "the spare went with the call it could not serve";
  EXPECT_EQ(keeper.counts().started, 1u);
}

TEST_F(SpareChildKeeperTest, TheKeeperKillsItsSpareWhenItGoes) {
  {
    SpareChildKeeper keeper(kTestReadyWait);
    (void)keeper.Take(NetworkOffOptions());
    ASSERT_TRUE(ReplenishAndWait(keeper, 1));
    EXPECT_EQ(CountChildren(), 1);
  }
  EXPECT_EQ(CountChildren(), 0) << "the keeper left its spare behind";
}

// A keeper holding a spare, then a mount on `dir` in the (throwaway) host
// mount namespace, which makes that spare stale.
struct SpareMadeStale {
  SpareChildKeeper keeper{kTestReadyWait};
  ChildStartOptions options = [] {
    ChildStartOptions o = NetworkOffOptions();
    o.share_memory = false;  // the forked test child is not what LauncherMayShareMemory judged
    return o;
  }();
  // 0, or 13 (no spare) or 14 (the mount failed).
  int Make(const char* dir) {
    (void)keeper.Take(options);
    if (!ReplenishAndWait(keeper, 1)) return 13;
    return mount("tmpfs", dir, "tmpfs", 0, "size=64k") == 0 ? 0 : 14;
  }
};

// Runs `body(dir)` in a forked child that has a throwaway mount namespace of
// its own (as an unprivileged user, inside a user namespace of its own too)
// and an empty directory `dir` to mount on, so that its "host" mount changes
// never reach the real host. Returns the child's exit code: 10-12 for the
// setup, else what `body` returned.
int InAThrowawayMountNamespace(const std::function<int(const char* dir)>& body) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    uid_t uid = getuid();
    gid_t gid = getgid();
    if (uid != 0) {
      if (unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) _exit(10);
      std::ofstream("/proc/self/setgroups") << "deny";
      std::ofstream("/proc/self/uid_map") << "0 " << uid << " 1";
      std::ofstream("/proc/self/gid_map") << "0 " << gid << " 1";
    } else if (unshare(CLONE_NEWNS) != 0) {
      _exit(10);
    }
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(11);
    char dir[] = "/tmp/cocoon-spare-XXXXXX";
    if (mkdtemp(dir) == nullptr) _exit(12);
    int code = body(dir);
    umount2(dir, MNT_DETACH);
    rmdir(dir);
    _exit(code);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// A spare's mount namespace is a copy of the host's at its start; after a
// mount on the host it is stale and must not be handed out. The "host" here
// is a throwaway mount namespace of a forked child (as an unprivileged
// user, inside a user namespace of its own), so nothing changes on the
// real host.
TEST_F(SpareChildKeeperTest, ASpareIsNotHandedOutOnceTheHostMountTableChanged) {
  int code = InAThrowawayMountNamespace([](const char* dir) {
    SpareMadeStale stale;
    if (int failed = stale.Make(dir)) return failed;
    SpareChildKeeper& keeper = stale.keeper;
    const ChildStartOptions& options = stale.options;
    // The keeper's watch kills the stale spare without waiting for a call,
    // and starts one with a copy of the new table.
    for (int i = 0;; ++i) {
      SpareChildKeeper::Counts counts = keeper.counts();
      if (counts.stale == 1 && counts.started == 2) break;
      if (i == 5000) return 15;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    // The old spare is gone (reaped), and the fresh one is served.
    if (CountChildren() != 1) return 16;
    if (keeper.Take(options) == nullptr) return 17;
    return 0;
  });
  EXPECT_EQ(code, 0) << "10-12: namespace setup; 13: no spare; 14: mount; 15: the stale spare was not replaced "
                        "within 5 s; 16: the stale spare was not reaped; 17: the fresh spare was not handed out";
}

TEST_F(SpareChildKeeperTest, AReplenishWhileASpareWaitsStartsNothingDuringTheNextCall) {
  SpareChildKeeper keeper(kTestReadyWait);
  ChildStartOptions options = NetworkOffOptions();
  EXPECT_EQ(keeper.Take(options), nullptr);  // the shape of the calls to come
  ASSERT_TRUE(ReplenishAndWait(keeper, 1));
  keeper.Replenish();  // a second call ended while the spare waits: nothing to do
  auto taken = keeper.Take(options);
  ASSERT_NE(taken, nullptr);
  // The call that took it is running now: no spare may start before it ends
  // (the keeper looks again every kWatchInterval).
  std::this_thread::sleep_for(SpareChildKeeper::kWatchInterval + std::chrono::milliseconds(300));
  EXPECT_EQ(keeper.counts().started, 1u);
  EXPECT_TRUE(ReplenishAndWait(keeper, 2));  // and the end of that call starts one
}

TEST_F(SpareChildKeeperTest, ASpareIsNotHandedOutToAThreadThatANewChildWouldInheritOtherSchedulingFrom) {
  // A renice (or taskset, prlimit, cgroup move) of the calling thread after
  // the spare started: a child that thread started now would run niced, so
  // the spare, which is not, must not serve it.
  SpareChildKeeper keeper(kTestReadyWait);
  ChildStartOptions options = NetworkOffOptions();
  EXPECT_EQ(keeper.Take(options), nullptr);
  ASSERT_TRUE(ReplenishAndWait(keeper, 1));
  bool handed_out = true;
  std::thread niced([&] {
    errno = 0;
    int nice_now = getpriority(PRIO_PROCESS, 0);
    ASSERT_EQ(errno, 0);
    ASSERT_EQ(setpriority(PRIO_PROCESS, 0, std::min(nice_now + 5, 19)), 0);  // this thread only
    handed_out = keeper.Take(options) != nullptr;
  });
  niced.join();
  EXPECT_FALSE(handed_out);
  EXPECT_EQ(keeper.counts().outdated, 1u);
}

TEST_F(SpareChildKeeperTest, ATakeRightAfterAMountChangeGetsNoStaleSpare) {
  // Like the test above, but the Take comes at once, before the keeper's
  // watch (every second) can notice: the check at the hand-over must.
  int code = InAThrowawayMountNamespace([](const char* dir) {
    SpareMadeStale stale;
    if (int failed = stale.Make(dir)) return failed;
    SpareChildKeeper& keeper = stale.keeper;
    const ChildStartOptions& options = stale.options;
    auto taken = keeper.Take(options);
    SpareChildKeeper::Counts counts = keeper.counts();
    // Either the hand-over found the spare stale, or (a second later) the
    // watch replaced it first and the spare handed out is the fresh one.
    if (counts.stale != 1) return 15;
    if (taken != nullptr && counts.started != 2) return 16;
    return 0;
  });
  EXPECT_EQ(code, 0) << "10-12: namespace setup; 13: no spare; 14: mount; 15: the stale spare was not discarded at "
                        "the hand-over; 16: the stale spare was handed out";
}

}  // namespace
}  // namespace cocoon::enforcer
