// Golden artifacts: every policies/*.cocoon, compiled for every target, must
// match the files checked in under tests/golden/<policy>/. Review the diff
// of those files in each commit that changes a back end.
//
// Update mode: COCOON_UPDATE_GOLDEN=1 ctest -R Golden  (or run golden_test)
// rewrites the files instead of comparing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/backends/oci/docker_seccomp_import.h"
#include "compiler/driver/driver.h"
#include "compiler/frontend/frontend.h"

namespace cocoon {
namespace {

namespace fs = std::filesystem;

const fs::path kRepo = fs::path(COCOON_SOURCE_DIR).lexically_normal();

bool UpdateMode() {
  const char* value = std::getenv("COCOON_UPDATE_GOLDEN");
  return value != nullptr && std::string(value) == "1";
}

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::vector<fs::path> ShippedPolicies() {
  std::vector<fs::path> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(kRepo / "policies", ec)) {
    if (entry.path().extension() == ".cocoon") out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<ir::Policy> CompileShipped(const fs::path& file, std::string& errors) {
  frontend::FrontendOptions options;
  options.search_paths = {(kRepo / "policies").string()};
  Diagnostics diagnostics;
  auto policy = frontend::CompilePolicyFile(file.string(), "", options, diagnostics);
  if (!policy) {
    // Several profiles and none named like the file: golden-test the first.
    Diagnostics list_diagnostics;
    auto profiles = frontend::ListProfiles(file.string(), options, list_diagnostics);
    if (!profiles.empty()) {
      diagnostics = Diagnostics();
      policy = frontend::CompilePolicyFile(file.string(), profiles.front(), options, diagnostics);
    }
  }
  errors = diagnostics.Render();
  return policy;
}

std::vector<driver::Target> Targets(const ir::Policy& policy) {
  std::vector<driver::Target> out;
  for (driver::Target t : driver::AllTargets()) {
    if (t != driver::Target::kLinux || driver::CompileTargets(policy, {t}).ok()) out.push_back(t);
  }
  return out;
}

TEST(Golden, EveryShippedPolicyMatchesItsCheckedInArtifacts) {
  const auto policies = ShippedPolicies();
  if (policies.empty()) GTEST_SKIP() << "SKIPPED LOUDLY: no policies/*.cocoon to golden-test yet";
  for (const fs::path& file : policies) {
    SCOPED_TRACE(file.string());
    std::string errors;
    auto policy = CompileShipped(file, errors);
    ASSERT_TRUE(policy.has_value()) << errors;
    auto output = driver::CompileTargets(*policy, Targets(*policy));
    ASSERT_TRUE(output.ok()) << output.status().ToString();
    // tests/golden/strict/..., tests/golden/build/...
    const fs::path relative = fs::relative(file, kRepo / "policies").replace_extension();
    const fs::path golden_dir = kRepo / "tests" / "golden" / relative;
    for (const auto& artifact : output->artifacts) {
      const fs::path golden = golden_dir / artifact.path;
      if (UpdateMode()) {
        fs::create_directories(golden.parent_path());
        std::ofstream(golden, std::ios::binary | std::ios::trunc) << artifact.bytes;
        continue;
      }
      ASSERT_TRUE(fs::exists(golden)) << golden << " is missing; run with COCOON_UPDATE_GOLDEN=1";
      EXPECT_TRUE(ReadFile(golden) == artifact.bytes)
          << golden << " differs from the compiler's output; if the change is intended, run with "
          << "COCOON_UPDATE_GOLDEN=1 and review the diff";
    }
  }
}

TEST(Golden, ImportedMobyProfilePassesTheChecker) {
  const std::string moby = ReadFile(kRepo / "tests" / "backends" / "oci" / "data" / "moby-default-seccomp.json");
  ASSERT_FALSE(moby.empty());
  backends::oci::DockerImportOptions options;
  options.profile_name = "docker_default";
  auto text = backends::oci::ImportDockerSeccomp(moby, options);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  Diagnostics diagnostics;
  auto policy = frontend::CompilePolicyText("docker_default.cocoon", *text, "", {}, diagnostics);
  ASSERT_TRUE(policy.has_value()) << diagnostics.Render() << "\n" << *text;
  EXPECT_FALSE(diagnostics.has_errors());
  // The round trip keeps the two-tier denial: unknown syscalls get EPERM as in moby.
  EXPECT_EQ(policy->syscalls.default_action.kind, ir::ActionKind::kErrno);
  EXPECT_EQ(policy->syscalls.default_action.errno_value, 1);
}

}  // namespace
}  // namespace cocoon
