// Seccomp back end figures: filter build time, BPF size and worst-case path
// for a strict-like rule set vs moby's default profile (built with libseccomp
// from /work/shared/data/moby-default-seccomp.json, or bench/data/ if copied),
// and ns per getpid() under no filter / a 1-instruction allow / strict / moby,
// each measured in a forked child. Prints a table after the benchmarks.
#include <benchmark/benchmark.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "compiler/backends/oci/docker_seccomp_import.h"
#include "compiler/backends/seccomp/seccomp_backend.h"
#include "compiler/driver/driver.h"
#include "compiler/frontend/frontend.h"
#include "compiler/syscalls/syscall_groups.h"

namespace {

using namespace cocoon;            // NOLINT
using namespace cocoon::backends;  // NOLINT

ir::Syscalls StrictLike() {
  ir::Syscalls s;
  s.default_action = {ir::ActionKind::kErrno, 38};
  auto add = [&](const char* group, ir::Action action) {
    for (const auto& name : syscalls::ExpandGroup(group)) s.rules.push_back({name, action, {}, group});
  };
  add("@system-service", {ir::ActionKind::kAllow, 0});
  for (const char* g : {"@mount", "@module", "@debug", "@keyring", "@raw-io", "@clock", "@reboot", "@swap",
                        "@obsolete"}) {
    add(g, {ir::ActionKind::kErrno, 1});
  }
  add("@cpu-emulation", {ir::ActionKind::kKillProcess, 0});
  return s;
}

std::string MobyPath() {
  for (const char* p : {"/work/shared/data/moby-default-seccomp.json", COCOON_SOURCE_DIR "/bench/data/moby-default-seccomp.json"}) {
    if (access(p, R_OK) == 0) return p;
  }
  return "";
}

bool MobyEntryApplies(const nlohmann::json& entry) {
  // Default profile, no extra capabilities, amd64 only.
  if (entry.contains("includes")) {
    const auto& inc = entry["includes"];
    if (inc.contains("caps") || inc.contains("minKernel")) return false;
    if (inc.contains("arches")) {
      bool amd64 = false;
      for (const auto& a : inc["arches"]) amd64 |= a == "amd64" || a == "x86_64";
      if (!amd64) return false;
    }
  }
  return true;
}

// moby's default profile through libseccomp, at one optimisation level.
std::string BuildMoby(int level) {
  std::ifstream in(MobyPath());
  nlohmann::json doc = nlohmann::json::parse(in);
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(1));
  seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, static_cast<uint32_t>(level));
  for (const auto& entry : doc["syscalls"]) {
    if (!MobyEntryApplies(entry) || entry["action"] != "SCMP_ACT_ALLOW") continue;
    std::vector<scmp_arg_cmp> conds;
    for (const auto& a : entry.value("args", nlohmann::json::array())) {
      scmp_arg_cmp c{};
      c.arg = a["index"].get<unsigned>();
      const std::string op = a["op"];
      c.op = op == "SCMP_CMP_MASKED_EQ" ? SCMP_CMP_MASKED_EQ : op == "SCMP_CMP_NE" ? SCMP_CMP_NE : SCMP_CMP_EQ;
      c.datum_a = a["value"].get<uint64_t>();
      c.datum_b = a.value("valueTwo", uint64_t{0});
      conds.push_back(c);
    }
    for (const auto& name : entry["names"]) {
      const int nr = seccomp_syscall_resolve_name(name.get<std::string>().c_str());
      if (nr == __NR_SCMP_ERROR) continue;
      seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, static_cast<unsigned>(conds.size()), conds.data());
    }
  }
  const int fd = memfd_create("moby", 0);
  seccomp_export_bpf(ctx, fd);
  seccomp_release(ctx);
  std::string out(static_cast<size_t>(lseek(fd, 0, SEEK_END)), '\0');
  pread(fd, out.data(), out.size(), 0);
  close(fd);
  return out;
}

CompiledSeccompFilter BuildStrict(TreeOptimization opt) {
  SeccompFilterOptions o;
  o.routing = SupervisedRouting::kNative;
  o.optimization = opt;
  return BuildSeccompFilter(ComputeEffectiveSyscalls(StrictLike(), PrologueGuardForm::kBpfPrefix), o).value();
}

// policies/strict.cocoon through the real front end (checked once).
const ir::Policy& StrictPolicy() {
  static const ir::Policy policy = [] {
    frontend::FrontendOptions options;
    options.search_paths = {COCOON_SOURCE_DIR "/policies"};
    Diagnostics diagnostics;
    auto p = frontend::CompilePolicyFile(COCOON_SOURCE_DIR "/policies/strict.cocoon", "strict", options, diagnostics);
    if (!p) {
      std::fprintf(stderr, "%s", diagnostics.Render().c_str());
      std::abort();
    }
    return *p;
  }();
  return policy;
}

// Issue 3's target: strict to every target, in-process, < 5 ms.
void BM_CompileStrictAllTargets(benchmark::State& state) {
  const ir::Policy& policy = StrictPolicy();
  for (auto _ : state) benchmark::DoNotOptimize(driver::CompileTargets(policy, driver::AllTargets()).value());
}
BENCHMARK(BM_CompileStrictAllTargets)->Unit(benchmark::kMillisecond);

void BM_CompileStrictLinuxOnly(benchmark::State& state) {
  const ir::Policy& policy = StrictPolicy();
  for (auto _ : state) {
    benchmark::DoNotOptimize(driver::CompileTargets(policy, {driver::Target::kLinux}).value());
  }
}
BENCHMARK(BM_CompileStrictLinuxOnly)->Unit(benchmark::kMillisecond);

// This thread's CPU time in ms: on the shared 2-core machine, wall time
// mostly measures the other engineers' builds.
double ThreadCpuMs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// Each target compiled on its own (`--target X`: no work shared with
// another target, so OCI and Kubernetes each compute the seccomp profile).
// Counters: CPU ms per target per compile.
void BM_CompileStrictPerTarget(benchmark::State& state) {
  const ir::Policy& policy = StrictPolicy();
  const std::vector<driver::Target> targets = driver::AllTargets();
  std::vector<double> ms(targets.size(), 0);
  for (auto _ : state) {
    for (size_t i = 0; i < targets.size(); ++i) {
      const double start = ThreadCpuMs();
      benchmark::DoNotOptimize(driver::CompileTargets(policy, {targets[i]}).value());
      ms[i] += ThreadCpuMs() - start;
    }
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    state.counters[std::string(driver::TargetName(targets[i])) + "_ms"] =
        benchmark::Counter(ms[i], benchmark::Counter::kAvgIterations);
  }
}
BENCHMARK(BM_CompileStrictPerTarget)->Unit(benchmark::kMillisecond);

// Compile scaling (issue 3 task): a generated policy of ~N bytes (the same
// shape as bench/frontend_bench.cc: conditional syscall rules, env vars,
// read-only mounts), checked once, then compiled target by target. A target
// that refuses the policy (e.g. a BPF program over the kernel's 4096
// instructions) is counted in `<target>_refused` and timed all the same.
std::string GeneratePolicy(size_t bytes) {
  static const char* const kCalls[] = {"read", "write", "openat", "close", "mmap", "ioctl", "socket", "fcntl"};
  std::string sys = "  syscalls {\n    default errno ENOSYS\n    allow @basic-io\n";
  std::string env = "  environment {\n";
  std::string fs = "  filesystem {\n";
  for (size_t i = 0; sys.size() + env.size() + fs.size() < bytes; ++i) {
    if (i % 4 < 2) sys += "    deny " + std::string(kCalls[i % 8]) + " if arg1 == " + std::to_string(i) + " errno EPERM\n";
    else if (i % 4 == 2) env += "    set VAR_" + std::to_string(i) + " \"value " + std::to_string(i) + "\"\n";
    else fs += "    readonly optional /opt/tree/dir_" + std::to_string(i) + "\n";
  }
  return "profile gen {\n" + sys + "  }\n" + env + "  }\n" + fs + "  }\n}\n";
}

void BM_CompileGeneratedPerTarget(benchmark::State& state) {
  frontend::FrontendOptions options;
  Diagnostics diagnostics;
  auto policy = frontend::CompilePolicyText("gen.cocoon", GeneratePolicy(static_cast<size_t>(state.range(0))), "",
                                            options, diagnostics);
  if (!policy) return state.SkipWithError("generated policy does not check");
  const std::vector<driver::Target> targets = driver::AllTargets();
  std::vector<double> ms(targets.size(), 0), refused(targets.size(), 0);
  for (auto _ : state) {
    for (size_t i = 0; i < targets.size(); ++i) {
      const auto start = std::chrono::steady_clock::now();
      refused[i] += driver::CompileTargets(*policy, {targets[i]}).ok() ? 0 : 1;
      ms[i] += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    }
  }
  for (size_t i = 0; i < targets.size(); ++i) {
    const std::string name(driver::TargetName(targets[i]));
    state.counters[name + "_ms"] = benchmark::Counter(ms[i], benchmark::Counter::kAvgIterations);
    if (refused[i] > 0) state.counters[name + "_refused"] = 1;
  }
}
BENCHMARK(BM_CompileGeneratedPerTarget)->Arg(1 << 10)->Arg(100 << 10)->Arg(1 << 20)->Unit(benchmark::kMillisecond)
    ->Iterations(3);

// Issue 7, item 2: check + compile to every target, per shipped policy file
// (policies/*.cocoon and policies/runtimes/*.cocoon), from the file each time:
// read, parse, imports, check, IR, five back ends. Registered in main().
void BM_CheckAndCompileShipped(benchmark::State& state, const std::string& path) {
  frontend::FrontendOptions options;
  options.search_paths = {COCOON_SOURCE_DIR "/policies"};
  for (auto _ : state) {
    Diagnostics diagnostics;
    auto policy = frontend::CompilePolicyFile(path, "", options, diagnostics);
    if (!policy) return state.SkipWithError(("does not check: " + path).c_str());
    auto out = driver::CompileTargets(*policy, driver::AllTargets());
    if (!out.ok()) return state.SkipWithError(out.status().ToString().c_str());
    benchmark::DoNotOptimize(out);
  }
}

void RegisterShippedPolicies() {
  std::vector<std::string> files;
  for (const char* dir : {COCOON_SOURCE_DIR "/policies", COCOON_SOURCE_DIR "/policies/runtimes"}) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      if (entry.path().extension() == ".cocoon") files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  const std::string root = COCOON_SOURCE_DIR "/";
  for (const std::string& file : files) {
    benchmark::RegisterBenchmark(("BM_CheckAndCompileShipped/" + file.substr(root.size())).c_str(),
                                 BM_CheckAndCompileShipped, file)
        ->Unit(benchmark::kMillisecond);
  }
}

void BM_BuildStrictFilter(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(BuildStrict(TreeOptimization::kAuto));
}
BENCHMARK(BM_BuildStrictFilter)->Unit(benchmark::kMillisecond);

void BM_BuildMobyFilter(benchmark::State& state) {
  if (MobyPath().empty()) return state.SkipWithError("moby profile not found");
  for (auto _ : state) benchmark::DoNotOptimize(BuildMoby(2));
}
BENCHMARK(BM_BuildMobyFilter)->Unit(benchmark::kMillisecond);

// ns per getpid() in a forked child that loaded `bpf` (empty = no filter).
double NsPerGetpid(const std::string& bpf) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    if (!bpf.empty()) {
      sock_fprog prog{static_cast<unsigned short>(bpf.size() / 8),
                      reinterpret_cast<sock_filter*>(const_cast<char*>(bpf.data()))};
      prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
      if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) _exit(1);
    }
    constexpr int kIterations = 2'000'000;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kIterations; ++i) syscall(SYS_getpid);
    const double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    const double per = ns / kIterations;
    (void)!write(fds[1], &per, sizeof(per));
    _exit(0);
  }
  close(fds[1]);
  double per = -1;
  (void)!read(fds[0], &per, sizeof(per));
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return per;
}

// libseccomp alone, as runc/crun would use it, for `rules` (the prologue in
// rule form: the same semantics Cocoon's filter has): the reference issue 3
// compares against. Native actions, bad arch -> kill.
uint32_t NativeAction(const ir::Action& a) {
  switch (a.kind) {
    case ir::ActionKind::kAllow: return SCMP_ACT_ALLOW;
    case ir::ActionKind::kErrno: return SCMP_ACT_ERRNO(static_cast<uint16_t>(a.errno_value));
    case ir::ActionKind::kKillProcess: return SCMP_ACT_KILL_PROCESS;
    case ir::ActionKind::kLog: return SCMP_ACT_LOG;
    case ir::ActionKind::kNotify: return SCMP_ACT_NOTIFY;
    case ir::ActionKind::kTrap: return SCMP_ACT_TRAP;
  }
  return SCMP_ACT_KILL_PROCESS;
}

BpfPathStats PlainLibseccomp(const EffectiveSyscalls& rules, int level) {
  scmp_filter_ctx ctx = seccomp_init(NativeAction(rules.default_action));
  seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
  seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, static_cast<uint32_t>(level));
  for (ir::Arch arch : rules.architectures) seccomp_arch_add(ctx, syscalls::ScmpArchToken(arch));
  for (const ir::SyscallRule& r : rules.rules) {
    if (NativeAction(r.action) == NativeAction(rules.default_action)) continue;
    std::vector<scmp_arg_cmp> conds;
    for (const auto& c : r.conditions) {
      scmp_arg_cmp x{};
      x.arg = c.arg;
      x.op = c.op == ir::CompareOp::kMaskedEq ? SCMP_CMP_MASKED_EQ
             : c.op == ir::CompareOp::kNe    ? SCMP_CMP_NE
             : c.op == ir::CompareOp::kLt    ? SCMP_CMP_LT
             : c.op == ir::CompareOp::kLe    ? SCMP_CMP_LE
             : c.op == ir::CompareOp::kGt    ? SCMP_CMP_GT
             : c.op == ir::CompareOp::kGe    ? SCMP_CMP_GE
                                             : SCMP_CMP_EQ;
      x.datum_a = c.op == ir::CompareOp::kMaskedEq ? c.mask : c.value;
      x.datum_b = c.op == ir::CompareOp::kMaskedEq ? c.value : 0;
      conds.push_back(x);
    }
    seccomp_rule_add_array(ctx, NativeAction(r.action), seccomp_syscall_resolve_name(r.name.c_str()),
                           static_cast<unsigned>(conds.size()), conds.data());
  }
  const int fd = memfd_create("plain", 0);
  seccomp_export_bpf(ctx, fd);
  seccomp_release(ctx);
  std::string out(static_cast<size_t>(lseek(fd, 0, SEEK_END)), '\0');
  (void)!pread(fd, out.data(), out.size(), 0);
  close(fd);
  return AnalyzeBpf(ParseBpf(out).value());
}

std::optional<ir::Policy> PolicyFromFile(const std::string& file, const std::string& profile) {
  frontend::FrontendOptions options;
  options.search_paths = {COCOON_SOURCE_DIR "/policies"};
  Diagnostics diagnostics;
  return frontend::CompilePolicyFile(file, profile, options, diagnostics);
}

// moby's default profile through `cocoon import docker-seccomp`, then the front end.
std::optional<ir::Policy> ImportedMoby() {
  if (MobyPath().empty()) return std::nullopt;
  std::ifstream in(MobyPath());
  const std::string json((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  oci::DockerImportOptions o;
  o.profile_name = "moby";
  auto text = oci::ImportDockerSeccomp(json, o);
  if (!text.ok()) return std::nullopt;
  frontend::FrontendOptions options;
  options.search_paths = {COCOON_SOURCE_DIR "/policies"};
  Diagnostics diagnostics;
  return frontend::CompilePolicyText("moby.cocoon", *text, "", options, diagnostics);
}

// One row per profile: Cocoon's filter (as `cocoon compile` builds it) vs
// libseccomp's binary tree and linear chain for the same effective rules.
// Every "worst" is the same static bound (AnalyzeBpf: the longest path to a
// RET ALLOW, feasible or not), applied to every program alike.
void ReportProfile(const char* name, const std::optional<ir::Policy>& policy) {
  if (!policy) return (void)std::printf("%-14s (not available)\n", name);
  SeccompFilterOptions o;
  o.default_allowance = policy->syscalls.default_explicitly_allows ? DefaultAllowance::kPolicyExplicit
                                                                   : DefaultAllowance::kRefuse;
  auto filter = BuildSeccompFilter(ComputeEffectiveSyscalls(policy->syscalls, PrologueGuardForm::kBpfPrefix), o);
  if (!filter.ok()) return (void)std::printf("%-14s %s\n", name, filter.status().ToString().c_str());
  const EffectiveSyscalls as_rules = ComputeEffectiveSyscalls(policy->syscalls, PrologueGuardForm::kRules);
  const BpfPathStats tree = PlainLibseccomp(as_rules, 2);
  const BpfPathStats linear = PlainLibseccomp(as_rules, 1);
  std::printf("%-14s cocoon %4zu insns, worst %3zu (%s) | libseccomp tree %4zu insns, worst %3zu (x%.2f) | "
              "linear %4zu insns, worst %3zu\n",
              name, filter->stats.instructions, filter->stats.worst_case_allow,
              filter->guards_inline ? "guards inline" : "guard prefix", tree.instructions, tree.worst_case_allow,
              tree.worst_case_allow ? double(filter->stats.worst_case_allow) / double(tree.worst_case_allow) : 0.0,
              linear.instructions, linear.worst_case_allow);
}

void PrintReport() {
  std::printf("\n== seccomp figures (worst = longest path to RET ALLOW, static bound, same method for all) ==\n");
  const auto strict_policy = PolicyFromFile(COCOON_SOURCE_DIR "/policies/strict.cocoon", "strict");
  ReportProfile("strict", strict_policy);
  ReportProfile("build", PolicyFromFile(COCOON_SOURCE_DIR "/policies/build.cocoon", ""));
  ReportProfile("moby-imported", ImportedMoby());
  std::string moby;
  if (!MobyPath().empty()) {
    for (int level : {1, 2}) {
      std::string bpf = BuildMoby(level);
      BpfPathStats s = AnalyzeBpf(ParseBpf(bpf).value());
      std::printf("moby default profile, raw libseccomp (x86_64, allow entries only, default errno(1)), "
                  "optimize=%d: %zu insns, worst %zu\n", level, s.instructions, s.worst_case_allow);
      if (level == 2) moby = bpf;
    }
  }
  const CompiledSeccompFilter strict = BuildStrict(TreeOptimization::kAuto);
  sock_filter allow_one = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  const std::string one(reinterpret_cast<const char*>(&allow_one), sizeof(allow_one));
  const double none = NsPerGetpid("");
  const double trivial = NsPerGetpid(one);
  const double strict_ns = NsPerGetpid(strict.bpf);
  const double moby_ns = moby.empty() ? -1 : NsPerGetpid(moby);
  std::printf("getpid ns: none %.1f | 1-insn allow %.1f (%.2fx) | strict-like %.1f (%.2fx) | moby %.1f (%.2fx)\n",
              none, trivial, trivial / none, strict_ns, strict_ns / none, moby_ns, moby_ns / none);
}

}  // namespace

int main(int argc, char** argv) {
  RegisterShippedPolicies();
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  PrintReport();
  return 0;
}
