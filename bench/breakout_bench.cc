// Breakout verification speed: ScanForBreakouts vs `find` doing the same
// checks, on trees of 10k, 100k and 1M entries (issue 7, item 5; --smoke and
// COCOON_BENCH_SMOKE=1 run 10k only, COCOON_BENCH_BREAKOUT_MAX caps the size).
//
//   find T -type l -o -type b -o -type c -o -type p -o -type s -o -links +1 -o -perm /6000
//
// Trees live under $COCOON_BENCH_TREE_DIR, else /dev/shm (tmpfs), else /tmp.
// Target (issue 4): >= 1.5x find on 100k entries. Each tree is built once,
// scanned and found once to warm the page cache, timed by every benchmark,
// and deleted at the end. All times are wall clock (find runs in a child, so
// CPU time would leave it out); bench/report.py turns BM_FindSameChecks /
// BM_BreakoutScan into the speedup. Each case is 3 repetitions, median kept.
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
#include <utility>
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

// Empty files: the scan and find read metadata only, and on tmpfs every
// 1-byte file would pin a page (3.7 GiB for the 1M tree).
void Touch(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd >= 0) close(fd);
}

// Where the trees go: $COCOON_BENCH_TREE_DIR, else /dev/shm (a tmpfs, like
// the staging tmpfs the enforcer scans; building 1M entries on this VM's
// ext4 /tmp took minutes), else /tmp.
std::string TreeParent() {
  if (const char* dir = std::getenv("COCOON_BENCH_TREE_DIR")) return dir;
  return access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
}

// Directories of 100 entries: 92 files, 5 internal symlinks, 2 internal
// hardlinks, plus the directory itself; two real escapes at the root.
Tree BuildTree(uint64_t entries) {
  std::string pattern = TreeParent() + "/cocoon-breakout-bench-XXXXXX";
  Tree tree;
  tree.root = mkdtemp(pattern.data());
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
  const size_t slash = tree.root.rfind('/');
  int parent = open(tree.root.substr(0, slash).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  (void)cocoon::enforcer::tree::RemoveTree(parent, tree.root.substr(slash + 1));
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

void BM_ScanOneThread(benchmark::State& state) {
  const Tree& tree = Trees()[state.range(0)];
  for (auto _ : state) {
    if (!RunScan(tree.root, 1)) state.SkipWithError("scan failed or missed the planted escapes");
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

// Builds the tree and reads it once with both tools, so that every timed run
// sees the same warm page cache. Returns the build time in seconds.
double BuildWarmTree(uint64_t entries) {
  const auto start = std::chrono::steady_clock::now();
  Trees().push_back(BuildTree(entries));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RunScan(Trees().back().root);
  RunFind(Trees().back().root);
  return seconds;
}

void Register(size_t index, double build_seconds) {
  const Tree& tree = Trees()[index];
  const std::string suffix = "/" + std::to_string(tree.entries);
  const bool huge = tree.entries >= 1'000'000;
  using Fn = void (*)(benchmark::State&);
  const std::pair<const char*, Fn> kinds[] = {
      {"BM_BreakoutScan", BM_Scan}, {"BM_BreakoutScanOneThread", BM_ScanOneThread}, {"BM_FindSameChecks", BM_Find}};
  for (const auto& [name, fn] : kinds) {
    auto* b = benchmark::RegisterBenchmark((std::string(name) + suffix).c_str(), fn)
                  ->Arg(static_cast<int64_t>(index))
                  ->Unit(benchmark::kMillisecond)
                  ->UseRealTime()
                  ->Repetitions(3)
                  ->ReportAggregatesOnly(true);
    if (huge) b->Iterations(1);  // ~1 s per scan: three single runs, median kept
  }
  std::fprintf(stderr, "breakout_bench: built %llu entries in %.1f s\n",
               static_cast<unsigned long long>(tree.entries), build_seconds);
}

}  // namespace

bool EnvIs(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::string(v) == value;
}

int main(int argc, char** argv) {
  const bool smoke = EnvIs("COCOON_BENCH_SMOKE", "1");
  const char* max_env = std::getenv("COCOON_BENCH_BREAKOUT_MAX");
  const uint64_t max_entries = smoke ? 10'000 : max_env ? std::strtoull(max_env, nullptr, 10) : 1'000'000;
  for (uint64_t size : {10'000ULL, 100'000ULL, 1'000'000ULL}) {
    if (size > max_entries) break;
    const double build_seconds = BuildWarmTree(size);  // appends to Trees()
    Register(Trees().size() - 1, build_seconds);
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  for (const Tree& tree : Trees()) RemoveTree(tree);
  return 0;
}
