// A writable bind is verified after the run as a direct work dir is
// (enforcer/workdir/writable_binds.h): what the run made or changed there is
// defused and reported with the bind's mount; the host's own entries stay.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "enforcer/workdir/change_floor.h"
#include "enforcer/workdir/writable_binds.h"
#include "test_tree.h"

namespace cocoon::enforcer {
namespace {

using testing::Exists;
using testing::TempDir;
using testing::WriteText;

bool NewerThan(const struct timespec& a, const struct timespec& b) {
  return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec > b.tv_nsec);
}

// Waits until a run prepared now would take a floor past `paths`' ctimes
// (a floor within their clock tick would count them as the run's).
void WaitForTheClockToPass(const std::string& dir, const std::vector<std::string>& paths) {
  struct timespec newest {};
  for (const std::string& path : paths) {
    struct stat st {};
    ASSERT_EQ(lstat(path.c_str(), &st), 0) << path;
    if (NewerThan(st.st_ctim, newest)) newest = st.st_ctim;
  }
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  while (!NewerThan(RunChangeFloor(fd), newest)) usleep(1000);
  close(fd);
}

TEST(WritableBindsTest, WhatTheRunLeftIsDefusedAndTheHostsOwnEntriesStay) {
  TempDir dir("cocoon-wb");
  WriteText(dir / "own-helper", "x", 04755);
  ASSERT_EQ(mkfifo((dir / "own-fifo").c_str(), 0644), 0);
  ASSERT_EQ(symlink("/usr/bin/python3", (dir / "own-link").c_str()), 0);
  WriteText(dir / "data", "x");
  TempDir file_dir("cocoon-wb-file");
  WriteText(file_dir / "bound", "x");
  WaitForTheClockToPass(dir.path(), {dir / "own-helper", dir / "own-fifo", dir / "own-link", dir / "data",
                                     file_dir / "bound"});
  auto binds = WritableBinds::Prepare({{dir.path(), "/wb"}, {file_dir / "bound", "/etc/bound"}});
  struct stat st {};
  ASSERT_EQ(stat(dir.path().c_str(), &st), 0);
  EXPECT_TRUE(binds->Covers(st.st_dev, st.st_ino));
  // The run: a setuid copy, a FIFO, an escaping link, a set-id bound file.
  WriteText(dir / "id", "#!/bin/sh\n");
  ASSERT_EQ(chmod((dir / "id").c_str(), 06755), 0);
  ASSERT_EQ(mkfifo((dir / "new-fifo").c_str(), 0644), 0);
  ASSERT_EQ(symlink("/etc/shadow", (dir / "new-link").c_str()), 0);
  ASSERT_EQ(chmod((file_dir / "bound").c_str(), 04755), 0);
  WritableBindsResult result = binds->Verify(-1);
  EXPECT_FALSE(result.incomplete) << result.error;
  std::set<std::string> runs, host_own;
  for (const BreakoutFinding& f : result.findings) runs.insert(f.mount + ":" + f.path + ":" + f.kind);
  for (const BreakoutFinding& f : result.preexisting) host_own.insert(f.mount + ":" + f.path + ":" + f.kind);
  EXPECT_EQ(runs, (std::set<std::string>{"/wb:id:setuid", "/wb:id:setgid", "/wb:new-fifo:fifo", "/wb:new-link:symlink-escape",
                                         "/etc/bound::setuid"}));
  EXPECT_EQ(host_own, (std::set<std::string>{"/wb:own-helper:setuid", "/wb:own-fifo:fifo", "/wb:own-link:symlink-escape"}));
  ASSERT_EQ(lstat((dir / "id").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  ASSERT_EQ(lstat((file_dir / "bound").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  EXPECT_FALSE(Exists(dir / "new-fifo"));
  EXPECT_FALSE(Exists(dir / "new-link"));
  ASSERT_EQ(lstat((dir / "own-helper").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 04755u);
  EXPECT_TRUE(Exists(dir / "own-fifo"));
  EXPECT_TRUE(std::filesystem::is_symlink(dir / "own-link"));
}

// The child binds only a source Prepare opened: another directory at the
// path is not covered (the launch then refuses it).
TEST(WritableBindsTest, ADirectoryPutAtThePathAfterwardsIsNotCovered) {
  TempDir parent("cocoon-wb-parent");
  const std::string path = parent / "wb";
  ASSERT_EQ(mkdir(path.c_str(), 0755), 0);
  auto binds = WritableBinds::Prepare({{path, "/wb"}, {parent / "missing", "/missing"}});
  ASSERT_EQ(rename(path.c_str(), (parent / "moved").c_str()), 0);
  ASSERT_EQ(mkdir(path.c_str(), 0755), 0);
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_FALSE(binds->Covers(st.st_dev, st.st_ino));
  ASSERT_EQ(stat((parent / "moved").c_str(), &st), 0);
  EXPECT_TRUE(binds->Covers(st.st_dev, st.st_ino));
}

}  // namespace
}  // namespace cocoon::enforcer
