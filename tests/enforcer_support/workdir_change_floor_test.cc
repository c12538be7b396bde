// The ctime criterion direct mode and writable binds rely on
// (enforcer/workdir/change_floor.h): every way the sandbox can make an entry
// appear or change stamps its ctime at or after the run's change floor, on
// each filesystem a work dir or bind may be on here: the test's own (ext4
// on this host), tmpfs and overlayfs (in a throwaway mount namespace, as
// root).
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "enforcer/workdir/change_floor.h"
#include "test_tree.h"

namespace cocoon::enforcer {
namespace {

using testing::TempDir;
using testing::WriteText;

struct timespec Ctime(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << path;
  return st.st_ctim;
}

bool After(const struct timespec& a, const struct timespec& b) {
  return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

// The entries a run finds there before it starts.
void MakeHostEntries(const std::string& dir) {
  mkdir((dir + "/d").c_str(), 0755);
  for (const char* name : {"renamed", "linked", "chmodded", "written", "touched", "chowned", "moved-over", "kept"}) {
    WriteText(dir + "/" + name, "x");
  }
  WriteText(dir + "/d/inner", "x");
  symlink("/usr/bin/python3", (dir + "/link").c_str());
  mkfifo((dir + "/fifo").c_str(), 0644);
}

// The floor a run prepared now would take, once the clock has moved past
// every host entry's ctime (a floor within their clock tick would count
// them as changed: conservative, and not what is checked here). Waits for
// the clock, it measures nothing.
struct timespec FloorAfterHostEntries(const std::string& dir) {
  const char* names[] = {"d", "renamed", "linked", "chmodded", "written", "touched", "chowned", "moved-over",
                         "kept", "link", "fifo", "d/inner"};
  struct timespec newest {};
  for (const char* name : names) {
    struct timespec ctime = Ctime(dir + "/" + name);
    if (After(ctime, newest)) newest = ctime;
  }
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct timespec floor = RunChangeFloor(fd);
  while (!After(floor, newest)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    floor = RunChangeFloor(fd);
  }
  close(fd);
  return floor;
}

// Returns "" or what went wrong. The host's entries are made first, unless
// they are there already (an overlay's lower layer).
enum class HostEntries { kMake, kThereAlready };
std::string CheckChangesMoveCtime(const std::string& dir, HostEntries entries = HostEntries::kMake) {
  if (entries == HostEntries::kMake) MakeHostEntries(dir);
  const struct timespec floor = FloorAfterHostEntries(dir);
  auto changed = [&](const std::string& name) {
    struct stat st {};
    return lstat((dir + "/" + name).c_str(), &st) == 0 && ChangedSince(st, floor);
  };
  std::string failures;
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) failures += what + "; ";
  };
  expect(!changed("kept") && !changed("link") && !changed("fifo") && !changed("d/inner"),
         "an untouched entry counts as changed");
  expect(rename((dir + "/renamed").c_str(), (dir + "/renamed2").c_str()) == 0 && changed("renamed2"), "rename");
  expect(link((dir + "/linked").c_str(), (dir + "/linked2").c_str()) == 0 && changed("linked"), "link");
  expect(chmod((dir + "/chmodded").c_str(), 04755) == 0 && changed("chmodded"), "chmod");
  int fd = open((dir + "/written").c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  expect(fd >= 0 && write(fd, "y", 1) == 1 && changed("written"), "write");
  if (fd >= 0) close(fd);
  // utimensat sets times to old values, and moves ctime itself.
  const struct timespec old_times[2] = {{1, 0}, {1, 0}};
  expect(utimensat(AT_FDCWD, (dir + "/touched").c_str(), old_times, AT_SYMLINK_NOFOLLOW) == 0 && changed("touched"),
         "utimensat to the past");
  expect(lchown((dir + "/chowned").c_str(), getuid(), getgid()) == 0 && changed("chowned"), "chown to the same owner");
  expect(rename((dir + "/link").c_str(), (dir + "/link2").c_str()) == 0 && changed("link2"), "rename of a symlink");
  expect(rename((dir + "/fifo").c_str(), (dir + "/fifo2").c_str()) == 0 && changed("fifo2"), "rename of a FIFO");
  expect(rename((dir + "/kept").c_str(), (dir + "/moved-over").c_str()) == 0 && changed("moved-over"),
         "rename over an entry");
  expect(symlink("/etc/shadow", (dir + "/new-link").c_str()) == 0 && changed("new-link"), "symlink");
  expect(mkfifo((dir + "/new-fifo").c_str(), 0644) == 0 && changed("new-fifo"), "mkfifo");
  // A renamed directory is stamped; the entries in it keep their times
  // (they are the host's own, under another path: change_floor.h).
  expect(rename((dir + "/d").c_str(), (dir + "/d2").c_str()) != 0 || (changed("d2") && !changed("d2/inner")),
         "rename of a directory");
  return failures;
}

TEST(ChangeFloorTest, EveryChangeMovesCtimePastTheFloorOnTheTestsFilesystem) {
  TempDir dir("cocoon-ctime");
  EXPECT_EQ(CheckChangesMoveCtime(dir.path()), "");
}

TEST(ChangeFloorTest, EveryChangeMovesCtimePastTheFloorOnTmpfsAndOverlayfs) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED (security checks): mounts in a throwaway namespace need root";
  TempDir dir("cocoon-ctime-mounts");
  const std::string base = dir.path();
  int rc = testing::RunInMountNamespace([&] {
    const std::string tmpfs = base + "/tmpfs";
    if (mkdir(tmpfs.c_str(), 0755) != 0 || mount("tmpfs", tmpfs.c_str(), "tmpfs", 0, "size=4m") != 0) return 10;
    if (!CheckChangesMoveCtime(tmpfs).empty()) return 11;
    // The host's entries in the lower layer (the test's filesystem), the
    // changes copied up into a tmpfs upper layer.
    const std::string lower = base + "/lower", stage = base + "/stage", merged = base + "/merged";
    if (mkdir(lower.c_str(), 0755) != 0 || mkdir(stage.c_str(), 0755) != 0 || mkdir(merged.c_str(), 0755) != 0) {
      return 12;
    }
    if (mount("tmpfs", stage.c_str(), "tmpfs", 0, "size=4m") != 0) return 13;
    if (mkdir((stage + "/upper").c_str(), 0755) != 0 || mkdir((stage + "/work").c_str(), 0755) != 0) return 14;
    MakeHostEntries(lower);
    const std::string options = "lowerdir=" + lower + ",upperdir=" + stage + "/upper,workdir=" + stage + "/work";
    if (mount("overlay", merged.c_str(), "overlay", 0, options.c_str()) != 0) return 15;
    return CheckChangesMoveCtime(merged, HostEntries::kThereAlready).empty() ? 0 : 16;
  });
  EXPECT_EQ(rc, 0) << "10-11: tmpfs, 12-16: overlayfs";
}

// The floor is never later than the filesystem's own stamp of a new inode:
// a file made right after it counts as changed.
TEST(ChangeFloorTest, AFileMadeAfterTheFloorCountsAsChanged) {
  TempDir dir("cocoon-floor");
  int fd = open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  const struct timespec floor = RunChangeFloor(fd);
  close(fd);
  WriteText(dir / "new", "x");
  struct stat st {};
  ASSERT_EQ(lstat((dir / "new").c_str(), &st), 0);
  EXPECT_TRUE(ChangedSince(st, floor));
  EXPECT_EQ(std::string(), [&] {
    // The probe leaves no name behind.
    std::string names;
    for (const auto& entry : std::filesystem::directory_iterator(dir.path())) names += entry.path().filename().string();
    return names == "new" ? std::string() : names;
  }());
}

}  // namespace
}  // namespace cocoon::enforcer
