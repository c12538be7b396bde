// A supervisor that fails after the command started must still verify what
// the sandbox wrote on the host: a direct work dir and a writable bind
// (finish.cc). Before, any such failure (an error of the watch over the
// run, an exception) returned early, and a setuid copy of a binary or a
// link to /etc/shadow the sandbox planted there stayed on the host,
// unreported. Real sandboxes; run as root and unprivileged
// (enforcer_sandbox_test_unprivileged).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>

#include "enforcer/sandbox.h"
#include "tests/enforcer/test_util.h"

namespace cocoon::enforcer {
namespace {

// What each test's command leaves in /work and /wb before anything else: a
// setuid copy of a binary and a link to /etc/shadow. Then `then`.
std::string PlantThen(const std::string& then) {
  return "for d in /work /wb; do cp /bin/true $d/su && chmod 4755 $d/su && ln -s /etc/shadow $d/shadow || exit 3; "
         "done; " +
         then;
}

class SupervisorFailureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/cocoon-supervisor-failure-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    base_ = pattern;
    work_ = base_ + "/work";
    wb_ = base_ + "/wb";
    ASSERT_EQ(mkdir(work_.c_str(), 0755), 0);
    ASSERT_EQ(mkdir(wb_.c_str(), 0755), 0);
    if (geteuid() == 0) {
      // The sandbox is host uid 65534 (userns.h): the dirs must be its own.
      for (const std::string& dir : {base_, work_, wb_}) ASSERT_EQ(chown(dir.c_str(), 65534, 65534), 0) << dir;
    }
  }
  void TearDown() override { std::filesystem::remove_all(base_); }

  // A direct work dir, and wb_ bound writable at /wb.
  SandboxRequest Request(const std::string& script) {
    ir::Policy policy = testing::TestPolicy();
    policy.filesystem.work.mode = ir::WorkMode::kDirect;
    policy.filesystem.mounts.push_back({ir::MountKind::kWritable, wb_, "/wb", 0, false});  // sorts last
    SandboxRequest request = testing::MakeRequest(policy, {"/bin/sh", "-c", script});
    request.work_host_dir = work_;
    return request;
  }

  // The planted entries are gone or defused on the host, and (when the
  // run returned an Outcome) each is a finding of it.
  void ExpectCleanedAndReported(const Result<Outcome>& result, std::set<std::string> also_found = {}) {
    for (const std::string& dir : {work_, wb_}) {
      struct stat st {};
      ASSERT_EQ(lstat((dir + "/su").c_str(), &st), 0) << dir << ": the command did not run as far as planting";
      EXPECT_EQ(st.st_mode & 06000, 0u) << dir << "/su kept its setuid bit on the host";
      EXPECT_NE(lstat((dir + "/shadow").c_str(), &st), 0) << dir << "/shadow, a link to /etc/shadow, stayed on the host";
    }
    ASSERT_TRUE(result.ok()) << result.status().ToString();
    const Outcome& outcome = *result;
    std::set<std::string> findings;
    for (const BreakoutFinding& f : outcome.breakout_findings) findings.insert(FindingPath(f) + ":" + f.kind);
    std::set<std::string> expected = {"su:setuid", "shadow:symlink-escape", "/wb/su:setuid",
                                      "/wb/shadow:symlink-escape"};
    expected.merge(also_found);
    EXPECT_EQ(findings, expected);
    EXPECT_FALSE(outcome.breakout_clean);
    EXPECT_EQ(outcome.work_mode, "direct");
    EXPECT_EQ(outcome.verification, "after-the-fact") << outcome.verification_error;
    EXPECT_EQ(outcome.writable_verification, "after-the-fact") << outcome.writable_error;
    // And the Outcome says the supervisor failed: not a run that ended well.
    EXPECT_EQ(outcome.termination_reason, TerminationReason::kFailed);
    EXPECT_NE(outcome.supervisor_error.find("the supervisor failed after the command started"), std::string::npos)
        << outcome.supervisor_error;
    EXPECT_EQ(ShellExitStatus(outcome), kExitWorkDirUnverified);
  }

  std::string base_, work_, wb_;
};

// The caller's output sink throws on the command's first output, while the
// sandbox still runs: the supervisor fails mid-run. The sandbox is killed,
// and only then are the work dir and the bind verified: a process of it
// that plants a link again and again (/wb/again) would otherwise put one
// back after the scan.
TEST_F(SupervisorFailureTest, AnExceptionWhileSupervisingStillVerifiesTheDirectWorkDirAndWritableBinds) {
  SandboxRequest request = Request(PlantThen(
      "(ln -s /etc/shadow /wb/again; echo planted; while :; do ln -s /etc/shadow /wb/again 2>/dev/null; done) & "
      "exec sleep 60"));
  request.on_output = [](OutputStream, std::string_view) { throw std::runtime_error("the output sink broke"); };
  Result<Outcome> outcome = InternalError("not run");
  try {
    outcome = RunSandbox(std::move(request));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "the run let an exception out (nothing was verified after it): " << e.what();
  }
  struct stat st {};
  EXPECT_NE(lstat((wb_ + "/again").c_str(), &st), 0) << "a process of the sandbox planted a link after the scan";
  ExpectCleanedAndReported(outcome, {"/wb/again:symlink-escape"});
  if (outcome.ok()) {
    EXPECT_NE(outcome->supervisor_error.find("the output sink broke"), std::string::npos) << outcome->supervisor_error;
    EXPECT_EQ(outcome->stdout_data, "planted\n") << "what the command wrote before is still reported";
  }
}

// A supervisor whose wait for the sandbox's init fails (ECHILD: this
// process ignores SIGCHLD, so the kernel reaped the init itself) after the
// command ran to its end.
TEST_F(SupervisorFailureTest, AFailedWaitStillVerifiesTheDirectWorkDirAndWritableBinds) {
  struct sigaction ignore {}, previous {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ASSERT_EQ(sigaction(SIGCHLD, &ignore, &previous), 0);
  auto outcome = RunSandbox(Request(PlantThen("echo planted")));
  sigaction(SIGCHLD, &previous, nullptr);
  ExpectCleanedAndReported(outcome);
  if (outcome.ok()) {
    EXPECT_NE(outcome->supervisor_error.find("wait4"), std::string::npos) << outcome->supervisor_error;
  }
}

// A staged work dir commits nothing when the supervisor fails (the run did
// not end on its own), and the writable bind is still verified.
TEST_F(SupervisorFailureTest, AStagedWorkDirCommitsNothingWhenTheSupervisorFails) {
  ir::Policy policy = testing::TestPolicy();
  policy.filesystem.mounts.push_back({ir::MountKind::kWritable, wb_, "/wb", 0, false});
  SandboxRequest request = testing::MakeRequest(
      policy, {"/bin/sh", "-c", "echo result > /work/result.txt; ln -s /etc/shadow /wb/shadow; echo planted; sleep 60"});
  request.work_host_dir = work_;
  request.on_output = [](OutputStream, std::string_view) { throw std::runtime_error("the output sink broke"); };
  Result<Outcome> outcome = InternalError("not run");
  try {
    outcome = RunSandbox(std::move(request));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "the run let an exception out (nothing was verified after it): " << e.what();
  }
  struct stat st {};
  EXPECT_NE(lstat((work_ + "/result.txt").c_str(), &st), 0) << "a run whose supervisor failed was committed";
  EXPECT_NE(lstat((wb_ + "/shadow").c_str(), &st), 0) << "/wb/shadow, a link to /etc/shadow, stayed on the host";
  ASSERT_TRUE(outcome.ok()) << outcome.status().ToString();
  EXPECT_EQ(outcome->termination_reason, TerminationReason::kFailed);
  EXPECT_FALSE(outcome->committed);
  EXPECT_EQ(outcome->verification, "not-run");
  EXPECT_EQ(outcome->writable_verification, "after-the-fact") << outcome->writable_error;
  EXPECT_EQ(ShellExitStatus(*outcome), kExitWorkDirUnverified);
}

}  // namespace
}  // namespace cocoon::enforcer
