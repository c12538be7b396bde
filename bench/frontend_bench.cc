// Front-end cost: checking the shipped build policy (with its import of
// strict), a generated 1 MiB policy of many rules, and the scaling over
// 1 KiB, 100 KiB and 1 MiB inputs (the cost should grow linearly).
#include <benchmark/benchmark.h>

#include <string>

#include "compiler/frontend/frontend.h"

namespace {

// A policy of roughly `bytes` bytes: syscall rules with conditions, env vars
// and read-only mounts, spread over three sections.
std::string GeneratePolicy(size_t bytes) {
  static const char* const kCalls[] = {"read", "write", "openat", "close", "mmap", "ioctl", "socket", "fcntl"};
  std::string syscalls = "  syscalls {\n    default errno ENOSYS\n    allow @basic-io\n";
  std::string env = "  environment {\n";
  std::string fs = "  filesystem {\n";
  for (size_t i = 0; syscalls.size() + env.size() + fs.size() < bytes; ++i) {
    switch (i % 4) {
      case 0:
      case 1:
        syscalls += "    deny " + std::string(kCalls[i % 8]) + " if arg1 == " + std::to_string(i) + " errno EPERM\n";
        break;
      case 2:
        env += "    set VAR_" + std::to_string(i) + " \"value " + std::to_string(i) + "\"\n";
        break;
      default:
        fs += "    readonly optional /opt/tree/dir_" + std::to_string(i) + "\n";
    }
  }
  return "profile gen {\n" + syscalls + "  }\n" + env + "  }\n" + fs + "  }\n}\n";
}

void BM_CheckBuildPolicy(benchmark::State& state) {
  const std::string path = std::string(COCOON_SOURCE_DIR) + "/policies/build.cocoon";
  for (auto _ : state) {
    cocoon::Diagnostics diagnostics;
    auto policy = cocoon::frontend::CompilePolicyFile(path, "", {}, diagnostics);
    if (!policy) state.SkipWithError(diagnostics.Render().c_str());
    benchmark::DoNotOptimize(policy);
  }
}
BENCHMARK(BM_CheckBuildPolicy)->Unit(benchmark::kMicrosecond);

void BM_CheckGenerated(benchmark::State& state) {
  const std::string text = GeneratePolicy(static_cast<size_t>(state.range(0)));
  for (auto _ : state) {
    cocoon::Diagnostics diagnostics;
    auto policy = cocoon::frontend::CompilePolicyText("gen.cocoon", text, "", {}, diagnostics);
    if (!policy) state.SkipWithError(diagnostics.Render().substr(0, 2000).c_str());
    benchmark::DoNotOptimize(policy);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_CheckGenerated)->Arg(1 << 10)->Arg(100 << 10)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

void BM_Format1MiB(benchmark::State& state) {
  const std::string text = GeneratePolicy(1 << 20);
  for (auto _ : state) {
    cocoon::Diagnostics diagnostics;
    auto out = cocoon::frontend::FormatPolicy("gen.cocoon", text, diagnostics);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_Format1MiB)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
