// --copy files join the staged work dir and are committed back with the
// results: a copy must never replace a host file of other content, and two
// copies must never share a name.
#include "enforcer/workdir/copy_conflicts.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "enforcer/owned_fd.h"
#include "test_tree.h"

namespace cocoon::enforcer {
namespace {

using testing::MakeDirs;
using testing::TempDir;
using testing::WriteText;

Status Check(const TempDir& dir, const std::vector<ir::Copy>& copies) {
  OwnedFd work(open((dir / "work").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  return CheckCopiesAgainstWorkDir(copies, dir / "work", work.get());
}

TEST(CopyConflicts, AFileOfOtherContentIsNeverReplacedTheSameBytesAre) {
  TempDir dir;
  MakeDirs(dir / "work/sub");
  MakeDirs(dir / "in");
  WriteText(dir / "work/data.txt", "host original\n");
  WriteText(dir / "work/sub/same.txt", "same\n");
  WriteText(dir / "in/data.txt", "from the copy\n");
  WriteText(dir / "in/same.txt", "same\n");
  WriteText(dir / "in/longer.txt", "same\nand more\n");
  Status status = Check(dir, {{dir / "in/data.txt", "data.txt"}});
  EXPECT_EQ(status.code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(status.message().find("would replace " + dir / "work/data.txt"), std::string::npos) << status.ToString();
  EXPECT_TRUE(Check(dir, {{dir / "in/same.txt", "sub/same.txt"}}).ok()) << "a rerun finds its own copy";
  EXPECT_FALSE(Check(dir, {{dir / "in/longer.txt", "sub/same.txt"}}).ok());
  EXPECT_FALSE(Check(dir, {{dir / "in/same.txt", "sub"}}).ok()) << "a file over a directory";
  EXPECT_TRUE(Check(dir, {{dir / "in/data.txt", "new/data.txt"}}).ok()) << "nothing there";
}

TEST(CopyConflicts, ADirectoryIsComparedEntryByEntryWithoutFollowingLinks) {
  TempDir dir;
  MakeDirs(dir / "work/tree/a");
  WriteText(dir / "work/tree/a/f", "1\n");
  WriteText(dir / "work/tree/host-only", "kept\n");
  MakeDirs(dir / "tree/a");
  WriteText(dir / "tree/a/f", "1\n");
  EXPECT_TRUE(Check(dir, {{dir / "tree", "tree"}}).ok()) << "the same files again, host extras untouched";
  WriteText(dir / "tree/a/f", "2\n");
  EXPECT_FALSE(Check(dir, {{dir / "tree", "tree"}}).ok());
  WriteText(dir / "tree/a/f", "1\n");
  ASSERT_EQ(symlink("/etc/passwd", (dir / "tree/host-only").c_str()), 0);
  EXPECT_FALSE(Check(dir, {{dir / "tree", "tree"}}).ok()) << "a link in the copy over a host file";
}

TEST(CopyConflicts, TwoCopiesOfOneNameAndTheWorkDirItselfAreRefused) {
  TempDir dir;
  MakeDirs(dir / "work");
  MakeDirs(dir / "c1");
  MakeDirs(dir / "c2");
  WriteText(dir / "c1/data.txt", "1\n");
  WriteText(dir / "c2/data.txt", "2\n");
  MakeDirs(dir / "c3");
  EXPECT_FALSE(Check(dir, {{dir / "c1/data.txt", "data.txt"}, {dir / "c2/data.txt", "data.txt"}}).ok());
  EXPECT_FALSE(Check(dir, {{dir / "c3", "c3"}, {dir / "c2/data.txt", "c3/data.txt"}}).ok()) << "one inside the other";
  EXPECT_FALSE(Check(dir, {{dir / "work", "work"}}).ok());
  EXPECT_FALSE(Check(dir, {{dir.path(), "all"}}).ok()) << "a copy that holds the work dir";
}

}  // namespace
}  // namespace cocoon::enforcer
