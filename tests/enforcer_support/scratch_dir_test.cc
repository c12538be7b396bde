// ScratchDir: per-run directories that a later run removes when their
// creator died without removing them (scratch_dir.h).
#include "enforcer/workdir/scratch_dir.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>

#include "tests/enforcer_support/test_tree.h"

namespace cocoon::enforcer {
namespace {

using testing::Exists;
using testing::MakeDirs;
using testing::TempDir;
using testing::WriteText;

constexpr std::chrono::seconds kNow{0};

// A child makes a ScratchDir, fills it, and dies without its destructor
// (as a SIGKILLed supervisor would); returns the directory's path.
std::string AbandonedScratchDir(const std::string& parent) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    auto dir = ScratchDir::Create(parent, "run-");
    if (!dir.ok()) _exit(1);
    MakeDirs((*dir)->path() + "/a/b");
    WriteText((*dir)->path() + "/a/b/file", "results");
    chmod(((*dir)->path() + "/a").c_str(), 0500);  // as a run may leave it
    std::string path = (*dir)->path();
    if (write(fds[1], path.data(), path.size()) != static_cast<ssize_t>(path.size())) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  char buffer[4096];
  ssize_t n = read(fds[0], buffer, sizeof buffer);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return n > 0 ? std::string(buffer, static_cast<size_t>(n)) : std::string();
}

TEST(ScratchDirTest, IsRemovedWithItsLockWhenDone) {
  TempDir parent("cocoon-scratch");
  std::string path;
  {
    auto dir = ScratchDir::Create(parent.path(), "run-");
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    path = (*dir)->path();
    struct stat st {};
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    EXPECT_TRUE(Exists(path + ".lock"));
    MakeDirs(path + "/deep/er");
    WriteText(path + "/deep/er/f", "x");
  }
  EXPECT_FALSE(Exists(path));
  EXPECT_FALSE(Exists(path + ".lock"));
}

TEST(ScratchDirTest, SweepLeavesADirectoryInUse) {
  TempDir parent("cocoon-scratch");
  auto dir = ScratchDir::Create(parent.path(), "run-");
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  // The sweep's lock is another open file: it conflicts with the holder's
  // own lock even within one process, as it would across processes.
  EXPECT_EQ(SweepAbandonedScratchDirs(parent.path(), "run-", kNow), 0u);
  EXPECT_TRUE(Exists((*dir)->path()));
  EXPECT_TRUE(Exists((*dir)->path() + ".lock"));
}

TEST(ScratchDirTest, SweepRemovesWhatADeadCreatorLeft) {
  TempDir parent("cocoon-scratch");
  const std::string path = AbandonedScratchDir(parent.path());
  ASSERT_FALSE(path.empty());
  ASSERT_TRUE(Exists(path + "/a/b/file"));
  EXPECT_EQ(SweepAbandonedScratchDirs(parent.path(), "run-", std::chrono::hours(1)), 0u)
      << "too recent: its creator may be between mkdtemp and the lock";
  EXPECT_EQ(SweepAbandonedScratchDirs(parent.path(), "run-", kNow), 1u);
  EXPECT_FALSE(Exists(path));
  EXPECT_FALSE(Exists(path + ".lock"));
}

TEST(ScratchDirTest, SweepRemovesADirectoryWithoutALockAndAStrayLock) {
  TempDir parent("cocoon-scratch");
  MakeDirs(parent / "run-AAAAAA/x");  // its creator died before making the lock
  WriteText(parent / "run-BBBBBB.lock", "");  // or between the two removals
  EXPECT_EQ(SweepAbandonedScratchDirs(parent.path(), "run-", kNow), 1u);
  EXPECT_FALSE(Exists(parent / "run-AAAAAA"));
  EXPECT_FALSE(Exists(parent / "run-BBBBBB.lock"));
}

TEST(ScratchDirTest, SweepLeavesOtherNames) {
  TempDir parent("cocoon-scratch");
  MakeDirs(parent / "run-toolong7");
  MakeDirs(parent / "other-AAAAAA");
  WriteText(parent / "run-CCCCCC", "a file, not a directory");
  EXPECT_EQ(SweepAbandonedScratchDirs(parent.path(), "run-", kNow), 0u);
  EXPECT_TRUE(Exists(parent / "run-toolong7"));
  EXPECT_TRUE(Exists(parent / "other-AAAAAA"));
  EXPECT_TRUE(Exists(parent / "run-CCCCCC"));
}

TEST(ScratchDirTest, SweepLeavesAnotherUsersDirectory) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: needs root to give a directory to another user";
  TempDir parent("cocoon-scratch");
  // Another user could plant this name in /tmp: theirs, and left alone.
  MakeDirs(parent / "run-DDDDDD");
  ASSERT_EQ(chown((parent / "run-DDDDDD").c_str(), 65534, 65534), 0);
  EXPECT_EQ(SweepAbandonedScratchDirs(parent.path(), "run-", kNow), 0u);
  EXPECT_TRUE(Exists(parent / "run-DDDDDD"));
}

}  // namespace
}  // namespace cocoon::enforcer
