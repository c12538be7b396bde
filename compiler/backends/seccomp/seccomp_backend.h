// The Linux seccomp back end: effective rules -> libseccomp -> classic BPF.
//
// CompileSeccomp (declared in compiler/backends/artifact.h) emits:
//  - linux.seccomp.bpf  raw struct sock_filter array, host byte order, ready
//                       for seccomp(SECCOMP_SET_MODE_FILTER) / prctl;
//  - linux.seccomp.txt  libseccomp's pseudo filter code (PFC), for review;
//  - linux.seccomp.json the sidecar the enforcer reads (format below).
//
// Supervised actions. In linux.seccomp.bpf every rule (and the default) whose
// action is log, notify or kill returns SECCOMP_RET_USER_NOTIF instead, so the
// enforcer's supervisor receives the syscall number and arguments and can
// record them before acting. The enforcer must then load the filter with
// SECCOMP_FILTER_FLAG_NEW_LISTENER (json "needs_listener") and answer each
// notification as the matching json entry says:
//    "log"    -> record, respond SECCOMP_USER_NOTIF_FLAG_CONTINUE;
//    "kill"   -> record, kill the sandbox (TerminationReason kSeccompKill);
//    "notify" -> record, then the supervisor's decision (deny if unsure).
// Fail-closed: without a listener the kernel answers USER_NOTIF with ENOSYS,
// so nothing routed this way ever runs unsupervised. errno and trap actions
// and the foreign-architecture kill stay in the kernel.
//
// linux.seccomp.json:
// {
//   "format": "cocoon.seccomp.v1",
//   "architectures": ["x86_64", ...],          // the filter's arches
//   "bad_arch_action": "kill_process",         // foreign arch, x32 bit, int 0x80
//   "default_action": {"action": "errno", "errno": 38},   // as in the policy
//   "default_supervised": false,               // default routed to USER_NOTIF
//   "needs_listener": true,                    // load with NEW_LISTENER
//   "supervised": [                            // disjoint; first match wins
//     {"syscall": "ptrace", "action": "kill",  // "log" | "notify" | "kill"
//      "numbers": {"x86_64": 101},             // per arch; absent if unknown
//      "conditions": [{"arg": 0, "op": "masked_eq", "value": 8, "mask": 8}]}
//   ],                                         // op: eq ne lt le gt ge masked_eq
//   "stats": {"instructions": 123, "worst_case_allow": 14,
//             "worst_case_any": 20, "optimize": 2,
//             "linear": {...same 3 fields}, "binary_tree": {...},
//             "guards": "inline",             // "inline" | "prefix" | "none"
//             "libseccomp": {...}},           // libseccomp's program as exported
//   "rules": 150, "warnings": ["policy reopens bpf"]
// }
// A notification that no "supervised" entry matches (same arch number, all
// conditions true on the 64-bit args) gets "default_action" when an entry
// lists that (arch, number), or when "default_supervised" is true and the
// arch is one of "architectures"; any other one is killed (the filter and
// the table disagree). So "numbers" holds every number the filter places a
// rule on (syscalls::KernelSyscallNumber: i386 socket is 359, not
// socketcall's pseudo number).
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/backends/artifact.h"
#include "compiler/backends/seccomp/bpf_evaluator.h"
#include "compiler/backends/seccomp/effective_rules.h"
#include "compiler/common/status.h"

namespace cocoon::backends {

enum class SupervisedRouting {
  kRouteToNotify,  // log/notify/kill -> SECCOMP_RET_USER_NOTIF (what CompileSeccomp emits)
  kNative,         // SECCOMP_RET_LOG / USER_NOTIF / KILL_PROCESS as written
};

enum class TreeOptimization {
  kAuto,        // tree; also linear for small filters or if the tree fails verification; keep the shorter
  kLinear,      // SCMP_FLTATR_CTL_OPTIMIZE = 1 (priority-ordered if-chain)
  kBinaryTree,  // SCMP_FLTATR_CTL_OPTIMIZE = 2
};

enum class DefaultAllowance {
  kRefuse,          // a permissive default is an error (fail closed)
  kPolicyExplicit,  // the policy wrote `default allow` itself
};

struct SeccompFilterOptions {
  SupervisedRouting routing = SupervisedRouting::kRouteToNotify;
  TreeOptimization optimization = TreeOptimization::kAuto;
  DefaultAllowance default_allowance = DefaultAllowance::kRefuse;
};

struct CompiledSeccompFilter {
  std::string bpf;           // raw sock_filter bytes
  std::string pfc;           // libseccomp PFC of the same rules + the guard prefix
  BpfPathStats stats;        // of `bpf` (guard prefix + libseccomp program)
  BpfPathStats libseccomp_stats;   // libseccomp's program as exported (chosen level; no guards, no peephole)
  size_t prefix_instructions = 0;  // guard prefix length (guard_prefix.h); 0 if none or inline
  bool guards_inline = false;      // guards on the permitted paths (guard_inline.h), no prefix
  BpfPathStats prefix_placement_stats;  // the chosen level with the guards as a prefix
  BpfPathStats inline_placement_stats;  // ... and inline (0s when not eligible)
  int optimize_level = 1;    // the SCMP_FLTATR_CTL_OPTIMIZE value used
  BpfPathStats linear_stats;       // level 1 (when built), prefix included
  BpfPathStats binary_tree_stats;  // level 2 (when built), prefix included
  bool needs_listener = false;
};

// The libseccomp step plus the guard prefix, usable on its own (bench,
// tests, fuzzer). `rules` should come from ComputeEffectiveSyscalls(...,
// PrologueGuardForm::kBpfPrefix); kRules-form rules work too (no prefix then).
// When the build is refused because of one syscall's rules (libseccomp
// miscompiled or cannot build them), its name is put in `*refused_syscall`.
Result<CompiledSeccompFilter> BuildSeccompFilter(const EffectiveSyscalls& rules,
                                                 const SeccompFilterOptions& options,
                                                 std::string* refused_syscall = nullptr);

// The OCI/Kubernetes seccomp profile as a container runtime turns it into
// BPF, checked against the rules it says.
//
// Why: runc (libcontainer/seccomp/seccomp_linux.go) and crun
// (src/libcrun/seccomp.c, libcrun_generate_seccomp) build the profile with
// the libseccomp they link (2.5.4 on Debian 12): seccomp_init(defaultAction),
// seccomp_arch_add for each listed architecture (the native one stays), then
// one seccomp_rule_add_array per name of each `syscalls[]` entry, in the
// file's order, skipping entries whose action is the default's, with no
// filter attribute set (optimize level 1). libseccomp 2.5.4 miscompiles some
// rule sets (seccomp_verify.h), and which ones depends on the order the rules
// of a syscall are added in: Cocoon's own filter adds them in another order
// (and is verified on its own), so its passing says nothing about the
// runtime's program. `rules` must hold the rules in the profile's order, with
// the actions the profile writes (kRules form, no notify). Ok when the
// runtime's program gives every call what the rules say; otherwise the
// first disagreement (or a rule libseccomp refuses or loops on), with the
// syscall's name in `*failed_syscall`.
Status VerifyRuntimeBuild(const EffectiveSyscalls& rules, std::string* failed_syscall = nullptr);

// The connect routing CompileSeccomp uses (effective_rules.h): kSupervisor
// for `network allow { ... }` policies, kFilter otherwise.
ConnectRouting SeccompConnectRouting(const ir::Policy& policy);

// Everything of a checked policy that CompileSeccomp reads, as canonical
// text: the syscall section (default action, rules with their conditions
// and groups, architectures, reopened prologue syscalls), the connect
// routing and whether netlink is refused (the network off). Two policies with the same text compile to the same filter and
// sidecar, so `cocoon run` flags that change only limits, mounts or the
// environment reuse a compiled filter (cli/policy_compile_util.cc). Anything
// CompileSeccomp starts to read must be added here.
std::string SeccompCompileInput(const ir::Policy& policy);

// What CompileSeccomp would refuse in a checked policy's syscall rules
// (EffectiveSyscalls::errors of the filter's form), for the checker to
// report at the policy's own statement (frontend::FrontendOptions::
// syscall_rule_check). Empty: fine. The OCI and Kubernetes back ends' rule
// form can refuse more (the prologue's guards as rules); they say so when
// those targets are compiled.
std::vector<ir::SyscallRuleProblem> SyscallRuleProblems(const ir::Policy& policy);

// SyscallRuleProblems, then, when it finds none, the Linux filter built and
// verified as CompileSeccomp builds it: a rule set libseccomp 2.5.4
// miscompiles (seccomp_verify.h) is reported at the syscall's rule too. For
// `cocoon check` and `explain`; launches and `compile` do not build twice
// (and never fork for the libseccomp watchdog on a warm cache).
std::vector<ir::SyscallRuleProblem> FilterBuildProblems(const ir::Policy& policy);

// FilterBuildProblems over the many profiles of one `cocoon check` (or
// `explain`): each distinct SeccompCompileInput is built and verified once,
// and a profile whose syscall section and connect routing are another's
// (a file's children of `strict` that change only mounts, limits or the
// environment) gets that profile's answer. Building and verifying a filter
// is most of checking a profile (~5 ms for strict's): a file of thousands of
// such profiles built it thousands of times. Sound because FilterBuildProblems
// reads only what SeccompCompileInput holds (the static_assert beside it keeps
// them in step). Keyed by the input's SHA-256, not its text (tens of KiB for
// a strict-sized section). Not thread-safe: one per command.
class FilterBuildProblemsMemo {
 public:
  std::vector<ir::SyscallRuleProblem> operator()(const ir::Policy& policy);
  size_t builds() const { return by_input_.size(); }

 private:
  std::unordered_map<std::string, std::vector<ir::SyscallRuleProblem>> by_input_;
};

// CompileSeccomp with its effective rules already computed: `rules` must be
// ComputeEffectiveSyscalls(policy.syscalls, kBpfPrefix,
// SeccompConnectRouting(policy), EnforcerNetlinkSocketsFor(policy.network)).
Result<std::vector<Artifact>> CompileSeccompFromRules(const ir::Policy& policy, const EffectiveSyscalls& rules);

// Fills libseccomp's process-wide state (the API level and the kernel
// feature probes of src/api.c and src/system.c, which 2.5.4 fills lazily
// and without a lock) on the calling thread. Call it before compiling on
// another thread (the driver's linux worker); it is idempotent and cheap
// after the first call. Separate filter contexts share nothing else.
void PrepareLibseccompForThreads();

// The json sidecar described above.
std::string SeccompSidecarJson(const EffectiveSyscalls& rules, const CompiledSeccompFilter& filter,
                               SupervisedRouting routing);

}  // namespace cocoon::backends
