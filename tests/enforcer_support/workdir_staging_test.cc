// The staging handshake for real: a forked child in a throwaway mount
// namespace mounts the work dir exactly as the sandbox does, plays the
// sandbox (writes results, plants an escape, fills the quota), and the parent
// populates, verifies and commits.
#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <functional>
#include <set>
#include <string>

#include "enforcer/workdir/breakout_scan.h"
#include "enforcer/workdir/staging.h"
#include "enforcer/workdir/tree_ops.h"
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
// exit status (0 = every sandbox expectation held; 100 + a WorkMountStep
// when mounting failed, which a test expecting it says with
// `mount_fails`: the parent's side then fails too).
int RunStaged(Staging& staging, const std::string& target, const std::function<int(const std::string&)>& sandbox,
              bool mount_fails = false) {
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
  EXPECT_EQ(populated.ok(), !mount_fails) << populated.ToString();
  close(sock[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// VerifyAndCommit while the launcher's signalfd would be readable (a SIGINT
// pending): a pipe holding one byte stands in for it.
StagingResult VerifyWithASignalPending(Staging& staging) {
  int signalled[2];
  if (pipe2(signalled, O_CLOEXEC) != 0 || write(signalled[1], "x", 1) != 1) {
    ADD_FAILURE() << "pipe: " << strerror(errno);
    return {};
  }
  StagingResult result = staging.VerifyAndCommit(nullptr, signalled[0]);
  close(signalled[0]);
  close(signalled[1]);
  return result;
}

class StagingTest : public ::testing::TestWithParam<StagingStrategy> {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED (security checks): these tests mount in a throwaway namespace and need root";
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

  // A staging whose sandbox side wrote result.txt and exited: ready to be
  // verified and committed. Null (with a failure recorded) if that failed.
  std::unique_ptr<Staging> StagedWithAResult() {
    auto staging = Staging::Prepare(Options());
    if (!staging.ok()) {
      ADD_FAILURE() << staging.status().ToString();
      return nullptr;
    }
    int rc = RunStaged(**staging, target_.path(), [](const std::string& work) {
      WriteText(work + "/result.txt", "partial\n");
      return 0;
    });
    if (rc != 0) {
      ADD_FAILURE() << "the sandbox side failed: " << rc;
      return nullptr;
    }
    return std::move(*staging);
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
  ASSERT_TRUE(result.error.ok()) << result.error.ToString();
  EXPECT_TRUE(result.committed);
  ASSERT_EQ(result.scan.findings.size(), 1u);
  EXPECT_EQ(result.scan.findings[0].path, "escape");
  EXPECT_EQ(ReadText(host_ + "/input.txt"), "modified\n");
  EXPECT_EQ(ReadText(host_ + "/result.txt"), "42\n");
  EXPECT_EQ(ReadText(host_ + "/in/copied.txt"), "from --copy\n");
  EXPECT_FALSE(Exists(host_ + "/sub/delete-me"));
  EXPECT_FALSE(Exists(host_ + "/escape"));
  EXPECT_TRUE(Exists(host_ + "/own-abs")) << "the host's own link survives";
  EXPECT_FALSE(Exists(host_ + "/big"));
}

// A new link whose target has no ".." and so passed the scan alone, but
// goes through a link the host dir already had and keeps (own-abs ->
// /usr/share, up -> ../sibling), would reach outside under a new name: it
// is resolved again in the merged tree before the swap and left out. The
// host's own links stay; a new link that stays inside, or dangles inside,
// is committed.
TEST_P(StagingTest, ANewLinkThroughTheHostsOwnEscapingLinkIsLeftOut) {
  testing::MakeDirs(parent_ / "sibling");
  WriteText(parent_ / "sibling/victim", "outside\n");
  ASSERT_EQ(symlink("../sibling", (host_ + "/up").c_str()), 0);
  auto staging = Staging::Prepare(Options());
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  int rc = RunStaged(**staging, target_.path(), [](const std::string& work) {
    if (symlink("own-abs/doc", (work + "/log").c_str()) != 0) return 1;
    if (symlink("up/victim", (work + "/out").c_str()) != 0) return 2;
    if (symlink("sub/delete-me", (work + "/inside").c_str()) != 0) return 3;
    if (symlink("sub/not-yet", (work + "/dangling").c_str()) != 0) return 4;
    return 0;
  });
  ASSERT_EQ(rc, 0);
  auto result = (*staging)->VerifyAndCommit();
  ASSERT_TRUE(result.error.ok()) << result.error.ToString();
  EXPECT_TRUE(result.committed);
  std::set<std::string> flagged;
  for (const auto& finding : result.scan.findings) {
    EXPECT_EQ(finding.kind, "symlink-escape") << finding.path;
    flagged.insert(finding.path);
  }
  EXPECT_EQ(flagged, (std::set<std::string>{"log", "out"}));
  EXPECT_FALSE(std::filesystem::is_symlink(host_ + "/log")) << "a new name for the host's /usr/share/doc";
  EXPECT_FALSE(std::filesystem::is_symlink(host_ + "/out")) << "a new name for ../sibling/victim";
  EXPECT_TRUE(std::filesystem::is_symlink(host_ + "/own-abs"));
  EXPECT_TRUE(std::filesystem::is_symlink(host_ + "/up"));
  EXPECT_TRUE(std::filesystem::is_symlink(host_ + "/inside"));
  EXPECT_TRUE(std::filesystem::is_symlink(host_ + "/dangling"));
  EXPECT_EQ(ReadText(parent_ / "sibling/victim"), "outside\n");
}

// The host's own links that --copy brings in are the host's like the work
// dir's own: one the sandbox left alone is kept and not reported (they were
// reported as breakouts and dropped). One the sandbox changed, or made at a
// path where the work dir had a link --copy replaced, is judged as before.
TEST_P(StagingTest, LinksBroughtInByCopyAreTheHostsOwnUnlessTheSandboxChangedThem) {
  testing::MakeDirs(extra_ / "tree");
  ASSERT_EQ(symlink("/usr/share", (extra_ / "tree/abs").c_str()), 0);
  ASSERT_EQ(symlink("/usr/share", (extra_ / "tree/retarget").c_str()), 0);
  testing::MakeDirs(host_ + "/tree");
  ASSERT_EQ(symlink("/usr/share", (host_ + "/tree/was-here").c_str()), 0);  // replaced by --copy
  StagingOptions options = Options();
  options.copies.push_back(ir::Copy{extra_ / "tree", "tree"});
  auto staging = Staging::Prepare(options);
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  int rc = RunStaged(**staging, target_.path(), [](const std::string& work) {
    if (!std::filesystem::is_symlink(work + "/tree/abs")) return 1;
    if (std::filesystem::exists(std::filesystem::symlink_status(work + "/tree/was-here"))) return 2;
    if (unlink((work + "/tree/retarget").c_str()) != 0 || symlink("/etc", (work + "/tree/retarget").c_str()) != 0) {
      return 3;
    }
    if (symlink("/usr/share", (work + "/tree/was-here").c_str()) != 0) return 4;
    return 0;
  });
  ASSERT_EQ(rc, 0);
  auto result = (*staging)->VerifyAndCommit();
  ASSERT_TRUE(result.error.ok()) << result.error.ToString();
  EXPECT_TRUE(result.committed);
  std::set<std::string> flagged;
  for (const auto& finding : result.scan.findings) flagged.insert(finding.path + ":" + finding.kind);
  EXPECT_EQ(flagged, (std::set<std::string>{"tree/retarget:symlink-escape", "tree/was-here:symlink-escape"}));
  ASSERT_TRUE(std::filesystem::is_symlink(host_ + "/tree/abs")) << "the --copy source's own link was dropped";
  EXPECT_EQ(std::filesystem::read_symlink(host_ + "/tree/abs"), "/usr/share");
  EXPECT_FALSE(std::filesystem::is_symlink(host_ + "/tree/retarget"));
  EXPECT_FALSE(std::filesystem::is_symlink(host_ + "/tree/was-here"));
}

// A file's modification time set in the sandbox (touch -d, an unpacked
// archive) reaches the host: the commit's copy was dated the commit.
TEST_P(StagingTest, TimesSetInTheSandboxAreKeptAtCommit) {
  auto staging = Staging::Prepare(Options());
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  int rc = RunStaged(**staging, target_.path(), [](const std::string& work) {
    WriteText(work + "/out.o", "b\n");
    WriteText(work + "/input.txt", "edited\n");
    const struct timespec times[2] = {{1000000000, 0}, {1012608000, 0}};  // 2001-09-09, 2002-02-02
    if (utimensat(AT_FDCWD, (work + "/out.o").c_str(), times, 0) != 0) return 1;
    if (utimensat(AT_FDCWD, (work + "/input.txt").c_str(), times, 0) != 0) return 2;
    return 0;
  });
  ASSERT_EQ(rc, 0);
  auto result = (*staging)->VerifyAndCommit();
  ASSERT_TRUE(result.error.ok()) << result.error.ToString();
  ASSERT_TRUE(result.committed);
  for (const char* name : {"/out.o", "/input.txt"}) {
    struct stat st {};
    ASSERT_EQ(stat((host_ + name).c_str(), &st), 0) << name;
    EXPECT_EQ(st.st_mtim.tv_sec, 1012608000) << name << ": the mtime the sandbox set";
    EXPECT_EQ(st.st_atim.tv_sec, 1000000000) << name << ": the atime the sandbox set";
  }
  EXPECT_EQ(ReadText(host_ + "/input.txt"), "edited\n");
}

// Someone edits the host work dir while the sandbox runs. The overlay's
// commit starts from the host dir as it is then and keeps the edit; the
// copy's commit would replace the dir with the copy-in plus the sandbox's
// changes and silently undo it (a reviewer's created file vanished, an
// edited one went back): it refuses instead, commits nothing and says why.
TEST_P(StagingTest, AHostEditDuringTheRunIsNeverUndone) {
  for (int edit = 0; edit < 3; ++edit) {
    SCOPED_TRACE(edit);
    auto staging = StagedWithAResult();
    ASSERT_NE(staging, nullptr);
    if (edit == 0) WriteText(host_ + "/user-created.txt", "mine\n");
    if (edit == 1) WriteText(host_ + "/input.txt", "edited by the user\n");
    if (edit == 2) {
      ASSERT_EQ(unlink((host_ + "/sub/delete-me").c_str()), 0);
    }
    auto result = staging->VerifyAndCommit();
    if (GetParam() == StagingStrategy::kCopy) {
      EXPECT_FALSE(result.committed);
      EXPECT_EQ(result.error.code(), ErrorCode::kFailedPrecondition) << result.error.ToString();
      EXPECT_NE(result.error.message().find("while the sandbox ran"), std::string::npos) << result.error.ToString();
      EXPECT_FALSE(Exists(host_ + "/result.txt"));
    } else {
      EXPECT_TRUE(result.committed) << result.error.ToString();
      EXPECT_EQ(ReadText(host_ + "/result.txt"), "partial\n");
    }
    const std::string kept = edit == 0   ? ReadText(host_ + "/user-created.txt")
                             : edit == 1 ? ReadText(host_ + "/input.txt")
                                         : std::string(Exists(host_ + "/sub/delete-me") ? "back" : "still gone");
    EXPECT_EQ(kept, edit == 0 ? "mine\n" : edit == 1 ? "edited by the user\n" : "still gone");
    staging.reset();
    // Back to the fixture's tree for the next edit.
    unlink((host_ + "/result.txt").c_str());
    unlink((host_ + "/user-created.txt").c_str());
    WriteText(host_ + "/input.txt", "original\n");
    WriteText(host_ + "/sub/delete-me", "bye\n");
  }
}

// The sandbox widens a 0700 directory holding a host FIFO to 0777: the
// FIFO is taken out rather than made reachable by every host user, in the
// overlay mode (whose commit links the host's specials in with the
// originals) as in the copy mode. And a sticky directory the sandbox makes
// comes back sticky (it came back 0777).
TEST_P(StagingTest, WidenedDirectoriesLoseHostSpecialsAndStickyDirectoriesStaySticky) {
  testing::MakeDirs(host_ + "/private");
  ASSERT_EQ(chmod((host_ + "/private").c_str(), 0700), 0);
  ASSERT_EQ(mkfifo((host_ + "/private/pipe").c_str(), 0600), 0);
  ASSERT_EQ(mkfifo((host_ + "/kept-pipe").c_str(), 0600), 0);
  auto staging = Staging::Prepare(Options());
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  int rc = RunStaged(**staging, target_.path(), [](const std::string& work) {
    if (chmod((work + "/private").c_str(), 0777) != 0) return 1;
    if (mkdir((work + "/shared").c_str(), 0755) != 0 || chmod((work + "/shared").c_str(), 01777) != 0) return 2;
    return 0;
  });
  ASSERT_EQ(rc, 0);
  auto result = (*staging)->VerifyAndCommit();
  ASSERT_TRUE(result.error.ok()) << result.error.ToString();
  EXPECT_TRUE(result.committed);
  struct stat st {};
  EXPECT_NE(lstat((host_ + "/private/pipe").c_str(), &st), 0) << "a host FIFO under a widened directory";
  EXPECT_EQ(lstat((host_ + "/kept-pipe").c_str(), &st), 0) << "the host's FIFO elsewhere stays";
  ASSERT_EQ(stat((host_ + "/shared").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u);
}

// What the sandbox did not touch goes back as the host's original: the same
// inode, mtime, owner and mode (a setuid bit of the host's own file
// included: it never came from the sandbox), and the host's FIFO, which the
// copy-in leaves out, is still there. A copy-mode commit once replaced every
// file with a fresh copy (new inode and mtime, owner and setuid bit lost) and
// dropped the FIFO. Files the sandbox touched are its copies, as before.
TEST_P(StagingTest, UntouchedOriginalsAndHostFifosStayThemselves) {
  if (GetParam() != StagingStrategy::kCopy) GTEST_SKIP() << "copy mode only (the overlay links its originals anyway)";
  WriteText(host_ + "/keep.bin", "the host's own\n", 04755);
  ASSERT_EQ(chown((host_ + "/keep.bin").c_str(), 1234, 1234), 0);
  ASSERT_EQ(chmod((host_ + "/keep.bin").c_str(), 04755), 0);  // chown cleared it
  const struct timespec old_times[2] = {{1000000000, 0}, {1000000000, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, (host_ + "/keep.bin").c_str(), old_times, 0), 0);
  WriteText(host_ + "/touched.txt", "same size\n");
  ASSERT_EQ(utimensat(AT_FDCWD, (host_ + "/touched.txt").c_str(), old_times, 0), 0);
  ASSERT_EQ(mkfifo((host_ + "/sub/pipe").c_str(), 0600), 0);
  struct stat before {};
  ASSERT_EQ(stat((host_ + "/keep.bin").c_str(), &before), 0);
  ino_t input_inode = testing::Inode(host_ + "/input.txt");

  auto staging = Staging::Prepare(Options());
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  int rc = RunStaged(**staging, target_.path(), [](const std::string& work) {
    struct stat st {};
    // The copy carries the original's mtime.
    if (stat((work + "/keep.bin").c_str(), &st) != 0 || st.st_mtim.tv_sec != 1000000000) return 1;
    if (Exists(work + "/sub/pipe")) return 2;  // never copied in
    // Same size, same mtime afterwards: only the ctime tells.
    WriteText(work + "/touched.txt", "SAME SIZE\n");
    const struct timespec old_times[2] = {{1000000000, 0}, {1000000000, 0}};
    if (utimensat(AT_FDCWD, (work + "/touched.txt").c_str(), old_times, 0) != 0) return 3;
    WriteText(work + "/new.txt", "new\n");
    return 0;
  });
  ASSERT_EQ(rc, 0) << "sandbox side failed (100+ = mount step)";
  auto result = (*staging)->VerifyAndCommit();
  ASSERT_TRUE(result.error.ok()) << result.error.ToString();
  ASSERT_TRUE(result.committed);

  struct stat after {};
  ASSERT_EQ(stat((host_ + "/keep.bin").c_str(), &after), 0);
  EXPECT_EQ(after.st_ino, before.st_ino) << "an untouched original is linked back, not copied";
  EXPECT_EQ(after.st_mtim.tv_sec, 1000000000);
  EXPECT_EQ(after.st_uid, 1234u);
  EXPECT_EQ(after.st_mode & 07777, 04755u);
  EXPECT_EQ(testing::Inode(host_ + "/input.txt"), input_inode);
  EXPECT_EQ(ReadText(host_ + "/touched.txt"), "SAME SIZE\n") << "a touched file is the sandbox's copy";
  EXPECT_EQ(ReadText(host_ + "/new.txt"), "new\n");
  struct stat pipe {};
  ASSERT_EQ(lstat((host_ + "/sub/pipe").c_str(), &pipe), 0) << "the host's FIFO was dropped";
  EXPECT_TRUE(S_ISFIFO(pipe.st_mode));
}

// Two ways the "untouched" test could be fooled, and must not be: a write
// through a shared mapping (on tmpfs it moves neither time on some kernels;
// on 6.18 here it does, and CommitTest.SameMetadataButOtherBytesIsCopied
// covers the byte comparison itself), and a host FIFO under a 0700
// directory that the sandbox made 0777, which would become reachable by
// everyone (it is left out instead).
TEST_P(StagingTest, MappedWritesAreKeptAndWidenedDirectoriesDropHostSpecials) {
  if (GetParam() != StagingStrategy::kCopy) GTEST_SKIP() << "copy mode only";
  WriteText(host_ + "/mapped.bin", "0123456789\n");
  testing::MakeDirs(host_ + "/private");
  ASSERT_EQ(chmod((host_ + "/private").c_str(), 0700), 0);
  ASSERT_EQ(mkfifo((host_ + "/private/pipe").c_str(), 0600), 0);
  auto staging = Staging::Prepare(Options());
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  int rc = RunStaged(**staging, target_.path(), [](const std::string& work) {
    int fd = open((work + "/mapped.bin").c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return 1;
    void* map = mmap(nullptr, 11, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (map == MAP_FAILED) return 2;
    memcpy(map, "ABCDE", 5);
    munmap(map, 11);
    return chmod((work + "/private").c_str(), 0777) == 0 ? 0 : 3;
  });
  ASSERT_EQ(rc, 0) << "sandbox side failed (100+ = mount step)";
  auto result = (*staging)->VerifyAndCommit();
  ASSERT_TRUE(result.error.ok()) << result.error.ToString();
  EXPECT_EQ(ReadText(host_ + "/mapped.bin"), "ABCDE56789\n") << "a write through a mapping was lost";
  EXPECT_FALSE(Exists(host_ + "/private/pipe")) << "a host FIFO kept under a directory the sandbox widened";
}

// A filesystem mounted inside a staged work dir would be copied in, then
// emptied with the previous contents after the commit's swap: Prepare
// refuses it, and the removal never crosses into another mount. Both for a
// tmpfs and for a bind mount from the same filesystem (no device change:
// only the mount table and STATX_ATTR_MOUNT_ROOT show it). Run in a
// throwaway mount namespace: nothing is mounted on the host.
TEST_P(StagingTest, AMountInsideTheWorkDirIsRefusedAndNeverEmptied) {
  if (GetParam() != StagingStrategy::kCopy) GTEST_SKIP() << "one strategy is enough";
  for (bool bind : {false, true}) {
    TempDir elsewhere("cocoon-elsewhere");
    testing::MakeDirs(host_ + "/mnt");
    int rc = testing::RunInMountNamespace([&] {
      int mounted = bind ? mount(elsewhere.path().c_str(), (host_ + "/mnt").c_str(), nullptr, MS_BIND, nullptr)
                         : mount("tmpfs", (host_ + "/mnt").c_str(), "tmpfs", 0, "size=1m");
      if (mounted != 0) return 1;
      WriteText(host_ + "/mnt/precious", "keep me\n");
      auto staging = Staging::Prepare(Options());
      if (staging.ok()) return 2;
      if (staging.status().message().find("mount point at " + host_ + "/mnt") == std::string::npos) return 3;
      // The last guard: removing the tree stops at the mount point.
      int parent = open(parent_.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      Status removed = tree::RemoveTree(parent, "work");
      close(parent);
      if (removed.ok()) return 4;
      return ReadText(host_ + "/mnt/precious") == "keep me\n" ? 0 : 5;
    });
    EXPECT_EQ(rc, 0) << (bind ? "bind mount: " : "tmpfs: ") << "1 mount, 2 accepted, 3 message, 4 removed, 5 lost";
    if (bind) {
      EXPECT_EQ(ReadText(elsewhere / "precious"), "keep me\n");
    }
    // The fixture's files may be gone (the guard stops at the mount only):
    // put the work dir back for the next round.
    testing::MakeDirs(host_ + "/sub");
    WriteText(host_ + "/input.txt", "original\n");
  }
}

TEST_P(StagingTest, ChildThatDiesBeforeTheCommitCommitsNothing) {
  std::unique_ptr<Staging> staging = StagedWithAResult();
  ASSERT_NE(staging, nullptr);
  std::atomic<bool> cancel{true};  // SIGINT arrived: the supervisor cancels
  auto result = staging->VerifyAndCommit(&cancel);
  EXPECT_FALSE(result.error.ok());
  EXPECT_TRUE(result.cancelled);
  EXPECT_FALSE(result.committed);
  EXPECT_TRUE(result.scanned);  // the scan ran; only the commit stopped
  EXPECT_FALSE(Exists(host_ + "/result.txt"));
  EXPECT_EQ(ReadText(host_ + "/input.txt"), "original\n");
}

// The launcher's signalfd becoming readable (SIGINT during the scan or the
// commit) stops a staged commit before its swap, like the cancel flag.
TEST_P(StagingTest, ASignalDuringTheCommitCommitsNothing) {
  std::unique_ptr<Staging> staging = StagedWithAResult();
  ASSERT_NE(staging, nullptr);
  StagingResult result = VerifyWithASignalPending(*staging);
  EXPECT_TRUE(result.cancelled) << result.error.ToString();
  EXPECT_FALSE(result.committed);
  EXPECT_FALSE(Exists(host_ + "/result.txt"));
  EXPECT_EQ(ReadText(host_ + "/input.txt"), "original\n");
}

// As root, the sandbox runs as an unprivileged mapped uid: the staged work
// dir must be that uid's, and the commit hands results to the host dir's owner.
TEST_P(StagingTest, RootCallerGivesWorkDirToSandboxUidAndResultsToHostOwner) {
  constexpr uid_t kSandboxUid = 12345;
  const uid_t host_owner = GetParam() == StagingStrategy::kOverlay ? kSandboxUid : 4242;
  for (const char* p : {"", "/sub", "/input.txt", "/sub/delete-me"}) ASSERT_EQ(lchown((host_ + p).c_str(), host_owner, host_owner), 0);
  // Another user's (root's) private entries in the owner's work dir.
  testing::MakeDirs(host_ + "/rootdir");
  ASSERT_EQ(chmod((host_ + "/rootdir").c_str(), 0700), 0);
  WriteText(host_ + "/secret", "TOPSECRET\n");
  ASSERT_EQ(chmod((host_ + "/secret").c_str(), 0600), 0);
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
    if (stat((work + "/secret").c_str(), &st) != 0 || st.st_uid == kSandboxUid) return 5;
    // Drop to the sandbox uid: the work dir must still be writable.
    if (setgid(kSandboxUid) != 0 || setuid(kSandboxUid) != 0) return 4;
    WriteText(work + "/input.txt", "modified by uid 12345\n");
    WriteText(work + "/new.txt", "new\n");
    // Root's 0600 file is no more the sandbox user's than it was the owner's.
    WriteText(work + "/leak.txt", ReadText(work + "/secret"));
    return 0;
  });
  ASSERT_EQ(rc, 0) << "sandbox side failed";
  auto result = (*staging)->VerifyAndCommit();
  ASSERT_TRUE(result.error.ok()) << result.error.ToString();
  struct stat st {};
  ASSERT_EQ(stat((host_ + "/new.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, host_owner);
  ASSERT_EQ(stat((host_ + "/input.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, host_owner);
  EXPECT_EQ(ReadText(host_ + "/input.txt"), "modified by uid 12345\n");
  ASSERT_EQ(stat(host_.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, host_owner);
  ASSERT_EQ(stat((host_ + "/sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, host_owner) << "an untouched directory of the owner's came back someone else's";
  EXPECT_EQ(ReadText(host_ + "/leak.txt").find("TOPSECRET"), std::string::npos) << "root's 0600 file was readable";
  for (const char* root_owned : {"/secret", "/rootdir"}) {
    ASSERT_EQ(stat((host_ + root_owned).c_str(), &st), 0) << root_owned;
    EXPECT_EQ(st.st_uid, 0u) << root_owned << " was given away";
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, StagingTest, ::testing::Values(StagingStrategy::kCopy, StagingStrategy::kOverlay),
                         [](const auto& info) { return info.param == StagingStrategy::kCopy ? "copy" : "overlay"; });

TEST(StagingDirectTest, DirectModeBindsHostDirAndRemediatesAfter) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED (security checks): mounts in a throwaway namespace need root";
  TempDir host("cocoon-direct");
  TempDir target("cocoon-target");
  WriteText(host / "input.txt", "original\n");
  StagingOptions options;
  options.host_dir = host.path();
  options.mode = ir::WorkMode::kDirect;
  auto staging = Staging::Prepare(options);
  ASSERT_TRUE(staging.ok());
  EXPECT_EQ((*staging)->strategy(), StagingStrategy::kDirect);
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
  ASSERT_TRUE(result.error.ok()) << result.error.ToString();
  EXPECT_FALSE(result.committed);
  EXPECT_EQ(result.scan.findings.size(), 2u);
  EXPECT_FALSE(Exists(host / "escape"));
  EXPECT_EQ(ReadText(host / "result.txt"), "direct\n");
}

// A direct-mode work dir at <parent>/work, prepared; "moved" is where a test
// moves it to while another directory takes its path.
class DirectWorkDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "SKIPPED, NOT PASSED (security checks): mounts in a throwaway namespace need root";
    ASSERT_EQ(mkdir(host_.c_str(), 0755), 0);
    StagingOptions options;
    options.host_dir = host_;
    options.mode = ir::WorkMode::kDirect;
    auto staging = Staging::Prepare(options);
    ASSERT_TRUE(staging.ok()) << staging.status().ToString();
    staging_ = std::move(*staging);
  }

  // Moves the work dir away and makes a new, empty one at its path.
  void ReplaceTheWorkDir() {
    ASSERT_EQ(rename(host_.c_str(), moved_.c_str()), 0);
    ASSERT_EQ(mkdir(host_.c_str(), 0755), 0);
  }

  TempDir parent_{"cocoon-parent"};
  TempDir target_{"cocoon-target"};
  const std::string host_ = parent_ / "work";
  const std::string moved_ = parent_ / "moved";
  std::unique_ptr<Staging> staging_;
};

// Direct mode verifies the directory the sandbox was bound to. Moving it
// away and putting a clean one at its path after the run must not hide
// what the sandbox left in it.
TEST_F(DirectWorkDirTest, VerifiesTheBoundDirEvenIfItsPathNowNamesAnother) {
  int rc = RunStaged(*staging_, target_.path(), [](const std::string& work) {
    return symlink("/etc/passwd", (work + "/escape").c_str()) == 0 ? 0 : 1;
  });
  ASSERT_EQ(rc, 0);
  ReplaceTheWorkDir();
  auto result = staging_->VerifyAndCommit();
  ASSERT_TRUE(result.error.ok()) << result.error.ToString();
  ASSERT_EQ(result.scan.findings.size(), 1u);
  EXPECT_EQ(result.scan.findings[0].path, "escape");
  EXPECT_FALSE(Exists(moved_ + "/escape")) << "the escape in the bound dir must be removed";
}

// A signal during direct mode's after-the-fact scan stops it. What it found
// until then is still removed; the rest of the dir is reported unverified.
// (With the signal already pending, the walk stops after the root's first
// read: the escape at the root is found, the one in sub/ is not reached.)
TEST_F(DirectWorkDirTest, ASignalDuringTheScanStopsItRemovesWhatItFoundAndSaysTheRestIsUnverified) {
  int rc = RunStaged(*staging_, target_.path(), [](const std::string& work) {
    if (symlink("/etc/passwd", (work + "/escape").c_str()) != 0 || mkdir((work + "/sub").c_str(), 0755) != 0) return 1;
    return symlink("/etc/shadow", (work + "/sub/escape").c_str()) == 0 ? 0 : 2;
  });
  ASSERT_EQ(rc, 0);
  StagingResult result = VerifyWithASignalPending(*staging_);
  ASSERT_TRUE(result.scanned);
  EXPECT_TRUE(result.scan.stopped);
  ASSERT_EQ(result.scan.findings.size(), 1u);
  EXPECT_EQ(result.scan.findings[0].path, "escape");
  EXPECT_FALSE(std::filesystem::is_symlink(host_ + "/escape")) << "what the scan found was not removed";
  EXPECT_TRUE(std::filesystem::is_symlink(host_ + "/sub/escape")) << "the walk went on after the signal";
  EXPECT_EQ(result.error.code(), ErrorCode::kUnavailable) << result.error.ToString();
  EXPECT_NE(result.error.message().find("stopped by SIGINT"), std::string::npos) << result.error.message();
  EXPECT_NE(result.error.message().find("not verified"), std::string::npos) << result.error.message();
}

// The child binds the direct work dir by path: a directory put at that path
// after Prepare is refused, not bound in place of the one Prepare checked.
TEST_F(DirectWorkDirTest, ADirReplacedBeforeTheBindIsRefused) {
  ReplaceTheWorkDir();
  bool sandbox_ran = false;
  int rc = RunStaged(*staging_, target_.path(), [&](const std::string&) {
    sandbox_ran = true;
    return 0;
  });
  EXPECT_EQ(rc, 100 + static_cast<int>(WorkMountStep::kCheckDirect));
  EXPECT_FALSE(sandbox_ran);
}

// kDiscard verifies the staged tree (findings reported) and commits nothing:
// the host dir stays as it was.
TEST_P(StagingTest, ADiscardedRunIsVerifiedAndNothingIsCommitted) {
  auto staging = Staging::Prepare(Options());
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  int rc = RunStaged(**staging, target_.path(), [](const std::string& work) {
    WriteText(work + "/result.txt", "result\n");
    return symlink("/etc/passwd", (work + "/escape").c_str()) == 0 ? 0 : 1;
  });
  ASSERT_EQ(rc, 0);
  auto result = (*staging)->VerifyAndCommit(nullptr, -1, StagedCommit::kDiscard);
  ASSERT_TRUE(result.error.ok()) << result.error.ToString();
  EXPECT_TRUE(result.scanned);
  EXPECT_FALSE(result.committed);
  ASSERT_EQ(result.scan.findings.size(), 1u);
  EXPECT_EQ(result.scan.findings[0].path, "escape");
  EXPECT_FALSE(Exists(host_ + "/result.txt"));
  EXPECT_EQ(ReadText(host_ + "/input.txt"), "original\n");
}

// The overlay's lower layer is named by path, so the child opens it, checks
// it is the directory Prepare scanned and mounts it through that open: a
// directory put at the path after Prepare is refused, not shown to the
// sandbox. (The copy mode copies in through Prepare's own fd.)
TEST_P(StagingTest, AnOverlayLowerReplacedBeforeTheMountIsRefused) {
  if (GetParam() != StagingStrategy::kOverlay) GTEST_SKIP() << "overlay only (copy mode reads through Prepare's fd)";
  auto staging = Staging::Prepare(Options());
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  ASSERT_EQ(rename(host_.c_str(), (parent_ / "moved").c_str()), 0);
  testing::MakeDirs(host_);
  WriteText(host_ + "/input.txt", "someone else's\n");
  bool sandbox_ran = false;
  int rc = RunStaged(
      **staging, target_.path(),
      [&](const std::string&) {
        sandbox_ran = true;
        return 0;
      },
      /*mount_fails=*/true);
  EXPECT_EQ(rc, 100 + static_cast<int>(WorkMountStep::kCheckLower));
  EXPECT_FALSE(sandbox_ran);
}

// Staged modes: the commit refuses a work dir that was replaced while the
// sandbox ran; the directory now at the path receives nothing.
TEST_P(StagingTest, AWorkDirReplacedDuringTheRunReceivesNothing) {
  std::unique_ptr<Staging> staging = StagedWithAResult();
  ASSERT_NE(staging, nullptr);
  const std::string moved = parent_ / "moved";
  ASSERT_EQ(rename(host_.c_str(), moved.c_str()), 0);
  ASSERT_EQ(mkdir(host_.c_str(), 0755), 0);
  auto result = staging->VerifyAndCommit();
  EXPECT_FALSE(result.committed);
  EXPECT_EQ(result.error.code(), ErrorCode::kFailedPrecondition) << result.error.ToString();
  EXPECT_FALSE(Exists(host_ + "/result.txt"));
  EXPECT_FALSE(Exists(moved + "/result.txt"));
  EXPECT_EQ(ReadText(moved + "/input.txt"), "original\n");
}

// Two staged runs on one work dir would each replace it whole: the second is
// refused before anything runs, and may start once the first is gone.
TEST(StagingPrepareTest, ASecondStagingOfTheSameDirIsRefusedWhileTheFirstLasts) {
  TempDir host;
  StagingOptions options;
  options.host_dir = host.path();
  auto first = Staging::Prepare(options);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = Staging::Prepare(options);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(second.status().message().find("in use by another cocoon run"), std::string::npos)
      << second.status().message();
  first->reset();
  EXPECT_TRUE(Staging::Prepare(options).ok());
}

// Direct runs may share a work dir with each other, but not with a staged
// run: the staged one would take a direct sandbox's fresh escapes for the
// host's own files and commit them back.
TEST(StagingPrepareTest, DirectRunsShareADirButNeverWithAStagedRun) {
  TempDir host;
  StagingOptions staged;
  staged.host_dir = host.path();
  StagingOptions direct = staged;
  direct.mode = ir::WorkMode::kDirect;
  auto first_direct = Staging::Prepare(direct);
  ASSERT_TRUE(first_direct.ok()) << first_direct.status().ToString();
  auto second_direct = Staging::Prepare(direct);
  ASSERT_TRUE(second_direct.ok()) << second_direct.status().ToString();
  auto refused = Staging::Prepare(staged);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("in use by another cocoon run"), std::string::npos);
  first_direct->reset();
  second_direct->reset();
  auto staging = Staging::Prepare(staged);
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  auto direct_refused = Staging::Prepare(direct);
  ASSERT_FALSE(direct_refused.ok());
  EXPECT_NE(direct_refused.status().message().find("that stages it"), std::string::npos)
      << direct_refused.status().message();
}

// Runs on one work dir exclude each other whatever private state dir each
// picked: the lock is on the work dir itself. A lock file in each run's
// state dir let a run that picked another one (XDG_RUNTIME_DIR set for one
// and not the other, or a fallback because another user planted
// /tmp/.cocoon-UID) overlap a staged run, and the staged commit took a
// direct sandbox's fresh escaping link for the host's own (a review).
// Seen failing with the per-state-dir lock file (the direct run was let in).
TEST(StagingPrepareTest, RunsThatPickedDifferentStateDirsStillExcludeEachOther) {
  TempDir host, state_a("cocoon-state-a"), state_b("cocoon-state-b");
  StagingOptions staged;
  staged.host_dir = host.path();
  staged.state_dir = state_a.path();
  StagingOptions direct = staged;
  direct.strategy = StagingStrategy::kDirect;
  direct.state_dir = state_b.path();
  auto staging = Staging::Prepare(staged);
  ASSERT_TRUE(staging.ok()) << staging.status().ToString();
  auto direct_refused = Staging::Prepare(direct);
  ASSERT_FALSE(direct_refused.ok()) << "a direct run overlapped a staged one through another state dir";
  EXPECT_NE(direct_refused.status().message().find("in use by another cocoon run that stages it"), std::string::npos)
      << direct_refused.status().message();
  StagingOptions staged_b = staged;
  staged_b.state_dir = state_b.path();
  EXPECT_FALSE(Staging::Prepare(staged_b).ok()) << "two staged runs overlapped through different state dirs";
}

// Another process that can read the work dir may hold its lock (the price
// of a lock every run, of every user, shares): the refusal says so, and how
// to find it.
TEST(StagingPrepareTest, ALockHeldByAnotherProcessIsNamedAsAPossibleHolder) {
  TempDir host;
  int fd = open(host.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(flock(fd, LOCK_EX), 0);
  pid_t pid = fork();  // flock belongs to the open file: a child of ours contends with it
  if (pid == 0) {
    StagingOptions options;
    options.host_dir = host.path();
    auto staging = Staging::Prepare(options);
    if (staging.ok()) _exit(2);
    const std::string message = staging.status().message();
    _exit(message.find("or another process that can read it holds a lock on it") != std::string::npos &&
                  message.find("fuser") != std::string::npos
              ? 0
              : 3);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  close(fd);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "exit " << WEXITSTATUS(status);
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

// A host work dir deeper than the scan goes cannot be staged: the commit
// would leave the unscanned part out and so delete the host's own copy.
TEST(StagingPrepareTest, RefusesAHostDirTooDeepToVerify) {
  TempDir host;
  std::string path = host.path();
  for (uint32_t i = 0; i <= ScanOptions{}.max_depth; ++i) {
    path += "/d";
    ASSERT_EQ(mkdir(path.c_str(), 0755), 0);
  }
  StagingOptions options;
  options.host_dir = host.path();
  auto refused = Staging::Prepare(options);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("deeper than breakout verification goes"), std::string::npos)
      << refused.status().message();
  EXPECT_TRUE(std::filesystem::is_directory(path)) << "nothing of the host dir was touched";
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
  // The child names the lower layer through its own checked open of host_dir.
  EXPECT_EQ(std::string((*staging)->child_spec().host_dir), host.path());
  EXPECT_EQ(std::string((*staging)->child_spec().overlay_data).find(host.path()), std::string::npos);
  options.overlay_threshold_bytes = 1 << 20;
  staging->reset();  // one staging of a dir at a time (its flock)
  staging = Staging::Prepare(options);
  ASSERT_TRUE(staging.ok());
  EXPECT_EQ((*staging)->strategy(), StagingStrategy::kCopy);
  EXPECT_EQ(std::string((*staging)->child_spec().tmpfs_data), "size=1073741824,nr_inodes=1048576,mode=0755");
}

}  // namespace
}  // namespace cocoon::enforcer
