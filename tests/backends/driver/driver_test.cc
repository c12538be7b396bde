// The compile driver: targets, manifest contents, atomic writes that never
// leave partial output, and a loader that refuses any tampering.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "compiler/common/digest.h"
#include "compiler/driver/driver.h"
#include "tests/backends/driver/test_policy.h"

namespace cocoon {
namespace {

namespace fs = std::filesystem;
using driver::Target;

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/cocoon-driver-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::vector<Target> AvailableTargets() {
  // Linux needs the seccomp and plan back ends; the others are always built with the driver.
  std::vector<Target> out = {Target::kMacos, Target::kWindows, Target::kOci, Target::kKubernetes};
  if (driver::CompileTargets(testing::StrictPolicy(), {Target::kLinux}).ok()) out.insert(out.begin(), Target::kLinux);
  return out;
}

driver::CompileOutput CompileStrict() {
  auto out = driver::CompileTargets(testing::StrictPolicy(), AvailableTargets());
  EXPECT_TRUE(out.ok()) << out.status().ToString();
  return *out;
}

TEST(ParseTargets, AcceptsNamesListsAndAll) {
  EXPECT_EQ(*driver::ParseTargets("linux"), std::vector<Target>{Target::kLinux});
  EXPECT_EQ(driver::ParseTargets("all")->size(), 5u);
  EXPECT_EQ(*driver::ParseTargets("k8s,macos"), (std::vector<Target>{Target::kMacos, Target::kKubernetes}));
  EXPECT_FALSE(driver::ParseTargets("linx").ok());
  EXPECT_FALSE(driver::ParseTargets("").ok());
  EXPECT_FALSE(driver::ParseTargets("linux,").ok());
}

TEST(CompileTargets, LinuxIsCompiledOrReportedUnavailableNeverEmpty) {
  auto out = driver::CompileTargets(testing::StrictPolicy(), {Target::kLinux});
  if (out.ok()) {
    std::set<std::string> paths;
    for (const auto& a : out->artifacts) paths.insert(a.path);
    EXPECT_TRUE(paths.count("linux.seccomp.bpf"));
    EXPECT_TRUE(paths.count("linux.plan.json"));
  } else {
    EXPECT_NE(out.status().message().find("target linux unavailable"), std::string::npos) << out.status().ToString();
  }
}

TEST(CompileTargets, ManifestDescribesEveryArtifact) {
  auto out = CompileStrict();
  ASSERT_EQ(out.manifest.artifacts.size(), out.artifacts.size());
  for (size_t i = 0; i < out.artifacts.size(); ++i) {
    EXPECT_EQ(out.manifest.artifacts[i].path, out.artifacts[i].path);
    EXPECT_EQ(out.manifest.artifacts[i].sha256, Sha256Hex(out.artifacts[i].bytes));
    EXPECT_EQ(out.manifest.artifacts[i].size, out.artifacts[i].bytes.size());
    EXPECT_FALSE(out.manifest.artifacts[i].media_type.empty());
  }
  EXPECT_EQ(out.manifest.policy_sha256, std::string(64, 'a'));
  EXPECT_EQ(out.manifest.profile, "strict");
  EXPECT_EQ(out.manifest.architectures, std::vector<std::string>{"x86_64"});
  EXPECT_FALSE(out.manifest.compiler_version.empty());
}

// The linux target compiles on a worker thread when other targets are
// requested too: the result must be exactly what each target gives alone.
TEST(CompileTargets, AllTargetsTogetherEqualEachTargetAlone) {
  const std::vector<Target> targets = AvailableTargets();
  auto together = CompileStrict();
  std::vector<backends::Artifact> alone;
  for (Target target : targets) {
    auto out = driver::CompileTargets(testing::StrictPolicy(), {target});
    ASSERT_TRUE(out.ok()) << out.status().ToString();
    for (auto& artifact : out->artifacts) alone.push_back(std::move(artifact));
  }
  ASSERT_EQ(together.artifacts.size(), alone.size());
  for (size_t i = 0; i < alone.size(); ++i) {
    EXPECT_EQ(together.artifacts[i].path, alone[i].path);
    EXPECT_EQ(together.artifacts[i].bytes, alone[i].bytes) << alone[i].path;
  }
}

// A failure on the worker thread (linux refuses a default that allows
// without the policy saying so) is a status naming the target, never a crash
// or a partial result; repeated, so a race would have chances to show.
TEST(CompileTargets, LinuxFailureOnTheWorkerIsReportedWhole) {
  if (AvailableTargets().front() != Target::kLinux) GTEST_SKIP() << "SKIPPED: this build has no linux target";
  ir::Policy policy = testing::StrictPolicy();
  policy.syscalls.default_action = {ir::ActionKind::kAllow, 0};
  policy.syscalls.default_explicitly_allows = false;
  for (int i = 0; i < 20; ++i) {
    auto out = driver::CompileTargets(policy, driver::AllTargets());
    ASSERT_FALSE(out.ok());
    EXPECT_NE(out.status().message().find("compiling target linux"), std::string::npos) << out.status().ToString();
    EXPECT_NE(out.status().message().find("default action allows"), std::string::npos) << out.status().ToString();
  }
}

// Two targets failing on two threads: the first in target order is the one
// reported, as in a sequential compile.
TEST(CompileTargets, FirstFailureInTargetOrderIsReported) {
  if (AvailableTargets().front() != Target::kLinux) GTEST_SKIP() << "SKIPPED: this build has no linux target";
  ir::Policy policy = testing::StrictPolicy();
  policy.syscalls.rules.push_back(testing::Rule("no_such_syscall_xyz", ir::ActionKind::kAllow));
  auto linux_alone = driver::CompileTargets(policy, {Target::kLinux});
  ASSERT_FALSE(linux_alone.ok());
  auto all = driver::CompileTargets(policy, driver::AllTargets());
  ASSERT_FALSE(all.ok());
  EXPECT_EQ(all.status().ToString(), linux_alone.status().ToString());
}

TEST(CompiledDir, WriteThenLoadRoundTrips) {
  TempDir tmp;
  auto out = CompileStrict();
  const fs::path dir = tmp.path() / "out";
  ASSERT_TRUE(driver::WriteCompiledDir(out, dir.string()).ok());
  auto loaded = driver::LoadCompiledDir(dir.string());
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->files.size(), out.artifacts.size());
  ASSERT_NE(loaded->File("macos.sb"), nullptr);
  for (const auto& artifact : out.artifacts) {
    ASSERT_NE(loaded->File(artifact.path), nullptr) << artifact.path;
    EXPECT_EQ(*loaded->File(artifact.path), artifact.bytes);
  }
  // Recompiling over a previous output replaces it in one step.
  ASSERT_TRUE(driver::WriteCompiledDir(out, dir.string()).ok());
  for (const auto& entry : fs::directory_iterator(tmp.path())) {
    EXPECT_EQ(entry.path().filename(), "out") << "leftover " << entry.path();
  }
}

TEST(CompiledDir, TamperedArtifactIsRefused) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "out";
  ASSERT_TRUE(driver::WriteCompiledDir(CompileStrict(), dir.string()).ok());
  {
    std::fstream f(dir / "macos.sb", std::ios::in | std::ios::out);
    f.seekp(3);
    f.put('X');
  }
  auto loaded = driver::LoadCompiledDir(dir.string());
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), ErrorCode::kDataLoss);
}

TEST(CompiledDir, SymlinkedArtifactIsRefused) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "out";
  ASSERT_TRUE(driver::WriteCompiledDir(CompileStrict(), dir.string()).ok());
  fs::copy_file(dir / "windows.json", tmp.path() / "copy.json");
  fs::remove(dir / "windows.json");
  fs::create_symlink(tmp.path() / "copy.json", dir / "windows.json");
  EXPECT_FALSE(driver::LoadCompiledDir(dir.string()).ok()) << "same bytes, but through a symlink";
  fs::remove_all(dir / "oci");
  fs::create_directory_symlink(tmp.path(), dir / "oci");
  EXPECT_FALSE(driver::LoadCompiledDir(dir.string()).ok());
}

TEST(CompiledDir, UnsafeManifestPathsAreRefused) {
  for (const char* path : {"../x", "/etc/passwd", "a/../b", "a//b", "./a", "a/", "a b"}) {
    EXPECT_FALSE(driver::IsSafeArtifactPath(path)) << path;
  }
  EXPECT_TRUE(driver::IsSafeArtifactPath("k8s/pod.json"));
  driver::Manifest manifest;
  manifest.artifacts.push_back({"../escape", "linux", "x", std::string(64, '0'), 0});
  EXPECT_FALSE(driver::ParseManifest(driver::ManifestToJson(manifest)).ok());
}

// The manifest is read by its schema, not searched: an unknown member, a
// member twice in one object (nlohmann would keep the last), a target the
// manifest does not list or no one knows, or a malformed entry is refused.
// `cocoon enforce DIR` used to take any nested {path, sha256} object, the
// last one winning.
TEST(CompiledDir, ManifestsWithUnknownOrDuplicateMembersAreRefused) {
  const std::string text = driver::ManifestToJson(CompileStrict().manifest);
  ASSERT_TRUE(driver::ParseManifest(text).ok());
  const std::string hash(64, 'a');
  const std::string entry = R"({"path": "linux.plan.json", "target": "linux", "media_type": "x", "sha256": ")" +
                            hash + R"(", "size": 1})";
  auto manifest = [&](const std::string& artifacts, const std::string& extra = "",
                      const std::string& targets = R"(["linux"])") {
    return R"({"schema": "cocoon.manifest/v1", "compiler_version": "0", "profile": "p", "policy_sha256": "",
               "targets": )" + targets + R"(, "architectures": ["x86_64"], )" + extra + R"("artifacts": )" +
           artifacts + "}";
  };
  EXPECT_TRUE(driver::ParseManifest(manifest("[" + entry + "]")).ok());
  const std::vector<std::pair<std::string, std::string>> refused = {
      {"unknown top-level member", manifest("[" + entry + "]", R"("signed_by": "me", )")},
      {"nested {path, sha256} object", manifest("[" + entry + "]", R"("extra": {"path": "linux.plan.json", "sha256": ")" + hash + R"("}, )")},
      {"unknown artifact member", manifest(R"([{"path": "linux.plan.json", "target": "linux", "media_type": "x",
                                              "sha256": ")" + hash + R"(", "size": 1, "note": "x"}])")},
      {"artifacts twice", manifest("[]", R"("artifacts": [)" + entry + "], ")},
      {"sha256 twice in an entry", manifest(R"([{"path": "linux.plan.json", "target": "linux", "media_type": "x",
                                              "sha256": ")" + std::string(64, 'b') + R"(", "sha256": ")" + hash +
                                            R"(", "size": 1}])")},
      {"duplicate artifact", manifest("[" + entry + ", " + entry + "]")},
      {"target not listed", manifest("[" + entry + "]", "", R"(["macos"])")},
      {"unknown target", manifest("[]", "", R"(["linux", "plan9"])")},
      {"target twice", manifest("[]", "", R"(["linux", "linux"])")},
      {"artifacts not an array", manifest(R"({"a": )" + entry + "}")},
      {"negative size", manifest(R"([{"path": "linux.plan.json", "target": "linux", "media_type": "x",
                                   "sha256": ")" + hash + R"(", "size": -1}])")},
      {"path not a string", manifest(R"([{"path": 7, "target": "linux", "media_type": "x",
                                        "sha256": ")" + hash + R"(", "size": 1}])")},
  };
  for (const auto& [why, json] : refused) {
    auto parsed = driver::ParseManifest(json);
    EXPECT_FALSE(parsed.ok()) << why;
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.status().code(), ErrorCode::kInvalidArgument) << why;
    }
  }
}

// LoadOptions::only: a launcher reads and hashes its own artifacts alone,
// each of which must be listed, and no symlink is followed; the manifest
// is checked whole. A FIFO in place of an artifact is refused, not waited on.
TEST(CompiledDir, OnlyTheNamedArtifactsAreReadEachListedAndNoneThroughASymlink) {
  if (AvailableTargets().front() != Target::kLinux) GTEST_SKIP() << "SKIPPED: this build has no linux target";
  TempDir tmp;
  const fs::path dir = tmp.path() / "out";
  ASSERT_TRUE(driver::WriteCompiledDir(CompileStrict(), dir.string()).ok());
  driver::LoadOptions only;
  only.only = {"linux.plan.json", "linux.seccomp.bpf"};
  std::ofstream(dir / "macos.sb", std::ios::app) << "changed, and not read";
  auto loaded = driver::LoadCompiledDir(dir.string(), only);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->files.size(), 2u);
  EXPECT_EQ(loaded->File("macos.sb"), nullptr);
  EXPECT_FALSE(driver::LoadCompiledDir(dir.string()).ok()) << "without `only`, macos.sb is checked";

  only.only.push_back("linux.missing.json");
  auto unlisted = driver::LoadCompiledDir(dir.string(), only);
  ASSERT_FALSE(unlisted.ok());
  EXPECT_EQ(unlisted.status().code(), ErrorCode::kDataLoss);
  EXPECT_NE(unlisted.status().message().find("does not list linux.missing.json"), std::string::npos);
  only.only.pop_back();

  fs::copy_file(dir / "linux.plan.json", tmp.path() / "plan.copy");
  fs::remove(dir / "linux.plan.json");
  fs::create_symlink("../plan.copy", dir / "linux.plan.json");
  auto linked = driver::LoadCompiledDir(dir.string(), only);
  ASSERT_FALSE(linked.ok()) << "same bytes, but through a symlink";
  EXPECT_EQ(linked.status().code(), ErrorCode::kDataLoss);
  EXPECT_NE(linked.status().message().find("artifact linux.plan.json is a symbolic link"), std::string::npos)
      << linked.status().ToString();

  fs::remove(dir / "linux.plan.json");
  ASSERT_EQ(mkfifo((dir / "linux.plan.json").c_str(), 0600), 0);
  auto fifo = driver::LoadCompiledDir(dir.string(), only);
  ASSERT_FALSE(fifo.ok());
  EXPECT_NE(fifo.status().message().find("is not a regular file"), std::string::npos) << fifo.status().ToString();

  fs::remove(dir / "linux.plan.json");
  fs::rename(dir / "manifest.json", tmp.path() / "manifest.json");
  fs::create_symlink(tmp.path() / "manifest.json", dir / "manifest.json");
  EXPECT_FALSE(driver::LoadCompiledDir(dir.string(), only).ok()) << "manifest.json through a symlink";
}

TEST(CompiledDir, RefusesToReplaceForeignDirectoriesAndLeavesNoTemp) {
  TempDir tmp;
  const fs::path dir = tmp.path() / "precious";
  fs::create_directory(dir);
  std::ofstream(dir / "thesis.tex") << "do not delete";
  Status status = driver::WriteCompiledDir(CompileStrict(), dir.string());
  EXPECT_EQ(status.code(), ErrorCode::kFailedPrecondition) << status.ToString();
  EXPECT_TRUE(fs::exists(dir / "thesis.tex"));
  // A failing write (unsafe path from a back end) leaves nothing behind.
  auto out = CompileStrict();
  out.artifacts.push_back(backends::MakeArtifact("oci", "../evil", "x", "y"));
  EXPECT_FALSE(driver::WriteCompiledDir(out, (tmp.path() / "new").string()).ok());
  EXPECT_FALSE(fs::exists(tmp.path() / "new"));
  size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(tmp.path())) ++entries;
  EXPECT_EQ(entries, 1u) << "temporary directory left behind";
}

// A directory is replaced only when it holds exactly a previous output: a
// manifest.json of ours and the artifacts it lists. A web app's
// manifest.json, or a file a user put beside the artifacts, is data that the
// swap would delete.
TEST(CompiledDir, RefusesToReplaceADirectoryWithAForeignManifestOrExtraFiles) {
  TempDir tmp;
  const fs::path webapp = tmp.path() / "webapp";
  fs::create_directories(webapp / "icons");
  std::ofstream(webapp / "manifest.json") << R"({"name":"my web app"})";
  std::ofstream(webapp / "icons" / "a.png") << "png";
  Status status = driver::WriteCompiledDir(CompileStrict(), webapp.string());
  EXPECT_EQ(status.code(), ErrorCode::kFailedPrecondition) << status.ToString();
  EXPECT_NE(status.message().find("not a cocoon compile manifest"), std::string::npos) << status.ToString();
  EXPECT_TRUE(fs::exists(webapp / "icons" / "a.png"));

  const fs::path out = tmp.path() / "out";
  ASSERT_TRUE(driver::WriteCompiledDir(CompileStrict(), out.string()).ok());
  std::ofstream(out / "notes.txt") << "mine";
  fs::create_directory(out / "oci" / "extra");
  status = driver::WriteCompiledDir(CompileStrict(), out.string());
  EXPECT_EQ(status.code(), ErrorCode::kFailedPrecondition) << status.ToString();
  EXPECT_TRUE(fs::exists(out / "notes.txt"));
  fs::remove(out / "notes.txt");
  status = driver::WriteCompiledDir(CompileStrict(), out.string());
  EXPECT_EQ(status.code(), ErrorCode::kFailedPrecondition) << "oci/extra is not listed: " << status.ToString();
  fs::remove(out / "oci" / "extra");
  EXPECT_TRUE(driver::WriteCompiledDir(CompileStrict(), out.string()).ok()) << "exactly a previous output";
  // "out/" is the same directory (shell completion adds the slash).
  EXPECT_TRUE(driver::WriteCompiledDir(CompileStrict(), out.string() + "/").ok());
  EXPECT_TRUE(driver::LoadCompiledDir(out.string()).ok());
}

}  // namespace
}  // namespace cocoon
