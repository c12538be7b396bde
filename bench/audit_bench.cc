// Audit log throughput: events/s written (signed every line, sign_every 1000;
// fsync off and per batch), verify lines/s (and per core), bytes per event.
// Targets (issue 5): >= 15,000 ev/s signing every line and >= 300,000 ev/s
// with sign_every 1000 (single writer, fsync off); verify >= 7,000 lines/s
// per core signed every line and >= 300,000 lines/s with sign_every 1000.
#include <benchmark/benchmark.h>
#include <sys/stat.h>
#include <unistd.h>

#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

// Only for BM_Ed25519's floor rows and BM_Verify's OpenSSL comparison:
// OpenSSL called directly, with no Cocoon code around it, so the library's
// own path (OpenSSL signs, libsodium verifies) can be compared with it.
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "audit/audit_log.h"
#include "audit/events.h"
#include "audit/keys.h"
#include "audit/record.h"
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

// bench/run --smoke sets COCOON_BENCH_SMOKE=1: a row's own MinTime would
// override --benchmark_min_time, so the smoke run shortens them here.
double MinTime(double full) {
  const char* smoke = std::getenv("COCOON_BENCH_SMOKE");
  return smoke != nullptr && std::string_view(smoke) == "1" ? 0.01 : full;
}

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct MdCtxFree {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};
using MdCtxPtr = std::unique_ptr<EVP_MD_CTX, MdCtxFree>;

MdCtxPtr InitCtx(EVP_PKEY* pkey, bool verify) {
  MdCtxPtr ctx(EVP_MD_CTX_new());
  int ok = verify ? EVP_DigestVerifyInit(ctx.get(), nullptr, nullptr, nullptr, pkey)
                  : EVP_DigestSignInit(ctx.get(), nullptr, nullptr, nullptr, pkey);
  return ok == 1 ? std::move(ctx) : nullptr;
}

// The bench key as an OpenSSL EVP_PKEY (private for signing, public for verifying).
EVP_PKEY* ReadBenchPkey(bool verify) {
  FILE* file = std::fopen(verify ? (Dir().key + ".pub").c_str() : Dir().key.c_str(), "re");
  EVP_PKEY* pkey = verify ? PEM_read_PUBKEY(file, nullptr, nullptr, nullptr)
                          : PEM_read_PrivateKey(file, nullptr, nullptr, nullptr);
  std::fclose(file);
  return pkey;
}

enum class VerifyPath { kLibrary, kOpenSsl };

// CPU microseconds of one Ed25519 verify, median of 5 rounds: kLibrary is
// PublicKey::Verify (libsodium, what the verifier's workers call); kOpenSsl is
// EVP_DigestVerify on one pre-initialised context (the path before libsodium).
double Ed25519VerifyCpuUs(int per_round, VerifyPath path) {
  auto key = SigningKey::LoadPem(Dir().key);
  Digest digest{};
  digest[0] = 1;
  auto signature = key->Sign(digest);
  std::string message = std::string("cocoon-audit-sig-v1\n") + std::string(digest.begin(), digest.end());
  EVP_PKEY* pkey = ReadBenchPkey(true);
  MdCtxPtr ctx = InitCtx(pkey, true);
  std::vector<double> rounds;
  for (int r = 0; r < 5; ++r) {
    double start = ThreadCpuSeconds();
    for (int i = 0; i < per_round / 5; ++i) {
      bool ok = path == VerifyPath::kLibrary
                    ? key->public_key().Verify(digest, *signature)
                    : EVP_DigestVerify(ctx.get(), signature->data(), 64,
                                       reinterpret_cast<const uint8_t*>(message.data()), message.size()) == 1;
      benchmark::DoNotOptimize(ok);
    }
    rounds.push_back((ThreadCpuSeconds() - start) * 1e6 / (per_round / 5));
  }
  EVP_PKEY_free(pkey);
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
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
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(MinTime(2.0));

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
  uint64_t signatures = 0;
  uint64_t file_lines = 1;
  double cpu_start = ProcessCpuSeconds();
  for (auto _ : state) {
    auto report = VerifyFiles({path}, options);
    if (!report.ok() || report->verdict != VerifyVerdict::kSealed) {
      state.SkipWithError("verification failed");
      break;
    }
    verified += report->lines;
    signatures += report->signatures;
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
  // The same minute's Ed25519 verify through the library's path (libsodium),
  // so the per-line work outside the signature check can be read off
  // whatever the load: cpu per line - signatures per line * verify. OpenSSL's
  // verify in the same minute, for comparison.
  double verify_us = Ed25519VerifyCpuUs(200, VerifyPath::kLibrary);
  double signatures_per_line = static_cast<double>(signatures) / static_cast<double>(std::max<uint64_t>(1, verified));
  state.counters["ed25519_verify_us"] = verify_us;
  state.counters["openssl_verify_us"] = Ed25519VerifyCpuUs(200, VerifyPath::kOpenSsl);
  state.counters["non_sig_us_per_line"] =
      cpu * 1e6 / static_cast<double>(std::max<uint64_t>(1, verified)) - signatures_per_line * verify_us;
}
BENCHMARK(BM_Verify)
    ->ArgNames({"sign_every", "lines", "threads"})
    ->Args({1, 20000, 1})->Args({1, 20000, 0})->Args({1000, 300000, 1})->Args({1000, 300000, 0})
    ->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(MinTime(2.0));

// Where a verified line's time goes, per line of a sign_every 1000 log (the
// first 4,096 lines, in turn): range(0) 0 = the canonical-form scan alone,
// 1 = scan + integrity members + line hash (what each worker does per line).
void BM_VerifyLine(benchmark::State& state) {
  const bool with_hash = state.range(0) != 0;
  std::string path = Dir().dir + "/line-parts.log";
  if (FileSize(path) == 0) {
    AuditLogOptions options;
    options.path = path;
    options.key_path = Dir().key;
    options.sign_every = 1000;
    auto log = AuditLog::Open(options);
    std::vector<Event> batch;
    for (int i = 0; i < 4096; ++i) batch.push_back(Denial(static_cast<uint64_t>(i)));
    (void)(*log)->AppendBatch(std::move(batch));
    (void)(*log)->Close();
  }
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ScannedLine scanned;
  Digest computed{};
  size_t i = 0;
  uint64_t bytes = 0;
  for (auto _ : state) {
    const std::string& line = lines[i++ % lines.size()];
    bool ok = ScanCanonicalLine(line, scanned).ok();
    if (with_hash) ok = ok && ParseIntegrity(line, scanned, &computed).ok();
    if (!ok) state.SkipWithError("line rejected");
    benchmark::DoNotOptimize(computed);
    bytes += line.size();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}
BENCHMARK(BM_VerifyLine)->ArgNames({"hash"})->Arg(0)->Arg(1)->MinTime(MinTime(0.5));

// The raw Ed25519 cost in this run, so that the per-line overhead of the
// writer and verifier (their CPU per line minus this) can be read off even
// when the shared machine's load inflates every absolute figure.
// range(1), the path and how the OpenSSL context is set up:
//   0 = the library's own path (SigningKey::Sign through OpenSSL,
//       PublicKey::Verify through libsodium),
//   1 = OpenSSL alone, one context initialised once and reused (the floor),
//   2 = a fresh EVP_MD_CTX + EVP_Digest{Sign,Verify}Init per call,
//   3 = a copy (EVP_MD_CTX_copy_ex) of a pre-initialised context per call,
//   4 = as 1, over 1,024 different messages and signatures in turn (rows
//       0-3 repeat one message: Ed25519 verify is variable-time, so a
//       repeated signature lets the branch predictor learn its pattern),
//   5 = as 0 (the library's path), over the same 1,024 messages.
// Rows 1-4 are OpenSSL for both operations (the verifier's path before
// libsodium), for comparison with row 0 / 5.

bool OpenSslOp(EVP_MD_CTX* ctx, bool verify, const uint8_t* message, uint8_t* signature) {
  size_t len = 64;
  return verify ? EVP_DigestVerify(ctx, signature, 64, message, 52) == 1
                : EVP_DigestSign(ctx, signature, &len, message, 52) == 1;
}

void BM_Ed25519(benchmark::State& state) {
  const bool verify = state.range(0) != 0;
  const int64_t mode = state.range(1);
  auto key = SigningKey::LoadPem(Dir().key);
  Digest digest{};
  auto signature = key->Sign(digest);
  // The same 52-byte message the library signs ("cocoon-audit-sig-v1\n" || hash).
  std::string message = std::string("cocoon-audit-sig-v1\n") + std::string(32, '\0');
  Signature sig = *signature;
  EVP_PKEY* pkey = ReadBenchPkey(verify);
  MdCtxPtr ready = InitCtx(pkey, verify);
  const auto* msg = reinterpret_cast<const uint8_t*>(message.data());
  std::vector<Digest> digests;
  std::vector<std::string> messages;
  std::vector<Signature> signatures;
  if (mode == 4 || mode == 5) {
    for (int i = 0; i < 1024; ++i) {
      Digest d{};
      d[0] = static_cast<uint8_t>(i);
      d[1] = static_cast<uint8_t>(i >> 8);
      digests.push_back(d);
      messages.push_back(std::string("cocoon-audit-sig-v1\n") + std::string(d.begin(), d.end()));
      signatures.push_back(*key->Sign(d));
    }
  }
  uint64_t done = 0;
  bool all_ok = true;
  double cpu_start = ProcessCpuSeconds();
  for (auto _ : state) {
    bool ok = true;
    if (mode == 0) {
      ok = verify ? key->public_key().Verify(digest, sig) : key->Sign(digest).ok();
    } else if (mode == 5) {
      size_t k = done % digests.size();
      ok = verify ? key->public_key().Verify(digests[k], signatures[k]) : key->Sign(digests[k]).ok();
    } else if (mode == 1) {
      ok = OpenSslOp(ready.get(), verify, msg, sig.data());
    } else if (mode == 2) {
      MdCtxPtr fresh = InitCtx(pkey, verify);
      ok = fresh != nullptr && OpenSslOp(fresh.get(), verify, msg, sig.data());
    } else if (mode == 4) {
      size_t k = done % messages.size();
      ok = OpenSslOp(ready.get(), verify, reinterpret_cast<const uint8_t*>(messages[k].data()),
                     verify ? signatures[k].data() : sig.data());
    } else {
      MdCtxPtr copy(EVP_MD_CTX_new());  // EVP_MD_CTX_dup is OpenSSL 3.1+
      ok = EVP_MD_CTX_copy_ex(copy.get(), ready.get()) == 1 && OpenSslOp(copy.get(), verify, msg, sig.data());
    }
    all_ok &= ok;
    ++done;
  }
  double cpu = ProcessCpuSeconds() - cpu_start;
  EVP_PKEY_free(pkey);
  if (!all_ok) state.SkipWithError("an Ed25519 operation failed");
  state.counters["cpu_us_per_op"] = benchmark::Counter(cpu * 1e6 / static_cast<double>(done));
  state.counters["ops_per_cpu_s"] = benchmark::Counter(static_cast<double>(done) / cpu);
}
BENCHMARK(BM_Ed25519)
    ->ArgNames({"verify", "ctx"})
    ->Args({0, 0})->Args({0, 1})->Args({0, 2})->Args({0, 3})->Args({0, 4})->Args({0, 5})
    ->Args({1, 0})->Args({1, 1})->Args({1, 2})->Args({1, 3})->Args({1, 4})->Args({1, 5})
    ->UseRealTime()->MinTime(MinTime(1.0));

}  // namespace

BENCHMARK_MAIN();
