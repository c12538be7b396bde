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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cli/agent_run_util.h"
#include "cli/staged_code_file.h"

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

// Staged code (cli/staged_code_file.h) stays while any run holds it and goes
// with the last one: left in the cache, each distinct snippet of an MCP
// client's stayed for the ten minutes pruning spares young files.
TEST_F(ContentAddressedWriteTest, StagedCodeIsRemovedWhenItsLastHolderLetsGo) {
  const std::string code(100 * 1024, '#');
  auto first = StagedCodeFile::Stage(code, ".py");
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  const std::string path = (*first)->path();
  auto second = StagedCodeFile::Stage(code, ".py");
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ((*second)->path(), path);
  first->reset();
  EXPECT_EQ(access(path.c_str(), R_OK), 0) << "removed while a second run still held it";
  second->reset();
  EXPECT_NE(access(path.c_str(), F_OK), 0) << "left behind by its last holder";
  EXPECT_TRUE(QuickFiles().empty());
}

// A run killed while it held its staged code (SIGKILL, the OOM killer) ran
// no destructor: the agent's code stayed in the cache. A later sweep
// removes what nobody holds, and nothing that is held or is not staged code.
TEST_F(ContentAddressedWriteTest, StagedCodeOfAKilledRunIsSweptAndHeldCodeIsNot) {
  const std::string killed_code = "class M { /* the killed run's */ }\n";
  const std::string held_code = "class M { /* a live run's */ }\n";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto staged = StagedCodeFile::Stage(killed_code, ".java");
    char byte = staged.ok() ? 'y' : 'n';
    (void)!write(ready[1], &byte, 1);
    pause();
    _exit(0);
  }
  close(ready[1]);
  char byte = 0;
  ASSERT_EQ(read(ready[0], &byte, 1), 1);
  close(ready[0]);
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_EQ(byte, 'y') << "the child could not stage its code";
  // Counted before this process stages anything: its first Stage may be
  // the sampled one that sweeps (one call in 16, offset by the pid), and a
  // CI run saw the killed run's file already gone when counted after it.
  ASSERT_EQ(QuickFiles().size(), 1u) << "the killed run's file";
  auto held = StagedCodeFile::Stage(held_code, ".java");
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  auto policy = WriteContentAddressed("policy {}\n", ".cocoon");
  ASSERT_TRUE(policy.ok()) << policy.status().ToString();

  const std::string quick = cache_ + "/quick";
  // Stage sweeps on one call in 16 (enforcer/sweep_sampler.h): sixteen
  // runs of other code, each ending, sweep at least once.
  for (int run = 0; run < 16; ++run) {
    auto other = StagedCodeFile::Stage("class M { /* run " + std::to_string(run) + " */ }\n", ".java");
    ASSERT_TRUE(other.ok()) << other.status().ToString();
  }
  std::vector<std::string> left = QuickFiles();
  std::sort(left.begin(), left.end());
  std::vector<std::string> expected = {(*held)->path().substr(quick.size() + 1), policy->substr(quick.size() + 1)};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(left, expected) << "the killed run's code stays, or a held file or the policy went";
  held->reset();
  EXPECT_EQ(QuickFiles().size(), 1u);
}

// Runs of the same code from many threads, each starting and ending at its
// own time: while a run holds the file it is there, whole, whatever the
// others do; at the end nothing is left.
TEST_F(ContentAddressedWriteTest, StagedCodeIsNeverRemovedUnderAnotherHolder) {
  const std::string code = "print('the same large snippet')\n" + std::string(70 * 1024, '#');
  constexpr int kThreads = 8;
  constexpr int kRounds = 200;
  std::atomic<int> failures{0};
  std::atomic<bool> go{false};
  std::mutex mutex;
  std::string first_error;
  auto fail = [&](const std::string& why) {
    failures.fetch_add(1);
    std::lock_guard lock(mutex);
    if (first_error.empty()) first_error = why;
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      while (!go.load()) std::this_thread::yield();
      for (int round = 0; round < kRounds; ++round) {
        auto held = StagedCodeFile::Stage(code, ".py");
        if (!held.ok()) {
          fail(held.status().ToString());
          continue;
        }
        struct stat st {};
        if (stat((*held)->path().c_str(), &st) != 0) {
          fail(std::string("gone while held: ") + strerror(errno));
        } else if (static_cast<size_t>(st.st_size) != code.size()) {
          fail("held with " + std::to_string(st.st_size) + " bytes");
        }
      }
    });
  }
  go.store(true);
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0) << "first: " << first_error;
  EXPECT_TRUE(QuickFiles().empty());
}

}  // namespace
}  // namespace cocoon::cli
