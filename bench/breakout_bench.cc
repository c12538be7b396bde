// Breakout verification speed: ScanForBreakouts vs `find` doing the same
// checks, on trees of 10k and 100k entries (1M with COCOON_BENCH_BIG=1).
//
//   find T -type l -o -type b -o -type c -o -type p -o -type s -o -links +1 -o -perm /6000
//
// Target (issue 4): >= 1.5x find on 100k entries. Both run on a warm page
// cache (the tree is built, then each is run once before timing). Besides the
// Google Benchmark JSON, a side-by-side summary (median of several runs,
// entries/s, speedup) is printed to stderr.
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "enforcer/workdir/breakout_scan.h"
#include "enforcer/workdir/tree_ops.h"

extern char** environ;

namespace {

using cocoon::enforcer::ScanForBreakoutsAt;

struct Tree {
  std::string root;
  uint64_t entries = 0;
};

void Touch(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd >= 0) {
    (void)!write(fd, "x", 1);
    close(fd);
  }
}

// Directories of 100 entries: 92 files, 5 internal symlinks, 2 internal
// hardlinks, plus the directory itself; two real escapes at the root.
Tree BuildTree(uint64_t entries) {
  char pattern[] = "/tmp/cocoon-breakout-bench-XXXXXX";
  Tree tree;
  tree.root = mkdtemp(pattern);
  uint64_t dirs = std::max<uint64_t>(1, entries / 100);
  for (uint64_t d = 0; d < dirs; ++d) {
    std::string dir = tree.root + "/d" + std::to_string(d);
    mkdir(dir.c_str(), 0755);
    for (int f = 0; f < 92; ++f) Touch(dir + "/f" + std::to_string(f));
    for (int l = 0; l < 5; ++l) symlink(("f" + std::to_string(l)).c_str(), (dir + "/l" + std::to_string(l)).c_str());
    for (int h = 0; h < 2; ++h) link((dir + "/f90").c_str(), (dir + "/h" + std::to_string(h)).c_str());
    tree.entries += 100;
  }
  symlink("/etc/passwd", (tree.root + "/escape").c_str());
  mkfifo((tree.root + "/fifo").c_str(), 0600);
  tree.entries += 2;
  return tree;
}

void RemoveTree(const Tree& tree) {
  int parent = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  (void)cocoon::enforcer::tree::RemoveTree(parent, tree.root.substr(5));
  close(parent);
}

void RunFind(const std::string& root) {
  const char* argv[] = {"find", root.c_str(), "-type", "l", "-o", "-type", "b", "-o", "-type", "c", "-o",
                        "-type", "p", "-o", "-type", "s", "-o", "-links", "+1", "-o", "-perm", "/6000", nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  if (posix_spawnp(&pid, "find", &actions, nullptr, const_cast<char**>(argv), environ) == 0) {
    int status = 0;
    waitpid(pid, &status, 0);
  }
  posix_spawn_file_actions_destroy(&actions);
}

bool RunScan(const std::string& root, uint32_t threads = 0) {
  cocoon::enforcer::ScanOptions options;
  options.threads = threads;
  auto report = ScanForBreakoutsAt(root, options);
  return report.ok() && report->findings.size() == 2;
}

std::vector<Tree>& Trees() {
  static std::vector<Tree> trees;
  return trees;
}

void BM_Scan(benchmark::State& state) {
  const Tree& tree = Trees()[state.range(0)];
  for (auto _ : state) {
    if (!RunScan(tree.root)) state.SkipWithError("scan failed or missed the planted escapes");
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(tree.entries));
  state.counters["entries"] = static_cast<double>(tree.entries);
}

void BM_Find(benchmark::State& state) {
  const Tree& tree = Trees()[state.range(0)];
  for (auto _ : state) RunFind(tree.root);
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(tree.entries));
  state.counters["entries"] = static_cast<double>(tree.entries);
}

template <typename Fn>
double MedianMs(int runs, Fn fn) {
  std::vector<double> times;
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    fn();
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

void PrintSideBySide() {
  std::fprintf(stderr, "%-10s %12s %14s %12s %12s %14s %8s %8s\n", "entries", "scan ms", "scan entries/s",
               "scan-1t ms", "find ms", "find entries/s", "speedup", "1t-spdup");
  for (const Tree& tree : Trees()) {
    int runs = tree.entries >= 1'000'000 ? 3 : 7;
    RunScan(tree.root);
    RunFind(tree.root);  // warm both
    double scan = MedianMs(runs, [&] { RunScan(tree.root); });
    double find = MedianMs(runs, [&] { RunFind(tree.root); });
    double single = MedianMs(runs, [&] { RunScan(tree.root, 1); });
    std::fprintf(stderr, "%-10llu %12.1f %14.0f %12.1f %12.1f %14.0f %7.2fx %7.2fx\n",
                 static_cast<unsigned long long>(tree.entries), scan, tree.entries / scan * 1000, single, find,
                 tree.entries / find * 1000, find / scan, find / single);
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool smoke = std::getenv("COCOON_BENCH_SMOKE") && std::string(std::getenv("COCOON_BENCH_SMOKE")) == "1";
  bool big = std::getenv("COCOON_BENCH_BIG") && std::string(std::getenv("COCOON_BENCH_BIG")) == "1";
  std::vector<uint64_t> sizes = {10'000};
  if (!smoke) sizes.push_back(100'000);
  if (big && !smoke) sizes.push_back(1'000'000);
  for (uint64_t size : sizes) Trees().push_back(BuildTree(size));
  for (size_t i = 0; i < Trees().size(); ++i) {
    std::string suffix = "/" + std::to_string(Trees()[i].entries);
    benchmark::RegisterBenchmark(("BM_BreakoutScan" + suffix).c_str(), BM_Scan)->Arg(static_cast<int64_t>(i))->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("BM_FindSameChecks" + suffix).c_str(), BM_Find)->Arg(static_cast<int64_t>(i))->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  PrintSideBySide();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (const Tree& tree : Trees()) RemoveTree(tree);
  return 0;
}
