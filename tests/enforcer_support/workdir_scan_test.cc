// Breakout verification: one tree per kind of escape, real files on /tmp.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "enforcer/workdir/breakout_scan.h"
#include "test_tree.h"

namespace cocoon::enforcer {
namespace {

using testing::TempDir;
using testing::WriteText;

std::string Kinds(const ScanReport& report) {
  std::string out;
  for (const auto& f : report.findings) out += f.path + ":" + f.kind + " ";
  return out;
}

bool Has(const ScanReport& report, const std::string& path, const std::string& kind) {
  for (const auto& f : report.findings) {
    if (f.path == path && f.kind == kind) return true;
  }
  return false;
}

ScanReport Scan(const TempDir& dir, ScanMode mode = ScanMode::kStagedTree) {
  ScanOptions options;
  options.mode = mode;
  auto report = ScanForBreakoutsAt(dir.path(), options);
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return report.ok() ? *report : ScanReport{};
}

// A readable cancel fd (a SIGINT in the launcher's signalfd) stops the scan,
// which reports what it saw so far and judges no hardlink (it has not seen
// every link); an idle one changes nothing.
TEST(BreakoutScanTest, AReadableCancelFdStopsTheScan) {
  TempDir dir;
  testing::MakeDirs(dir / "a/b");
  WriteText(dir / "a/b/f", "x");
  ASSERT_EQ(link((dir / "a/b/f").c_str(), (dir / "g").c_str()), 0);  // both links inside: not a finding
  int signalled[2];
  ASSERT_EQ(pipe2(signalled, O_CLOEXEC), 0);
  ScanOptions options;
  options.cancel_fd = signalled[0];
  auto idle = ScanForBreakoutsAt(dir.path(), options);
  ASSERT_TRUE(idle.ok()) << idle.status().ToString();
  EXPECT_FALSE(idle->stopped);
  EXPECT_EQ(idle->regular_files, 2u);
  EXPECT_TRUE(idle->clean()) << Kinds(*idle);
  ASSERT_EQ(write(signalled[1], "x", 1), 1);
  auto stopped = ScanForBreakoutsAt(dir.path(), options);
  close(signalled[0]);
  close(signalled[1]);
  ASSERT_TRUE(stopped.ok()) << stopped.status().ToString();
  EXPECT_TRUE(stopped->stopped);
  EXPECT_LT(stopped->entries, idle->entries) << "the walk went on";
  EXPECT_TRUE(stopped->clean()) << "g's other link was not seen: no hardlink finding: " << Kinds(*stopped);
}

// The paths (and link targets) the scan walks add up against a cap: deep
// trees of long names made each kept path 64 KB, and the supervisor's
// memory grew without bound with a sandbox's hardlinks and symlinks.
// Past the cap a sandbox's tree is not verified; the host's own tree is
// scanned with the cap lifted.
TEST(BreakoutScanTest, PathsAddingUpPastTheCapAreNotVerified) {
  TempDir dir;
  const std::string name(200, 'n');
  testing::MakeDirs(dir / (name + "/" + name));
  WriteText(dir / (name + "/" + name + "/f"), "x");
  ASSERT_EQ(symlink("f", (dir / (name + "/" + name + "/link")).c_str()), 0);
  ScanOptions options;
  auto whole = ScanForBreakoutsAt(dir.path(), options);
  ASSERT_TRUE(whole.ok()) << whole.status().ToString();
  options.max_path_bytes = 1000;  // the tree's paths: 200 + 401 + 403 + 406, and the link's target
  auto capped = ScanForBreakoutsAt(dir.path(), options);
  ASSERT_FALSE(capped.ok());
  EXPECT_EQ(capped.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(capped.status().message().find("not verified"), std::string::npos) << capped.status().message();
  options.max_path_bytes = 2000;
  EXPECT_TRUE(ScanForBreakoutsAt(dir.path(), options).ok());
}

TEST(SymlinkLexicalTest, Table) {
  struct Case {
    const char* link;
    const char* target;
    bool escapes;
  } cases[] = {
      {"l", "/etc/passwd", true},    {"l", "a", false},          {"l", "./a/b", false},
      {"l", "..", true},             {"l", "../x", true},        {"d/l", "..", false},
      {"d/l", "../x", false},        {"d/l", "../../x", true},   {"d/e/l", "../../x", false},
      {"d/l", "a/../../x", false},   {"d/l", "a/../../../x", true}, {"l", "a/b/../../..", true},
      {"l", "a//b/.//..", false},    {"d/l", "/d/x", true},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(SymlinkEscapesLexically(c.link, c.target), c.escapes) << c.link << " -> " << c.target;
  }
}

TEST(BreakoutScanTest, CleanTreeHasNoFindings) {
  TempDir dir;
  testing::MakeDirs(dir / "src/lib");
  WriteText(dir / "src/main.py", "print(1)\n");
  WriteText(dir / "src/lib/util.py", "x = 1\n", 0755);
  ASSERT_EQ(symlink("lib/util.py", (dir / "src/alias.py").c_str()), 0);
  ASSERT_EQ(symlink("../../src", (dir / "src/lib/up").c_str()), 0);
  ASSERT_EQ(link((dir / "src/main.py").c_str(), (dir / "main-link.py").c_str()), 0);  // both links inside
  ScanReport report = Scan(dir);
  EXPECT_TRUE(report.clean()) << Kinds(report);
  EXPECT_EQ(report.regular_files, 3u);
  EXPECT_EQ(report.symlinks, 2u);
  EXPECT_EQ(report.directories, 2u);
  EXPECT_EQ(report.entries, 7u);
}

TEST(BreakoutScanTest, AbsoluteSymlinkEscapes) {
  TempDir dir;
  ASSERT_EQ(symlink("/etc/shadow", (dir / "shadow").c_str()), 0);
  ScanReport report = Scan(dir);
  ASSERT_EQ(report.findings.size(), 1u) << Kinds(report);
  EXPECT_EQ(report.findings[0].kind, "symlink-escape");
  EXPECT_EQ(report.findings[0].target, "/etc/shadow");
}

TEST(BreakoutScanTest, RelativeDotDotEscape) {
  TempDir dir;
  testing::MakeDirs(dir / "a/b");
  ASSERT_EQ(symlink("../../../etc", (dir / "a/b/out").c_str()), 0);
  ASSERT_EQ(symlink("../..", (dir / "a/b/root").c_str()), 0);  // exactly the tree root: fine
  ScanReport report = Scan(dir);
  EXPECT_TRUE(Has(report, "a/b/out", "symlink-escape")) << Kinds(report);
  EXPECT_FALSE(report.IsFlagged("a/b/root")) << Kinds(report);
}

TEST(BreakoutScanTest, SymlinkChainEscapeThroughAnInnerLink) {
  TempDir dir;
  testing::MakeDirs(dir / "sub");
  // sub/up -> ..   is the tree root (fine on its own);
  // x -> sub/up/.. is lexically "sub" but really the tree's parent.
  ASSERT_EQ(symlink("..", (dir / "sub/up").c_str()), 0);
  ASSERT_EQ(symlink("sub/up/..", (dir / "x").c_str()), 0);
  ScanReport report = Scan(dir);
  EXPECT_TRUE(Has(report, "x", "symlink-escape")) << Kinds(report);
  EXPECT_FALSE(report.IsFlagged("sub/up"));
}

TEST(BreakoutScanTest, DanglingLinkWithDotDotIsFlaggedPlainDanglingIsNot) {
  TempDir dir;
  ASSERT_EQ(symlink("missing/../../x", (dir / "later").c_str()), 0);
  ASSERT_EQ(symlink("not-yet-written.txt", (dir / "pending").c_str()), 0);
  ScanReport report = Scan(dir);
  EXPECT_TRUE(Has(report, "later", "symlink-escape")) << Kinds(report);
  EXPECT_FALSE(report.IsFlagged("pending"));
}

TEST(BreakoutScanTest, SymlinkLoopWithoutDotDotCannotEscape) {
  // a -> b -> a resolves to ELOOP on the host too: it reaches nothing.
  TempDir dir;
  ASSERT_EQ(symlink("b", (dir / "a").c_str()), 0);
  ASSERT_EQ(symlink("a", (dir / "b").c_str()), 0);
  EXPECT_TRUE(Scan(dir).clean());
  // With "..", the kernel's confined resolution decides: ELOOP is flagged.
  ASSERT_EQ(symlink("d/../c", (dir / "c").c_str()), 0);
  EXPECT_TRUE(Scan(dir).IsFlagged("c"));
}

// More entries than the walk sees before it starts its other threads
// (1024), so that the workers really run and their findings are merged.
TEST(BreakoutScanTest, ManyDirectoriesAcrossWorkerThreads) {
  TempDir dir;
  for (int d = 0; d < 700; ++d) {
    std::string sub = dir / ("d" + std::to_string(d));
    ASSERT_EQ(mkdir(sub.c_str(), 0755), 0);
    ASSERT_EQ(mkdir((sub + "/inner").c_str(), 0755), 0);
    WriteText(sub + "/inner/f", "x");
  }
  ASSERT_EQ(symlink("/", (dir / "d150/inner/root").c_str()), 0);
  ASSERT_EQ(link((dir / "d7/inner/f").c_str(), (dir / "d699/link").c_str()), 0);  // inside: fine
  for (uint32_t threads : {1u, 2u, 4u}) {
    ScanOptions options;
    options.threads = threads;
    auto report = ScanForBreakoutsAt(dir.path(), options);
    ASSERT_TRUE(report.ok());
    if (threads == 1) {
      EXPECT_EQ(report->workers, 1u);
    } else {
      EXPECT_GT(report->workers, 1u) << "no worker thread ran";
    }
    EXPECT_EQ(report->entries, 700u * 3 + 2) << threads;
    ASSERT_EQ(report->findings.size(), 1u) << threads << ": " << Kinds(*report);
    EXPECT_EQ(report->findings[0].path, "d150/inner/root");
  }
}

TEST(BreakoutScanTest, HardlinkToFileOutsideTheTree) {
  TempDir outside("cocoon-outside");
  TempDir dir;
  WriteText(outside / "passwd", "root:x:0:0::/root:/bin/sh\n");
  ASSERT_EQ(link((outside / "passwd").c_str(), (dir / "innocent.txt").c_str()), 0);
  // A second name of the same outside file: a finding too (direct mode
  // removes every finding; it once removed only the first name).
  ASSERT_EQ(link((outside / "passwd").c_str(), (dir / "also.txt").c_str()), 0);
  ScanReport report = Scan(dir);
  ASSERT_EQ(report.findings.size(), 2u) << Kinds(report);
  EXPECT_EQ(report.findings[0].path, "also.txt");
  EXPECT_EQ(report.findings[1].path, "innocent.txt");
  for (const auto& finding : report.findings) EXPECT_EQ(finding.kind, "hardlink");
}

TEST(BreakoutScanTest, FifoSocketDeviceAndSetidBits) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: mknod of a device node needs root";
  TempDir dir;
  ASSERT_EQ(mkfifo((dir / "pipe").c_str(), 0644), 0);
  testing::MakeSocket(dir / "sock");
  ASSERT_EQ(mknod((dir / "null").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
  ASSERT_EQ(mknod((dir / "disk").c_str(), S_IFBLK | 0600, makedev(7, 0)), 0);
  WriteText(dir / "suid", "#!/bin/sh\n", 04755);
  WriteText(dir / "sgid", "#!/bin/sh\n", 02755);
  WriteText(dir / "plain", "data", 0644);
  ScanReport report = Scan(dir);
  EXPECT_TRUE(Has(report, "pipe", "fifo")) << Kinds(report);
  EXPECT_TRUE(Has(report, "sock", "socket"));
  EXPECT_TRUE(Has(report, "null", "device"));
  EXPECT_TRUE(Has(report, "disk", "device"));
  EXPECT_TRUE(Has(report, "suid", "setuid"));
  EXPECT_TRUE(Has(report, "sgid", "setgid"));
  EXPECT_FALSE(report.IsFlagged("plain"));
  EXPECT_EQ(report.findings.size(), 6u);
  // On a directory the setuid bit means nothing (and the commit drops it): a
  // finding there would leave the whole subtree out of the commit.
  testing::MakeDirs(dir / "setuid-dir");
  WriteText((dir / "setuid-dir") + "/inside", "data", 0644);
  ASSERT_EQ(chmod((dir / "setuid-dir").c_str(), 04755), 0);
  EXPECT_FALSE(Scan(dir).IsFlagged("setuid-dir"));
}

TEST(BreakoutScanTest, OverlayWhiteoutIsNotADeviceInOverlayMode) {
  if (geteuid() != 0) GTEST_SKIP() << "SKIPPED: mknod of a whiteout needs root here";
  TempDir dir;
  ASSERT_EQ(mknod((dir / "deleted").c_str(), S_IFCHR | 0, makedev(0, 0)), 0);
  EXPECT_TRUE(Scan(dir, ScanMode::kOverlayUpper).clean());
  EXPECT_TRUE(Has(Scan(dir, ScanMode::kStagedTree), "deleted", "device"));
}

TEST(BreakoutScanTest, DeepTreeAndLimits) {
  TempDir dir;
  std::string path = dir.path();
  for (int i = 0; i < 40; ++i) {
    path += "/d";
    ASSERT_EQ(mkdir(path.c_str(), 0755), 0);
  }
  ASSERT_EQ(symlink("/", (path + "/root").c_str()), 0);
  ScanReport report = Scan(dir);
  ASSERT_EQ(report.findings.size(), 1u);
  EXPECT_EQ(report.findings[0].path.size(), 40u * 2 + 4);
  // Past max_depth: the first directory too deep is a finding, not entered
  // (the escape below it is not seen, and not needed: the whole directory
  // is left out), and the scan still succeeds.
  ScanOptions shallow;
  shallow.max_depth = 10;
  auto limited = ScanForBreakoutsAt(dir.path(), shallow);
  ASSERT_TRUE(limited.ok()) << limited.status().ToString();
  ASSERT_EQ(limited->findings.size(), 1u);
  EXPECT_EQ(limited->findings[0].kind, "too-deep");
  EXPECT_EQ(limited->findings[0].path, "d/d/d/d/d/d/d/d/d/d/d");
  EXPECT_TRUE(IsUninspected(limited->findings[0]));
  // The default goes 256 levels deep.
  EXPECT_EQ(ScanOptions{}.max_depth, 256u);
}

// The findings are kept in memory and listed in the Outcome, outside every
// limit of the sandbox: past the caps the scan fails (nothing is committed)
// rather than grow the supervisor without bound.
TEST(BreakoutScanTest, FindingsPastTheCapsFailTheScan) {
  TempDir dir;
  for (int i = 0; i < 20; ++i) ASSERT_EQ(symlink("/", (dir / ("link" + std::to_string(i))).c_str()), 0);
  ScanOptions options;
  options.max_findings = 19;
  auto capped = ScanForBreakoutsAt(dir.path(), options);
  ASSERT_FALSE(capped.ok());
  EXPECT_EQ(capped.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(capped.status().message().find("not verified"), std::string::npos) << capped.status().ToString();
  options.max_findings = 20;
  auto fits = ScanForBreakoutsAt(dir.path(), options);
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  EXPECT_EQ(fits->findings.size(), 20u);
  options.max_finding_bytes = 50;  // 20 paths of 5-6 bytes and their 1-byte targets: over 100
  EXPECT_EQ(ScanForBreakoutsAt(dir.path(), options).status().code(), ErrorCode::kResourceExhausted);
}

TEST(BreakoutScanTest, RootMustBeARealDirectory) {
  TempDir dir;
  ASSERT_EQ(symlink("/etc", (dir / "link").c_str()), 0);
  EXPECT_FALSE(ScanForBreakoutsAt(dir / "link").ok());  // O_NOFOLLOW: a link is refused
}

}  // namespace
}  // namespace cocoon::enforcer
