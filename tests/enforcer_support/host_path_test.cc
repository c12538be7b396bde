// ResolveHostPath and OpenResolvedPath (enforcer/workdir/host_path.h): as
// realpath(3), except that root follows only root's symlinks; a link that
// appears after the resolution makes the open fail.
#include "enforcer/workdir/host_path.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace cocoon::enforcer {
namespace {

namespace fs = std::filesystem;

class HostPathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/cocoon-host-path-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    base_ = pattern;
    fs::create_directories(base_ + "/real/sub");
    std::ofstream(base_ + "/real/sub/file") << "x";
    ASSERT_EQ(symlink("real", (base_ + "/relative").c_str()), 0);
    ASSERT_EQ(symlink((base_ + "/real").c_str(), (base_ + "/absolute").c_str()), 0);
  }
  void TearDown() override { fs::remove_all(base_); }
  std::string base_;
};

TEST_F(HostPathTest, ResolvesLikeRealpathThroughTheCallersOwnLinks) {
  const std::string real = base_ + "/real/sub/file";
  for (const std::string& path : {base_ + "/relative/sub/file", base_ + "/absolute/sub/../sub/./file", real}) {
    auto resolved = ResolveHostPath(path);
    ASSERT_TRUE(resolved.ok()) << path << ": " << resolved.status().ToString();
    EXPECT_EQ(*resolved, real) << path;
  }
  auto missing = ResolveHostPath(base_ + "/relative/nothing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  auto opened = OpenResolvedPath(real, O_RDONLY);
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  close(*opened);
}

// One resolver for many paths (a launch's bind sources) answers each as a
// fresh ResolveHostPath and as realpath(3) would, whatever it looked up for
// the paths before, and stats what it resolved as stat(2) does.
TEST_F(HostPathTest, OneResolverForManyPathsAnswersEachAsRealpath) {
  HostPathResolver resolver;
  const std::vector<std::string> paths = {base_ + "/relative/sub/file", base_ + "/absolute/sub", base_ + "/real",
                                          base_ + "/absolute/sub/../sub/./file", base_ + "/relative", "/usr/bin",
                                          "/bin", "/lib"};
  for (int round = 0; round < 2; ++round) {
    for (const std::string& path : paths) {
      auto shared = resolver.Resolve(path);
      ASSERT_TRUE(shared.ok()) << path << ": " << shared.status().ToString();
      char expected[PATH_MAX];
      ASSERT_NE(realpath(path.c_str(), expected), nullptr) << path;
      EXPECT_EQ(*shared, expected) << path;
      auto fresh = ResolveHostPath(path);
      ASSERT_TRUE(fresh.ok());
      EXPECT_EQ(*shared, *fresh) << path;
      auto st = resolver.StatResolved(*shared);
      ASSERT_TRUE(st.ok()) << st.status().ToString();
      struct stat direct {};
      ASSERT_EQ(stat(path.c_str(), &direct), 0);
      EXPECT_EQ(st->st_ino, direct.st_ino) << path;
      EXPECT_EQ(st->st_dev, direct.st_dev) << path;
    }
  }
  auto missing = resolver.Resolve(base_ + "/absolute/nothing");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ErrorCode::kNotFound);
  auto not_a_dir = resolver.Resolve(base_ + "/real/sub/file/more");
  ASSERT_FALSE(not_a_dir.ok());
  EXPECT_NE(not_a_dir.status().message().find("Not a directory"), std::string::npos) << not_a_dir.status().ToString();
}

// The host's /proc, whole or in part, or everything (binds are recursive).
TEST(ShowsHostProcTest, ProcItselfItsEntriesAndTheRoot) {
  for (const char* shown : {"/", "/proc", "/proc/1", "/proc/sys/kernel"}) EXPECT_TRUE(ShowsHostProc(shown)) << shown;
  for (const char* not_shown : {"/usr", "/procfs", "/etc/proc", "/tmp/proc/x"}) {
    EXPECT_FALSE(ShowsHostProc(not_shown)) << not_shown;
  }
}

TEST_F(HostPathTest, AsRootAnotherUsersLinkIsRefused) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED: needs root (the rule is root's)";
  ASSERT_EQ(lchown((base_ + "/relative").c_str(), 65534, 65534), 0);
  auto refused = ResolveHostPath(base_ + "/relative/sub/file");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("a symlink owned by uid 65534"), std::string::npos)
      << refused.status().message();
  EXPECT_TRUE(ResolveHostPath(base_ + "/absolute/sub/file").ok()) << "root's own link is followed";
}

TEST_F(HostPathTest, ALinkThatAppearsAfterTheResolutionFailsTheOpen) {
  auto resolved = ResolveHostPath(base_ + "/real/sub");
  ASSERT_TRUE(resolved.ok());
  fs::rename(base_ + "/real/sub", base_ + "/real/moved");
  ASSERT_EQ(symlink((base_ + "/real/moved").c_str(), (base_ + "/real/sub").c_str()), 0);
  auto opened = OpenResolvedPath(*resolved, O_RDONLY | O_DIRECTORY);
  ASSERT_FALSE(opened.ok());
  EXPECT_NE(opened.status().message().find("a symlink appeared"), std::string::npos) << opened.status().message();
}

}  // namespace
}  // namespace cocoon::enforcer
