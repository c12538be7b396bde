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

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

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

void PrintReport() {
  const CompiledSeccompFilter strict = BuildStrict(TreeOptimization::kAuto);
  std::printf("\n== seccomp figures ==\n");
  std::printf("strict: %zu insns (guard prefix %zu), worst-case allow %zu (libseccomp program alone %zu; "
              "linear %zu / tree %zu incl. prefix, 0 = not built), optimize=%d\n",
              strict.stats.instructions, strict.prefix_instructions, strict.stats.worst_case_allow,
              strict.libseccomp_stats.worst_case_allow, strict.linear_stats.worst_case_allow,
              strict.binary_tree_stats.worst_case_allow, strict.optimize_level);
  std::string moby;
  if (!MobyPath().empty()) {
    for (int level : {1, 2}) {
      std::string bpf = BuildMoby(level);
      BpfPathStats s = AnalyzeBpf(ParseBpf(bpf).value());
      std::printf("moby (libseccomp optimize=%d): %zu insns, worst-case allow %zu\n", level, s.instructions,
                  s.worst_case_allow);
      if (level == 2) moby = bpf;
    }
  }
  // libseccomp's binary tree for the same rules, without Cocoon's prefix.
  CompiledSeccompFilter tree_only;
  {
    SeccompFilterOptions o;
    o.routing = SupervisedRouting::kNative;
    o.optimization = TreeOptimization::kBinaryTree;
    tree_only = BuildSeccompFilter(ComputeEffectiveSyscalls(StrictLike(), PrologueGuardForm::kBpfPrefix), o).value();
  }
  const size_t libseccomp_tree = tree_only.libseccomp_stats.worst_case_allow;
  {
    SeccompFilterOptions o;
    o.routing = SupervisedRouting::kNative;
    o.optimization = TreeOptimization::kBinaryTree;
    const auto start = std::chrono::steady_clock::now();
    auto as_rules = BuildSeccompFilter(ComputeEffectiveSyscalls(StrictLike(), PrologueGuardForm::kRules), o).value();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    std::printf("strict with the guards as libseccomp rules (the old form, tree): %zu insns, worst-case "
                "allow %zu, built in %.1f ms\n",
                as_rules.stats.instructions, as_rules.stats.worst_case_allow, ms);
  }
  std::printf("strict worst case vs libseccomp binary tree for the same rules: %.2fx (target <= 1.5x)\n",
              libseccomp_tree ? double(strict.stats.worst_case_allow) / double(libseccomp_tree) : 0.0);
  sock_filter allow_one = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  const std::string one(reinterpret_cast<const char*>(&allow_one), sizeof(allow_one));
  const double none = NsPerGetpid("");
  const double trivial = NsPerGetpid(one);
  const double strict_ns = NsPerGetpid(strict.bpf);
  const double moby_ns = moby.empty() ? -1 : NsPerGetpid(moby);
  std::printf("getpid ns: none %.1f | 1-insn allow %.1f (%.2fx) | strict %.1f (%.2fx) | moby %.1f (%.2fx)\n", none,
              trivial, trivial / none, strict_ns, strict_ns / none, moby_ns, moby_ns / none);
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  PrintReport();
  return 0;
}
