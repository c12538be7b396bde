// The staging handshake for real: a forked child in a throwaway mount
// namespace mounts the work dir exactly as the sandbox does, plays the
// sandbox (writes results, plants an escape, fills the quota), and the parent
// populates, verifies and commits.
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <functional>
#include <string>

#include "enforcer/workdir/staging.h"
#include "test_tree.h"

namespace cocoon::enforcer {
namespace {

using testing::Exists;
using testing::ReadText;
using testing::TempDir;
using testing::WriteText;

// Writes `size` bytes to path; returns the errno of the first failure, or 0.
int Fill(const std::string& path, size_t size) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  std::string chunk(64 * 1024, 'z');
  int err = 0;
  for (size_t done = 0; done < size && err == 0; done += chunk.size()) {
    if (write(fd, chunk.data(), chunk.size()) < 0) err = errno;
  }
  close(fd);
  return err;
}

// Runs `sandbox(target)` in a child that first mounts the work dir the way
// the enforcer's child does; the parent side populates. Returns the child's
// exit status (0 = every sandbox expectation held).
int RunStaged(Staging& staging, const std::string& target, const std::function<int(const std::string&)>& sandbox) {
  int sock[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sock) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    close(sock[0]);
    if (unshare(CLONE_NEWNS) != 0) _exit(90);
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(91);
    WorkMountStep step = WorkMountStep::kNone;
    if (MountWorkDirInChild(staging.child_spec(), target.c_str(), sock[1], &step) != 0) {
      _exit(100 + static_cast<int>(step));
    }
    _exit(sandbox(target));
  }
  close(sock[1]);
  Status populated = staging.ReceiveAndPopulate(sock[0]);
  EXPECT_TRUE(populated.ok()) << populated.ToString();
  close(sock[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

class StagingTest : public ::testing::TestWithParam<StagingStrategy> {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: these tests mount (in a throwaway namespace) and need root";
    host_ = parent_ / "work";
    testing::MakeDirs(host_ + "/sub");
    WriteText(host_ + "/input.txt", "original\n");
    WriteText(host_ + "/sub/delete-me", "bye\n");
    ASSERT_EQ(symlink("/usr/share", (host_ + "/own-abs").c_str()), 0);  // the host's own link
    WriteText(extra_ / "copied.txt", "from --copy\n");
  }

  StagingOptions Options() {
    StagingOptions options;
    options.host_dir = host_;
    options.quota_bytes = 1 << 20;
    options.strategy = GetParam();
    options.copies = {ir::Copy{extra_ / "copied.txt", "in/copied.txt"}};
    return options;
  }

  TempDir parent_{"cocoon-parent"};
  TempDir extra_{"cocoon-extra"};
  TempDir target_{"cocoon-target"};
  std::string host_;
};

TEST_P(StagingTest, SandboxSeesContentsWritesAreStagedThenVerifiedAndCommitted) {
  auto staging = Staging::Prepare(Options());
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  ASSERT_EQ((*staging)->strategy(), GetParam());
  int rc = RunStaged(**staging, target_.path(), [](const std::string& work) {
    if (ReadText(work + "/input.txt") != "original\n") return 1;
    if (ReadText(work + "/in/copied.txt") != "from --copy\n") return 2;
    WriteText(work + "/input.txt", "modified\n");
    WriteText(work + "/result.txt", "42\n");
    if (unlink((work + "/sub/delete-me").c_str()) != 0) return 3;
    if (symlink("/etc", (work + "/escape").c_str()) != 0) return 4;
    // The quota is a hard limit: 2 MiB into a 1 MiB tmpfs fails with ENOSPC.
    if (Fill(work + "/big", 2 << 20) != ENOSPC) return 5;
    unlink((work + "/big").c_str());
    return 0;
  });
  ASSERT_EQ(rc, 0) << "sandbox side failed (100+ = mount step)";
  // During and after the run, before the commit, the host dir is untouched.
  EXPECT_EQ(ReadText(host_ + "/input.txt"), "original\n");
  EXPECT_FALSE(Exists(host_ + "/result.txt"));
  EXPECT_TRUE(testing::Exists(host_ + "/sub/delete-me"));
  EXPECT_FALSE(Exists(target_ / "input.txt")) << "a mount leaked out of the throwaway namespace";

  auto result = (*staging)->VerifyAndCommit();
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_TRUE(result->committed);
  ASSERT_EQ(result->scan.findings.size(), 1u);
  EXPECT_EQ(result->scan.findings[0].path, "escape");
  EXPECT_EQ(ReadText(host_ + "/input.txt"), "modified\n");
  EXPECT_EQ(ReadText(host_ + "/result.txt"), "42\n");
  EXPECT_EQ(ReadText(host_ + "/in/copied.txt"), "from --copy\n");
  EXPECT_FALSE(Exists(host_ + "/sub/delete-me"));
  EXPECT_FALSE(Exists(host_ + "/escape"));
  EXPECT_TRUE(Exists(host_ + "/own-abs")) << "the host's own link survives";
  EXPECT_FALSE(Exists(host_ + "/big"));
}

TEST_P(StagingTest, ChildThatDiesBeforeTheCommitCommitsNothing) {
  auto staging = Staging::Prepare(Options());
  ASSERT_TRUE(staging.ok());
  int rc = RunStaged(**staging, target_.path(), [](const std::string& work) {
    WriteText(work + "/result.txt", "partial\n");
    return 0;
  });
  ASSERT_EQ(rc, 0);
  std::atomic<bool> cancel{true};  // SIGINT arrived: the supervisor cancels
  auto result = (*staging)->VerifyAndCommit(&cancel);
  EXPECT_FALSE(result.ok());
  EXPECT_FALSE(Exists(host_ + "/result.txt"));
  EXPECT_EQ(ReadText(host_ + "/input.txt"), "original\n");
}

// As root, the sandbox runs as an unprivileged mapped uid: the staged work
// dir must be that uid's, and the commit hands results to the host dir's owner.
TEST_P(StagingTest, RootCallerGivesWorkDirToSandboxUidAndResultsToHostOwner) {
  constexpr uid_t kSandboxUid = 12345;
  const uid_t host_owner = GetParam() == StagingStrategy::kOverlay ? kSandboxUid : 4242;
  for (const char* p : {"", "/sub", "/input.txt", "/sub/delete-me"}) ASSERT_EQ(lchown((host_ + p).c_str(), host_owner, host_owner), 0);
  StagingOptions options = Options();
  options.sandbox_host_uid = kSandboxUid;
  options.sandbox_host_gid = kSandboxUid;
  auto staging = Staging::Prepare(options);
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  int rc = RunStaged(**staging, target_.path(), [&](const std::string& work) {
    struct stat st {};
    if (stat(work.c_str(), &st) != 0 || st.st_uid != kSandboxUid) return 1;
    if (stat((work + "/in/copied.txt").c_str(), &st) != 0 || st.st_uid != kSandboxUid) return 2;
    if (stat((work + "/in").c_str(), &st) != 0 || st.st_uid != kSandboxUid) return 3;
    // Drop to the sandbox uid: the work dir must still be writable.
    if (setgid(kSandboxUid) != 0 || setuid(kSandboxUid) != 0) return 4;
    WriteText(work + "/input.txt", "modified by uid 12345\n");
    WriteText(work + "/new.txt", "new\n");
    return 0;
  });
  ASSERT_EQ(rc, 0) << "sandbox side failed";
  auto result = (*staging)->VerifyAndCommit();
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  struct stat st {};
  ASSERT_EQ(stat((host_ + "/new.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, host_owner);
  ASSERT_EQ(stat((host_ + "/input.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, host_owner);
  EXPECT_EQ(ReadText(host_ + "/input.txt"), "modified by uid 12345\n");
  ASSERT_EQ(stat(host_.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, host_owner);
}

INSTANTIATE_TEST_SUITE_P(Strategies, StagingTest, ::testing::Values(StagingStrategy::kCopy, StagingStrategy::kOverlay),
                         [](const auto& info) { return info.param == StagingStrategy::kCopy ? "copy" : "overlay"; });

TEST(StagingDirectTest, DirectModeBindsHostDirAndRemediatesAfter) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: mounts (in a throwaway namespace) need root";
  TempDir host("cocoon-direct");
  TempDir target("cocoon-target");
  WriteText(host / "input.txt", "original\n");
  StagingOptions options;
  options.host_dir = host.path();
  options.mode = ir::WorkMode::kDirect;
  auto staging = Staging::Prepare(options);
  ASSERT_TRUE(staging.ok());
  EXPECT_EQ((*staging)->strategy(), StagingStrategy::kDirect);
  EXPECT_EQ((*staging)->DiskLimitRow(true).mechanism, LimitMechanism::kRlimit);
  int rc = RunStaged(**staging, target.path(), [](const std::string& work) {
    WriteText(work + "/result.txt", "direct\n");
    if (symlink("/etc/passwd", (work + "/escape").c_str()) != 0) return 1;
    WriteText(work + "/suid", "x", 04755);
    struct stat st {};
    stat((work + "/suid").c_str(), &st);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  EXPECT_TRUE(Exists(host / "escape")) << "direct mode writes straight to the host";
  auto result = (*staging)->VerifyAndCommit();
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_FALSE(result->committed);
  EXPECT_EQ(result->scan.findings.size(), 2u);
  EXPECT_FALSE(Exists(host / "escape"));
  EXPECT_EQ(ReadText(host / "result.txt"), "direct\n");
}

TEST(StagingPrepareTest, RejectsBadInput) {
  StagingOptions options;
  options.host_dir = "/nonexistent/cocoon/work";
  EXPECT_EQ(Staging::Prepare(options).status().code(), ErrorCode::kNotFound);
  TempDir host;
  options.host_dir = host.path();
  options.copies = {ir::Copy{"/etc/hostname", "../outside"}};
  EXPECT_EQ(Staging::Prepare(options).status().code(), ErrorCode::kInvalidArgument);
  options.copies = {ir::Copy{"/etc/hostname", "/abs"}};
  EXPECT_EQ(Staging::Prepare(options).status().code(), ErrorCode::kInvalidArgument);
}

TEST(StagingPrepareTest, AutoPicksOverlayForBigDirs) {
  TempDir host;
  WriteText(host / "a", std::string(4096, 'a'));
  StagingOptions options;
  options.host_dir = host.path();
  options.overlay_threshold_bytes = 1024;
  auto staging = Staging::Prepare(options);
  ASSERT_TRUE(staging.ok());
  EXPECT_EQ((*staging)->strategy(), StagingStrategy::kOverlay);
  EXPECT_NE(std::string((*staging)->child_spec().overlay_data).find("lowerdir=" + host.path()), std::string::npos);
  options.overlay_threshold_bytes = 1 << 20;
  staging = Staging::Prepare(options);
  ASSERT_TRUE(staging.ok());
  EXPECT_EQ((*staging)->strategy(), StagingStrategy::kCopy);
  EXPECT_EQ(std::string((*staging)->child_spec().tmpfs_data), "size=1073741824,mode=0755");
}

}  // namespace
}  // namespace cocoon::enforcer
