// What the artifact cache stores after a compile (cli/policy_compile.h,
// cli/base_summary_util.h): the digests of the bytes the front end parsed,
// never of a second read of the files. With a second read, an import edited
// between the compile and the store paired the old text's plan with the new
// text's digest, and every later launch was served the old plan (seen
// failing on that code: the lookups below hit).
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "cli/base_summary_util.h"
#include "cli/launch_dynamic.h"
#include "cli/policy_compile.h"
#include "enforcer/artifact_cache.h"

namespace cocoon::cli {

// The dynamic-loader seam (cli/launch_dynamic.h): this test launches
// nothing, so it links neither side.
Result<std::unique_ptr<LaunchAuditLog>> OpenLaunchAuditLog(const AuditOptions&) {
  return InternalError("not in this test");
}
Result<enforcer::AllowListResolver> HostNameResolver() { return InternalError("not in this test"); }
bool LaunchDynamicExecsFullCocoon() { return false; }

namespace {

class CacheStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/cocoon-cache-store-test-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    dir_ = templ;
    ASSERT_EQ(setenv("COCOON_CACHE_DIR", (dir_ + "/cache").c_str(), 1), 0);
    unsetenv("COCOON_POLICY_PATH");
    mine_ = dir_ + "/mine.cocoon";
    base_ = dir_ + "/base.cocoon";
    std::ofstream(mine_) << "import \"base\"\nprofile mine extends base {}\n";
    WriteBase("one", "128MiB");
  }
  void TearDown() override {
    unsetenv("COCOON_CACHE_DIR");
    ASSERT_EQ(system(("rm -rf " + dir_).c_str()), 0);
  }
  void WriteBase(const std::string& hostname, const std::string& memory) {
    std::ofstream(base_, std::ios::trunc) << "profile base {\n  hostname " << hostname << "\n  limits {\n    memory "
                                          << memory << "\n  }\n}\n";
  }

  std::string dir_, mine_, base_;
};

TEST_F(CacheStoreTest, AnImportEditedBetweenCompileAndStoreIsAMissNotTheOldPlan) {
  enforcer::ArtifactCache cache(enforcer::ArtifactCache::DefaultDir());
  const std::string key = enforcer::ArtifactCache::KeyFor(mine_, "mine");
  ASSERT_FALSE(key.empty());
  auto compiled = CompilePolicyOnCacheMiss(mine_, "mine");
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  ASSERT_NE(compiled->plan_json.find("\"one\""), std::string::npos) << compiled->plan_json;
  ASSERT_EQ(compiled->source_files.size(), 2u);
  ASSERT_EQ(compiled->source_sha256.size(), 2u);

  WriteBase("two", "128MiB");  // lands after the front end read base.cocoon
  ASSERT_TRUE(cache.Store(key, *compiled).ok());
  EXPECT_FALSE(cache.Lookup(key).has_value())
      << "the entry holds the plan for hostname one under base.cocoon's new text (hostname two)";

  WriteBase("one", "128MiB");  // the text the plan was compiled from: the entry is right for it
  auto hit = cache.Lookup(key);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->plan_json, compiled->plan_json);
}

TEST_F(CacheStoreTest, ABaseEditedBetweenCheckAndSummaryStoreIsAMiss) {
  auto policy = CheckPolicyFile(base_, "base");
  ASSERT_TRUE(policy.ok()) << policy.status().message();
  WriteBase("one", "64MiB");
  StoreBaseSummary(base_, "base", *policy);
  EXPECT_FALSE(LookupBaseSummary(base_, "base").has_value())
      << "a summary of the 128MiB text was stored as the 64MiB text's";

  WriteBase("one", "128MiB");
  StoreBaseSummary(base_, "base", *policy);
  auto hit = LookupBaseSummary(base_, "base");
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->limits.memory_bytes.value, 128u << 20);
}

// Store never hashes the files itself: an entry without a digest for each
// source file is refused.
TEST_F(CacheStoreTest, AnEntryWithoutSourceDigestsIsNotStored) {
  enforcer::ArtifactCache cache(enforcer::ArtifactCache::DefaultDir());
  const std::string key = enforcer::ArtifactCache::KeyFor(mine_, "mine");
  enforcer::CompiledLinuxArtifacts artifacts{"{plan}", "BPFBYTES", "{}", {mine_}};
  EXPECT_FALSE(cache.Store(key, artifacts).ok());
  EXPECT_FALSE(cache.Lookup(key).has_value());
}

// An import found through a symlink: the entry also records the path the
// import found, hashed through the link at lookup. Keyed by the canonical
// file alone, repointing the link (to a file of other text) kept hitting
// with the old plan, since the old target was unchanged (seen failing:
// hostname one after base.cocoon pointed at two.cocoon).
TEST_F(CacheStoreTest, AnImportsSymlinkRepointedIsAMissNotTheOldPlan) {
  ASSERT_EQ(rename(base_.c_str(), (dir_ + "/one.cocoon").c_str()), 0);
  std::ofstream(dir_ + "/two.cocoon") << "profile base {\n  hostname two\n  limits {\n    memory 128MiB\n  }\n}\n";
  ASSERT_EQ(symlink("one.cocoon", base_.c_str()), 0);
  enforcer::ArtifactCache cache(enforcer::ArtifactCache::DefaultDir());
  const std::string key = enforcer::ArtifactCache::KeyFor(mine_, "mine");
  ASSERT_FALSE(key.empty());
  auto compiled = CompilePolicyOnCacheMiss(mine_, "mine");
  ASSERT_TRUE(compiled.ok()) << compiled.status().message();
  ASSERT_NE(compiled->plan_json.find("\"one\""), std::string::npos) << compiled->plan_json;
  ASSERT_TRUE(cache.Store(key, *compiled).ok());
  ASSERT_TRUE(cache.Lookup(key).has_value()) << "nothing changed yet";

  ASSERT_EQ(unlink(base_.c_str()), 0);
  ASSERT_EQ(symlink("two.cocoon", base_.c_str()), 0);
  EXPECT_FALSE(cache.Lookup(key).has_value())
      << "import \"base\" now reads two.cocoon, but the entry holds the plan compiled from one.cocoon";
}

}  // namespace
}  // namespace cocoon::cli
