// enforcer/cache_pruning: bounded cache directories (real files, set mtimes).
#include "enforcer/cache_pruning.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <ctime>
#include <filesystem>
#include <string>

#include "tests/enforcer_support/test_tree.h"

namespace cocoon::enforcer {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

class PruneTest : public ::testing::Test {
 protected:
  // A file last modified `age_seconds` ago.
  void Make(const std::string& name, long age_seconds) {
    std::string path = dir_ / name;
    testing::WriteText(path, "x", 0600);
    struct timespec times[2];
    times[0].tv_sec = times[1].tv_sec = time(nullptr) - age_seconds;
    times[0].tv_nsec = times[1].tv_nsec = 0;
    ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  }
  bool Exists(const std::string& name) const { return fs::exists(dir_ / name); }

  TempDir dir_{"cocoon-prune-test"};
};

TEST_F(PruneTest, RemovesTheOldestDownToThreeQuartersOfTheLimit) {
  // 8 entries, limit 4: prune to 3, oldest first.
  for (int i = 0; i < 8; ++i) Make("e" + std::to_string(i) + ".entry", 10000 - i * 100);
  Make("notes.txt", 99999);  // another suffix: not counted, not removed
  EXPECT_EQ(PruneCacheDir(dir_.path(), ".entry", PruneLimits{.max_files = 4, .min_age = std::chrono::seconds(60)}), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(Exists("e" + std::to_string(i) + ".entry")) << i;
  for (int i = 5; i < 8; ++i) EXPECT_TRUE(Exists("e" + std::to_string(i) + ".entry")) << i;
  EXPECT_TRUE(Exists("notes.txt"));
}

TEST_F(PruneTest, NeverRemovesRecentFilesEvenOverTheLimit) {
  for (int i = 0; i < 6; ++i) Make("recent" + std::to_string(i) + ".entry", 5);
  Make("old.entry", 10000);
  EXPECT_EQ(PruneCacheDir(dir_.path(), ".entry", PruneLimits{.max_files = 2, .min_age = std::chrono::seconds(60)}), 1u);
  EXPECT_FALSE(Exists("old.entry"));
  for (int i = 0; i < 6; ++i) EXPECT_TRUE(Exists("recent" + std::to_string(i) + ".entry"));
}

TEST_F(PruneTest, UnderTheLimitOnlyStaleTemporariesGo) {
  Make("a.entry", 10000);
  Make(".a.123.tmp", 10000);        // a store that died before its rename
  Make("b.cocoon.tmp.456", 10);     // a store in progress
  EXPECT_EQ(PruneCacheDir(dir_.path(), "", PruneLimits{.max_files = 10, .min_age = std::chrono::seconds(60)}), 1u);
  EXPECT_TRUE(Exists("a.entry"));
  EXPECT_FALSE(Exists(".a.123.tmp"));
  EXPECT_TRUE(Exists("b.cocoon.tmp.456"));
}

TEST_F(PruneTest, MissingDirectoryAndSymlinksAreLeftAlone) {
  EXPECT_EQ(PruneCacheDir(dir_ / "missing", "", PruneLimits{}), 0u);
  Make("target.entry", 10000);
  ASSERT_EQ(symlink("target.entry", (dir_ / "link.entry").c_str()), 0);
  EXPECT_EQ(PruneCacheDir(dir_.path(), ".entry", PruneLimits{.max_files = 0, .min_age = std::chrono::seconds(60)}), 1u);
  EXPECT_FALSE(Exists("target.entry"));
  EXPECT_TRUE(fs::is_symlink(dir_ / "link.entry")) << "only regular files are pruned";
}

TEST(ShouldPruneAfterStoreTest, AboutOneInSixteenByHash) {
  EXPECT_TRUE(ShouldPruneAfterStore("0abc"));
  EXPECT_FALSE(ShouldPruneAfterStore("abc0"));
  EXPECT_FALSE(ShouldPruneAfterStore(""));
}

}  // namespace
}  // namespace cocoon::enforcer
