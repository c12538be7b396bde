// Audit log throughput: events/s written (signed every line, sign_every 1000;
// fsync off and per batch), verify lines/s (and per core), bytes per event.
// Targets (issue 5): >= 15,000 ev/s signing every line and >= 300,000 ev/s
// with sign_every 1000 (single writer, fsync off); verify >= 7,000 lines/s
// per core signed every line and >= 300,000 lines/s with sign_every 1000.
#include <benchmark/benchmark.h>
#include <sys/stat.h>
#include <unistd.h>

#include <time.h>

#include <filesystem>
#include <thread>

#include "audit/audit_log.h"
#include "audit/events.h"
#include "audit/keys.h"
#include "audit/verifier.h"

namespace {

using namespace cocoon::audit;

struct BenchDir {
  std::string dir;
  std::string key;
  PublicKey pub;
  BenchDir() {
    char pattern[] = "/tmp/cocoon-audit-bench-XXXXXX";
    dir = mkdtemp(pattern);
    key = dir + "/key";
    auto generated = SigningKey::Generate();
    (void)WriteKeyPair(*generated, key);
    pub = generated->public_key();
  }
  ~BenchDir() { std::filesystem::remove_all(dir); }
};

BenchDir& Dir() {
  static BenchDir dir;
  return dir;
}

Event Denial(uint64_t i) {
  return SyscallDenied({"mount", 165, {i, 0x7ffd1234, 0, 0, 0, 0}, "errno(EPERM)", 1, "ci-python", 4242,
                        "run-7f3a"});
}

// CPU time of the whole process (every thread): on a shared, loaded machine
// wall-clock rates understate capacity, so the counters report both.
double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

uint64_t FileSize(const std::string& path) {
  struct stat st {};
  stat(path.c_str(), &st);
  return static_cast<uint64_t>(st.st_size);
}

// range(0): sign_every; range(1): 1 = fsync per batch; range(2): 1 = build events inside the timing.
void BM_Append(benchmark::State& state) {
  const uint32_t sign_every = static_cast<uint32_t>(state.range(0));
  const bool fsync = state.range(1) != 0;
  const bool build_inside = state.range(2) != 0;
  constexpr size_t kBatch = 512;
  std::string path = Dir().dir + "/append-" + std::to_string(sign_every) + "-" + std::to_string(fsync) + ".log";
  std::filesystem::remove(path);
  AuditLogOptions options;
  options.path = path;
  options.key_path = Dir().key;
  options.sign_every = sign_every;
  options.fsync = fsync ? FsyncPolicy::kPerBatch : FsyncPolicy::kNone;
  auto log = AuditLog::Open(options);
  if (!log.ok()) {
    state.SkipWithError(log.status().ToString().c_str());
    return;
  }
  std::vector<Event> prototype;
  for (size_t i = 0; i < kBatch; ++i) prototype.push_back(Denial(i));
  uint64_t events = 0;
  uint64_t start_size = FileSize(path);
  double cpu_start = ProcessCpuSeconds();
  double copy_cpu = 0;  // untimed copies of the prototype batch, excluded below
  for (auto _ : state) {
    std::vector<Event> batch;
    if (build_inside) {
      batch.reserve(kBatch);
      for (size_t i = 0; i < kBatch; ++i) batch.push_back(Denial(events + i));
    } else {
      state.PauseTiming();
      double copy_start = ProcessCpuSeconds();
      batch = prototype;
      copy_cpu += ProcessCpuSeconds() - copy_start;
      state.ResumeTiming();
    }
    auto refs = (*log)->AppendBatch(std::move(batch));
    if (!refs.ok()) state.SkipWithError(refs.status().ToString().c_str());
    events += kBatch;
  }
  double cpu = ProcessCpuSeconds() - cpu_start - copy_cpu;
  (void)(*log)->Close();
  state.SetItemsProcessed(static_cast<int64_t>(events));
  // CPU of every thread per event; with build == 1 it includes building the event.
  state.counters["events_per_cpu_s"] = benchmark::Counter(static_cast<double>(events) / cpu);
  state.counters["cpu_us_per_event"] = benchmark::Counter(cpu * 1e6 / static_cast<double>(events));
  state.counters["bytes_per_event"] =
      benchmark::Counter(static_cast<double>(FileSize(path) - start_size) / static_cast<double>(events));
  std::filesystem::remove(path);
}
BENCHMARK(BM_Append)
    ->ArgNames({"sign_every", "fsync", "build"})
    ->Args({1, 0, 0})->Args({1, 1, 0})->Args({1, 0, 1})
    ->Args({1000, 0, 0})->Args({1000, 1, 0})->Args({1000, 0, 1})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// range(0): sign_every; range(1): lines; range(2): verifier threads (0 = every core).
void BM_Verify(benchmark::State& state) {
  const uint32_t sign_every = static_cast<uint32_t>(state.range(0));
  const int64_t lines = state.range(1);
  const unsigned threads = static_cast<unsigned>(state.range(2));
  std::string path = Dir().dir + "/verify-" + std::to_string(sign_every) + ".log";
  if (FileSize(path) == 0) {
    AuditLogOptions options;
    options.path = path;
    options.key_path = Dir().key;
    options.sign_every = sign_every;
    options.fsync = FsyncPolicy::kNone;
    auto log = AuditLog::Open(options);
    for (int64_t done = 0; done < lines; done += 1000) {
      std::vector<Event> batch;
      for (int i = 0; i < 1000; ++i) batch.push_back(Denial(static_cast<uint64_t>(done + i)));
      (void)(*log)->AppendBatch(std::move(batch));
    }
    (void)(*log)->Close();
  }
  VerifyOptions options;
  options.trusted.push_back(Dir().pub);
  options.threads = threads;
  uint64_t verified = 0;
  uint64_t file_lines = 1;
  double cpu_start = ProcessCpuSeconds();
  for (auto _ : state) {
    auto report = VerifyFiles({path}, options);
    if (!report.ok() || report->verdict != VerifyVerdict::kSealed) {
      state.SkipWithError("verification failed");
      break;
    }
    verified += report->lines;
    file_lines = report->lines;
  }
  double cpu = ProcessCpuSeconds() - cpu_start;
  state.counters["lines_per_cpu_s"] = benchmark::Counter(static_cast<double>(verified) / cpu);
  unsigned cores = threads != 0 ? threads : std::max(1u, std::thread::hardware_concurrency());
  state.SetItemsProcessed(static_cast<int64_t>(verified));
  state.counters["cores"] = cores;
  // Wall-clock rate divided by the cores used, and (robust on a shared
  // machine) lines per CPU-second, which is the per-core capacity.
  state.counters["lines_per_s_per_core"] =
      benchmark::Counter(static_cast<double>(verified) / cores, benchmark::Counter::kIsRate);
  state.counters["bytes_per_line"] = static_cast<double>(FileSize(path)) / static_cast<double>(file_lines);
}
BENCHMARK(BM_Verify)
    ->ArgNames({"sign_every", "lines", "threads"})
    ->Args({1, 20000, 1})->Args({1, 20000, 0})->Args({1000, 300000, 1})->Args({1000, 300000, 0})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(2.0);

// The raw OpenSSL Ed25519 cost in this run, so that the per-line overhead of
// the writer and verifier (their CPU per line minus this) can be read off
// even when the shared machine's load inflates every absolute figure.
void BM_Ed25519(benchmark::State& state) {
  const bool verify = state.range(0) != 0;
  auto key = SigningKey::LoadPem(Dir().key);
  Digest digest{};
  auto signature = key->Sign(digest);
  uint64_t done = 0;
  double cpu_start = ProcessCpuSeconds();
  for (auto _ : state) {
    if (verify) benchmark::DoNotOptimize(key->public_key().Verify(digest, *signature));
    else benchmark::DoNotOptimize(key->Sign(digest));
    ++done;
  }
  double cpu = ProcessCpuSeconds() - cpu_start;
  state.counters["cpu_us_per_op"] = benchmark::Counter(cpu * 1e6 / static_cast<double>(done));
  state.counters["ops_per_cpu_s"] = benchmark::Counter(static_cast<double>(done) / cpu);
}
BENCHMARK(BM_Ed25519)->ArgNames({"verify"})->Arg(0)->Arg(1)->UseRealTime()->MinTime(1.0);

}  // namespace

BENCHMARK_MAIN();
