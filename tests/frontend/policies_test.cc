// Every shipped policy checks clean: no errors and no warnings.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/frontend/test_util.h"

namespace cocoon::frontend {
namespace {

std::vector<std::string> ShippedPolicies() {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(testing::RepoPath("policies"))) {
    if (entry.is_regular_file() && entry.path().extension() == ".cocoon") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ShippedPolicies, EveryOneChecksClean) {
  std::vector<std::string> files = ShippedPolicies();
  ASSERT_GE(files.size(), 7u);
  for (const std::string& file : files) {
    Diagnostics diagnostics;
    EXPECT_TRUE(CheckPolicyFile(file, "", {}, diagnostics)) << diagnostics.Render();
    EXPECT_EQ(diagnostics.warning_count(), 0u) << file << "\n" << diagnostics.Render();
  }
}

TEST(ShippedPolicies, StrictIsStrict) {
  Diagnostics diagnostics;
  auto p = CompilePolicyFile(testing::RepoPath("policies/strict.cocoon"), "", {}, diagnostics);
  ASSERT_TRUE(p) << diagnostics.Render();
  EXPECT_EQ(p->network.mode, ir::NetworkMode::kOff);
  EXPECT_EQ(p->limits.wall_time_ms.value, 5000u);
  EXPECT_EQ(p->limits.memory_bytes.value, 128u << 20);
  EXPECT_EQ(p->limits.processes.value, 32u);
  EXPECT_TRUE(p->limits.output_bytes.set);
  EXPECT_EQ(p->syscalls.default_action, (ir::Action{ir::ActionKind::kErrno, 38}));
  for (const auto& m : p->filesystem.mounts) EXPECT_NE(m.kind, ir::MountKind::kWritable) << m.target;
  for (const auto& r : p->syscalls.rules) {
    if (r.name == "mount" || r.name == "ptrace" || r.name == "init_module" || r.name == "unshare") {
      EXPECT_EQ(r.action.kind, ir::ActionKind::kErrno) << r.name;
    }
  }
  EXPECT_TRUE(p->environment.clear);
  EXPECT_EQ(p->cwd, "/work");
}

TEST(ShippedPolicies, BuildExtendsStrictWithMoreRoom) {
  Diagnostics diagnostics;
  auto p = CompilePolicyFile(testing::RepoPath("policies/build.cocoon"), "", {}, diagnostics);
  ASSERT_TRUE(p) << diagnostics.Render();
  EXPECT_EQ(p->lineage, (std::vector<std::string>{"build", "strict"}));
  EXPECT_EQ(p->limits.wall_time_ms.value, 300000u);
  EXPECT_EQ(p->limits.memory_bytes.value, 1u << 30);
  EXPECT_EQ(p->limits.processes.value, 256u);
  EXPECT_EQ(p->network.mode, ir::NetworkMode::kOff);
}

TEST(ShippedPolicies, FormattingIsStable) {
  for (const std::string& file : ShippedPolicies()) {
    std::string text, error;
    ASSERT_TRUE(ReadPolicyFile(file, 1 << 20, text, error)) << error;
    Diagnostics diagnostics;
    auto once = FormatPolicy(file, text, diagnostics);
    ASSERT_TRUE(once) << diagnostics.Render();
    auto twice = FormatPolicy(file, *once, diagnostics);
    ASSERT_TRUE(twice);
    EXPECT_EQ(*once, *twice) << file;
  }
}

}  // namespace
}  // namespace cocoon::frontend
