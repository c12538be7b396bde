// Front-end cost: checking the shipped build policy (with its import of
// strict), a generated 1 MiB policy of many rules, and the scaling over
// 1 KiB, 100 KiB and 1 MiB inputs (the cost should grow linearly).
//
// Every parse builds its own ANTLR DFAs (compiler/frontend/parser.cc), so
// each iteration does the cold work a fresh `cocoon check` does. What a
// process still does once (deserializing the grammar's ATN, building the
// syscall and constant tables) is measured by the *FreshProcess rows: each
// iteration re-executes this binary, which checks the file once and reports
// its own in-process CPU time (exec and the dynamic loader are not counted).
#include <benchmark/benchmark.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ctime>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "compiler/backends/seccomp/seccomp_backend.h"
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

// A rule of N ANDed comparisons: the checker stops at the 65th with an error,
// so the cost is the parse's and grows linearly with N (before the cap,
// 80,000 terms took 14 s).
void BM_CheckLongAndChain(benchmark::State& state) {
  std::string text = "profile p {\n  syscalls { deny ioctl if arg0 == 0";
  for (int64_t i = 1; i < state.range(0); ++i) text += " and arg1 == " + std::to_string(i);
  text += " }\n}\n";
  for (auto _ : state) {
    cocoon::Diagnostics diagnostics;
    auto policy = cocoon::frontend::CompilePolicyText("chain.cocoon", text, "", {}, diagnostics);
    if (policy) state.SkipWithError("the chain was not capped");
    benchmark::DoNotOptimize(policy);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(text.size()));
}
BENCHMARK(BM_CheckLongAndChain)->Arg(8000)->Arg(80000)->Unit(benchmark::kMillisecond);

// What `cocoon check` runs since session 5: the front end plus the seccomp
// back end's check of the profile's syscall rules (rule sets seccomp cannot
// express are reported at their statement; cli/frontend_util.h). The
// generated policies fail that check by design (hundreds of exceptions to
// `allow @basic-io` on one argument): the row still times the whole check.
void BM_CheckWithBackEndChecks(benchmark::State& state) {
  const bool build = state.range(0) == 0;
  const std::string path = std::string(COCOON_SOURCE_DIR) + "/policies/build.cocoon";
  const std::string text = build ? std::string() : GeneratePolicy(static_cast<size_t>(state.range(0)));
  cocoon::frontend::FrontendOptions options;
  options.syscall_rule_check = cocoon::backends::SyscallRuleProblems;
  for (auto _ : state) {
    cocoon::Diagnostics diagnostics;
    auto policy = build ? cocoon::frontend::CompilePolicyFile(path, "", options, diagnostics)
                        : cocoon::frontend::CompilePolicyText("gen.cocoon", text, "", options, diagnostics);
    if (build && !policy) state.SkipWithError(diagnostics.Render().c_str());
    benchmark::DoNotOptimize(policy);
  }
}
BENCHMARK(BM_CheckWithBackEndChecks)->ArgName("bytes_0_is_build")->Arg(0)->Arg(1 << 20)->Unit(benchmark::kMillisecond);

// A flat file of `count` independent profiles, as `cocoon check` sees a
// generated one. kSharedSections: a third are children of strict that change
// only mounts, limits and the environment, a third children of strict that
// deny one of 8 syscalls, a third plain profiles with one of 16 small
// syscall sections. kDistinctSections: every profile has a syscall section
// of its own (children of strict with their own ioctl rule, plain profiles
// with their own openat rule).
enum class Sections { kShared, kDistinct };

std::string GenerateProfiles(size_t count, Sections sections) {
  static const char* const kDenied[] = {"ptrace", "personality", "socket", "mknod", "chmod", "fchmod", "kcmp", "flock"};
  std::string text = "import \"strict\"\n";
  for (size_t i = 0; i < count; ++i) {
    const std::string n = std::to_string(i);
    const std::string denied = kDenied[i % 8];
    if (sections == Sections::kDistinct && i % 2 == 0) {
      text += "profile p" + n + " extends strict {\n  syscalls {\n    deny " + denied + " errno EPERM\n"
              "    deny ioctl if arg1 == " + std::to_string(1000 + i) + " errno EPERM\n  }\n"
              "  limits { memory " + std::to_string(64 + i % 64) + "MiB }\n}\n";
    } else if (sections == Sections::kDistinct) {
      text += "profile q" + n + " {\n  syscalls {\n    default errno ENOSYS\n    allow read write exit exit_group\n"
              "    deny openat if arg2 == " + n + " errno EACCES\n  }\n}\n";
    } else if (i % 3 == 0) {
      text += "profile a" + n + " extends strict {\n  filesystem { readonly optional /opt/tool" + std::to_string(i % 50) +
              " }\n  limits { memory " + std::to_string(64 + i % 64) + "MiB }\n"
              "  environment { set VAR_" + n + " \"v\" }\n}\n";
    } else if (i % 3 == 1) {
      text += "profile b" + n + " extends strict {\n  syscalls { deny " + denied + " errno EPERM }\n}\n";
    } else {
      text += "profile c" + n + " {\n  syscalls {\n    default errno ENOSYS\n    allow read write exit exit_group\n"
              "    deny openat if arg2 == " + std::to_string(i % 16) + " errno EACCES\n  }\n}\n";
    }
  }
  return text;
}

// `cocoon check` of such a file: every profile checked, with the Linux filter
// built and verified as check_command.cc wires it (one build per distinct
// syscall section, backends::FilterBuildProblemsMemo, fresh per iteration).
void BM_CheckManyProfiles(benchmark::State& state) {
  const auto count = static_cast<size_t>(state.range(0));
  const Sections sections = state.range(1) == 0 ? Sections::kShared : Sections::kDistinct;
  const std::string path = "/tmp/cocoon-frontend-bench-profiles-" + std::to_string(getpid()) + ".cocoon";
  std::ofstream(path) << GenerateProfiles(count, sections);
  cocoon::frontend::FrontendOptions options;
  options.search_paths = {std::string(COCOON_SOURCE_DIR) + "/policies"};
  for (auto _ : state) {
    options.syscall_rule_check = [memo = std::make_shared<cocoon::backends::FilterBuildProblemsMemo>()](
                                     const cocoon::ir::Policy& policy) { return (*memo)(policy); };
    cocoon::Diagnostics diagnostics;
    if (!cocoon::frontend::CheckPolicyFile(path, "", options, diagnostics)) {
      state.SkipWithError(diagnostics.Render().substr(0, 2000).c_str());
      break;
    }
  }
  unlink(path.c_str());
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(count));
}
BENCHMARK(BM_CheckManyProfiles)
    ->ArgNames({"profiles", "distinct_sections"})
    ->Args({1000, 0})
    ->Args({10000, 0})
    ->Args({1000, 1})
    ->Unit(benchmark::kMillisecond);

void BM_Format1MiB(benchmark::State& state) {
  const std::string text = GeneratePolicy(1 << 20);
  for (auto _ : state) {
    cocoon::Diagnostics diagnostics;
    auto out = cocoon::frontend::FormatPolicy("gen.cocoon", text, diagnostics);
    benchmark::DoNotOptimize(out);
  }
}
BENCHMARK(BM_Format1MiB)->Unit(benchmark::kMillisecond);

double ProcessCpuMicros() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

// Child side of the *FreshProcess rows: checks `path` once and prints the CPU
// microseconds it took (CPU, not wall: on a shared machine the wall clock
// mostly measures the other tenants).
int CheckOnce(const char* path) {
  const double start = ProcessCpuMicros();
  cocoon::Diagnostics diagnostics;
  auto policy = cocoon::frontend::CompilePolicyFile(path, "", {}, diagnostics);
  const double us = ProcessCpuMicros() - start;
  if (!policy) {
    std::fprintf(stderr, "%s", diagnostics.Render().c_str());
    return 1;
  }
  std::printf("%f\n", us);
  return 0;
}

// Runs `/proc/self/exe --check-once path`; the child's own figure, or < 0.
double FreshProcessMicros(const std::string& path) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  char self[] = "/proc/self/exe", flag[] = "--check-once";
  std::string arg = path;
  char* argv[] = {self, flag, arg.data(), nullptr};
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, self, &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string out;
  char buffer[64];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) out.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  if (rc != 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  return std::stod(out);
}

void RunFreshProcess(benchmark::State& state, const std::string& path) {
  for (auto _ : state) {
    const double us = FreshProcessMicros(path);
    if (us < 0) return state.SkipWithError("the --check-once child failed");
    state.SetIterationTime(us / 1e6);
  }
}

void BM_CheckBuildPolicyFreshProcess(benchmark::State& state) {
  RunFreshProcess(state, std::string(COCOON_SOURCE_DIR) + "/policies/build.cocoon");
}
BENCHMARK(BM_CheckBuildPolicyFreshProcess)->UseManualTime()->Unit(benchmark::kMicrosecond);

void BM_CheckGeneratedFreshProcess(benchmark::State& state) {
  const std::string path = "/tmp/cocoon-frontend-bench-" + std::to_string(getpid()) + ".cocoon";
  std::ofstream(path) << GeneratePolicy(static_cast<size_t>(state.range(0)));
  RunFreshProcess(state, path);
  unlink(path.c_str());
}
BENCHMARK(BM_CheckGeneratedFreshProcess)->Arg(1 << 20)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  if (argc == 3 && std::string_view(argv[1]) == "--check-once") return CheckOnce(argv[2]);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
