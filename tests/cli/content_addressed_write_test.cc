// WriteContentAddressed (cli/agent_run_util.h) from many threads at once:
// `cocoon mcp` runs tool calls on several threads, and identical calls write
// the same content-addressed file (the stdin, the script, the generated
// policy). Every write must succeed and leave no temporary behind. With a
// temporary named after the pid alone, two threads shared it and one
// rename failed; the MCP client test (tests/mcp-client/raw.test.mjs) saw it
// in about a third of its runs, this test in every one (checked against
// that naming).
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cli/agent_run_util.h"

namespace cocoon::cli {
namespace {

class ContentAddressedWriteTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/cocoon-cas-test-XXXXXX";
    ASSERT_NE(mkdtemp(templ), nullptr);
    cache_ = templ;
    ASSERT_EQ(setenv("COCOON_CACHE_DIR", cache_.c_str(), 1), 0);
  }
  void TearDown() override {
    unsetenv("COCOON_CACHE_DIR");
    std::string quick = cache_ + "/quick";
    if (DIR* dir = opendir(quick.c_str())) {
      while (dirent* entry = readdir(dir)) {
        std::string name = entry->d_name;
        if (name != "." && name != "..") unlink((quick + "/" + name).c_str());
      }
      closedir(dir);
    }
    rmdir(quick.c_str());
    rmdir(cache_.c_str());
  }

  std::vector<std::string> QuickFiles() {
    std::vector<std::string> names;
    std::string quick = cache_ + "/quick";
    DIR* dir = opendir(quick.c_str());
    if (dir == nullptr) return names;
    while (dirent* entry = readdir(dir)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(dir);
    return names;
  }

  std::string cache_;
};

TEST_F(ContentAddressedWriteTest, IdenticalWritesFromManyThreadsAllSucceed) {
  const std::string bytes = "print('the same snippet from every thread')\n";
  auto first = WriteContentAddressed(bytes, ".stdin");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const std::string path = *first;

  constexpr int kThreads = 8;
  constexpr int kRounds = 300;
  std::atomic<int> failures{0};
  std::atomic<bool> go{false};
  std::string first_error;
  std::atomic<bool> recorded{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      while (!go.load()) std::this_thread::yield();
      for (int round = 0; round < kRounds; ++round) {
        // Removed, so that the next call takes the write path, not the
        // "already there" one.
        unlink(path.c_str());
        auto written = WriteContentAddressed(bytes, ".stdin");
        if (!written.ok()) {
          failures.fetch_add(1);
          if (!recorded.exchange(true)) first_error = written.status().ToString();
        } else if (*written != path) {
          failures.fetch_add(1);
        }
      }
    });
  }
  go.store(true);
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0) << "first error: " << first_error;

  // The file is whole, and no temporary is left in the directory.
  auto again = WriteContentAddressed(bytes, ".stdin");
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  for (const std::string& name : QuickFiles()) {
    EXPECT_EQ(name.find(".tmp."), std::string::npos) << "temporary left behind: " << name;
  }
}

}  // namespace
}  // namespace cocoon::cli
