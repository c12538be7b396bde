// Helpers for the enforcer tests: a policy built in code (no front end), and
// hand-assembled seccomp programs (no libseccomp), so these tests exercise
// the enforcer on its own.
#pragma once

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "compiler/backends/plan/launch_plan.h"
#include "compiler/common/digest.h"
#include "enforcer/sandbox.h"

namespace cocoon::enforcer::testing {

inline ir::Policy TestPolicy() {
  ir::Policy policy;
  policy.name = "enforcer-test";
  policy.source_sha256 = std::string(64, '0');
  for (const char* dir : {"/usr", "/etc"}) policy.filesystem.mounts.push_back({ir::MountKind::kReadOnly, dir, dir, 0, false});
  for (const char* dir : {"/bin", "/lib", "/lib64", "/sbin"}) {
    policy.filesystem.mounts.push_back({ir::MountKind::kReadOnly, dir, dir, 0, true});
  }
  policy.filesystem.mounts.push_back({ir::MountKind::kTmpfs, "", "/tmp", 16ull << 20, false});
  std::sort(policy.filesystem.mounts.begin(), policy.filesystem.mounts.end(),
            [](const ir::Mount& a, const ir::Mount& b) { return a.target < b.target; });
  policy.limits.wall_time_ms = {true, 10000, ir::Enforcement::kRequired};
  policy.limits.output_bytes = {true, 1 << 20, ir::Enforcement::kRequired};
  policy.environment.set = {{"HOME", "/work"}, {"PATH", "/usr/bin:/bin"}};
  return policy;
}

// x86_64 arch check, then `rules` (syscall nr -> return value), then allow.
inline std::string AssembleFilter(const std::vector<std::pair<int, uint32_t>>& rules) {
  std::vector<sock_filter> prog;
  prog.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
  prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
  prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
  prog.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
  for (const auto& [nr, action] : rules) {
    prog.push_back(BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(nr), 0, 1));
    prog.push_back(BPF_STMT(BPF_RET | BPF_K, action));
  }
  prog.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
  return std::string(reinterpret_cast<const char*>(prog.data()), prog.size() * sizeof(sock_filter));
}

inline std::string AllowAllFilter() { return AssembleFilter({}); }

inline SandboxRequest MakeRequest(const ir::Policy& policy, std::vector<std::string> argv,
                                  std::string bpf = AllowAllFilter()) {
  SandboxRequest request;
  auto plan = backends::BuildLaunchPlan(policy, Sha256Hex(bpf));
  if (plan.ok()) request.plan = *plan;
  request.seccomp_bpf = std::move(bpf);
  request.argv = std::move(argv);
  request.resolve_allow_list = &ResolveAllowList;
  return request;
}

// A shell command run in a sandbox to show its isolation: capabilities,
// no_new_privs, seccomp mode, its pid, its network namespace and interfaces.
inline constexpr char kIsolationReport[] =
    "grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; readlink /proc/self/ns/net; echo pid $$; "
    "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '";

// What every sandbox with the network off shows in that report: no
// capabilities, no_new_privs, a seccomp filter, pid 1 of a pid namespace of
// its own, a network namespace other than ours with loopback only. "" when
// all hold, else the first that does not, with the report.
inline std::string IsolationReportProblems(const std::string& out) {
  char host_net[64] = {};
  if (readlink("/proc/self/ns/net", host_net, sizeof(host_net) - 1) <= 0) return "cannot read our own net namespace";
  const std::pair<const char*, const char*> expected[] = {
      {"CapEff:\t0000000000000000", "capabilities left"}, {"NoNewPrivs:\t1", "no_new_privs not set"},
      {"Seccomp:\t2", "no seccomp filter"},               {"pid 1\n", "not the init of its own pid namespace"},
      {"net:[", "no network namespace shown"}};
  for (const auto& [text, problem] : expected) {
    if (out.find(text) == std::string::npos) return std::string(problem) + ": " + out;
  }
  if (out.find(host_net) != std::string::npos) return "the host's network namespace: " + out;
  if (out.size() < 3 || out.compare(out.size() - 3, 3, "lo\n") != 0) return "more than loopback: " + out;
  return "";
}

}  // namespace cocoon::enforcer::testing
