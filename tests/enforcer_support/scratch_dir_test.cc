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

// The user's state dir at /tmp/.cocoon-<uid> can be made first by another
// user (sticky /tmp: its owner cannot remove it), which refused every run
// of the victim's for good ("... is not a directory owned by us ...; remove
// it", root's too). That directory is still never used, but the run goes
// on in a fresh fallback dir of its own, which goes when it is done. Seen
// failing before the fix (there was no fallback: the refusal above).
TEST(StateDirTest, ANamePlantedByAnotherUserIsLeftAloneAndAFallbackIsUsed) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED: needs root to plant a directory of another user";
  TempDir tmp("cocoon-statedir");
  ASSERT_EQ(chmod(tmp.path().c_str(), 01777), 0);
  const std::string planted = tmp / ".cocoon-0";
  ASSERT_EQ(mkdir(planted.c_str(), 0711), 0);
  ASSERT_EQ(chown(planted.c_str(), 65534, 65534), 0);
  struct stat before {};
  ASSERT_EQ(lstat(planted.c_str(), &before), 0);
  StateDirPlaces places;
  places.euid = 0;
  places.run = tmp / "no-run";  // as in a container without /run
  places.tmp = tmp.path();
  std::string used;
  {
    auto chosen = StateDir::Choose(places);
    ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
    used = (*chosen)->path();
    EXPECT_TRUE((*chosen)->is_fallback());
    EXPECT_EQ(used.rfind(tmp / ".cocoon-0-", 0), 0u) << used;
    struct stat st {};
    ASSERT_EQ(lstat(used.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, 0u);
    EXPECT_EQ(st.st_mode & 07777, 0711u);
    // Live: a sweep leaves it.
    EXPECT_EQ(SweepAbandonedFallbackStateDirs(tmp.path(), 0, kNow), 0u);
    EXPECT_TRUE(Exists(used));
  }
  EXPECT_FALSE(Exists(used)) << "the fallback dir goes with its process's use of it";
  struct stat after {};
  ASSERT_EQ(lstat(planted.c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino);
  EXPECT_EQ(after.st_uid, 65534u);
  EXPECT_EQ(after.st_mode & 07777, 0711u);
}

// Root's state dir is /run/cocoon, where no other user can make a name.
TEST(StateDirTest, RootUsesRunFirst) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED: the /run choice is root's, and this is not root";
  TempDir tmp("cocoon-statedir");
  StateDirPlaces places;
  places.euid = 0;
  places.run = tmp / "run";
  places.tmp = tmp / "tmp";
  MakeDirs(places.run);
  auto chosen = StateDir::Choose(places);
  ASSERT_TRUE(chosen.ok()) << chosen.status().ToString();
  EXPECT_EQ((*chosen)->path(), tmp / "run/cocoon");
  EXPECT_FALSE((*chosen)->is_fallback());
}

// A user's $XDG_RUNTIME_DIR (0700, theirs) comes first; one that is not
// private to them is not used. Run as uid 65534 in a child.
TEST(StateDirTest, AUsersOwnXdgRuntimeDirComesFirst) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED: needs root to act as another user";
  TempDir tmp("cocoon-statedir");
  ASSERT_EQ(chmod(tmp.path().c_str(), 01777), 0);
  MakeDirs(tmp / "xdg");
  ASSERT_EQ(chown((tmp / "xdg").c_str(), 65534, 65534), 0);
  ASSERT_EQ(chmod((tmp / "xdg").c_str(), 0700), 0);
  MakeDirs(tmp / "open-xdg");
  ASSERT_EQ(chown((tmp / "open-xdg").c_str(), 65534, 65534), 0);
  ASSERT_EQ(chmod((tmp / "open-xdg").c_str(), 0755), 0);
  pid_t pid = fork();
  if (pid == 0) {
    if (setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
    StateDirPlaces places;
    places.euid = 65534;
    places.tmp = tmp.path();
    places.xdg_runtime_dir = tmp / "xdg";
    auto chosen = StateDir::Choose(places);
    if (!chosen.ok() || (*chosen)->path() != tmp / "xdg/cocoon") _exit(3);
    places.xdg_runtime_dir = tmp / "open-xdg";
    chosen = StateDir::Choose(places);
    if (!chosen.ok() || (*chosen)->path() != tmp / ".cocoon-65534") _exit(4);
    places.xdg_runtime_dir = "relative/xdg";
    chosen = StateDir::Choose(places);
    if (!chosen.ok() || (*chosen)->path() != tmp / ".cocoon-65534") _exit(5);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: setuid, 3: own XDG dir not used, 4: open XDG dir used, 5: relative used";
}

// A fallback dir whose process died (SIGKILLed: no destructor) is removed
// by a later sweep, with all in it; another user's entry of the name, and a
// link of ours pointing at a directory, are never entered.
TEST(StateDirTest, SweepRemovesADeadProcesssFallbackDirAndNothingElse) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED: needs root to plant a directory of another user";
  TempDir tmp("cocoon-statedir");
  ASSERT_EQ(chmod(tmp.path().c_str(), 01777), 0);
  ASSERT_EQ(mkdir((tmp / ".cocoon-0").c_str(), 0711), 0);
  ASSERT_EQ(chown((tmp / ".cocoon-0").c_str(), 65534, 65534), 0);
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    StateDirPlaces places;
    places.run = tmp / "no-run";
    places.tmp = tmp.path();
    auto chosen = StateDir::Choose(places);
    if (!chosen.ok()) _exit(1);
    MakeDirs((*chosen)->path() + "/root");
    MakeDirs((*chosen)->path() + "/cocoon-stage-AAAAAA/upper");
    const std::string path = (*chosen)->path();
    if (write(fds[1], path.data(), path.size()) != static_cast<ssize_t>(path.size())) _exit(1);
    _exit(0);  // no destructor: as if killed
  }
  close(fds[1]);
  char buffer[4096];
  const ssize_t n = read(fds[0], buffer, sizeof buffer);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ASSERT_GT(n, 0);
  const std::string dead(buffer, static_cast<size_t>(n));
  ASSERT_TRUE(Exists(dead + "/cocoon-stage-AAAAAA/upper"));
  // Another user's dir of the pattern, with a file in it; and our link to
  // a directory of the pattern.
  MakeDirs(tmp / ".cocoon-0-BBBBBB");
  WriteText(tmp / ".cocoon-0-BBBBBB/lock", "");
  ASSERT_EQ(chown((tmp / ".cocoon-0-BBBBBB").c_str(), 65534, 65534), 0);
  MakeDirs(tmp / "target");
  ASSERT_EQ(symlink((tmp / "target").c_str(), (tmp / ".cocoon-0-CCCCCC").c_str()), 0);
  EXPECT_EQ(SweepAbandonedFallbackStateDirs(tmp.path(), 0, kNow), 1u);
  EXPECT_FALSE(Exists(dead));
  EXPECT_TRUE(Exists(tmp / ".cocoon-0-BBBBBB/lock"));
  EXPECT_TRUE(Exists(tmp / "target"));
  EXPECT_TRUE(Exists(tmp / ".cocoon-0"));
}

}  // namespace
}  // namespace cocoon::enforcer
