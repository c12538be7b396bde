// The Linux launch plan (linux.plan.json): everything the enforcer applies,
// in order, without re-reading the policy. CompileLinuxPlan (artifact.h)
// serialises it; the enforcer loads it back with LaunchPlanFromJson, from a
// `cocoon compile` directory or from the artifact cache.
//
// The plan is a pure function of the IR (no disk access): facts that depend on
// the host (is a masked path a file or a directory, does an optional bind
// source exist, which cgroup version is usable) are resolved by the enforcer's
// parent process right before launch.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/backends/artifact.h"
#include "compiler/common/status.h"
#include "compiler/ir/policy_ir.h"

namespace cocoon::backends {

// 2: read-only /proc entries (mount kind "read-only") and environment.unset.
// An older plan lacks both, so it is refused rather than run weaker.
inline constexpr int kLaunchPlanVersion = 2;
inline constexpr std::string_view kLaunchPlanMediaType = "application/vnd.cocoon.linux-plan+json";

// One mount step. The list is ordered: a parent target always precedes the
// targets below it, so nested mounts (tmpfs /usr/tmp under readonly /usr)
// land on top of their parent.
enum class PlanMountKind {
  kBindReadOnly,  // host `source` -> `target`, then ro,nosuid,nodev on every submount
  kBindWritable,  // host `source` -> `target`, nosuid,nodev on every submount
  kWork,          // the work dir: the enforcer supplies the source (staging or direct)
  kTmpfs,         // fresh tmpfs of size_bytes, nosuid,nodev, mode 1777
  kProc,          // new procfs for the sandbox's pid namespace
  kDevice,        // host device node `source` bind-mounted at `target`
  kDevSymlink,    // symlink `target` -> `source` (e.g. /dev/fd -> /proc/self/fd)
  kMask,          // hide `target`: /dev/null over a file, empty ro tmpfs over a dir
  kReadOnly,      // `target`, already in the tree (a /proc entry), bound onto itself ro,nosuid,nodev,noexec
};

std::string_view PlanMountKindName(PlanMountKind kind);

struct PlanMount {
  PlanMountKind kind = PlanMountKind::kBindReadOnly;
  std::string source;
  std::string target;
  uint64_t size_bytes = 0;  // kTmpfs / kWork quota
  bool optional = false;    // a missing source is skipped
  bool operator==(const PlanMount&) const = default;
};

// Landlock access classes; the enforcer maps each to the access-right bits of
// the best ABI the kernel offers.
enum class LandlockAccess {
  kReadExecute,  // read files, list dirs, execute
  kReadWrite,    // everything, including make/remove/truncate/refer
  kDevice,       // read/write/ioctl of a device node (no exec)
};

std::string_view LandlockAccessName(LandlockAccess access);

struct LandlockRule {
  std::string path;  // inside the sandbox
  LandlockAccess access = LandlockAccess::kReadExecute;
  bool optional = false;  // skipped when the path does not exist inside
  bool operator==(const LandlockRule&) const = default;
};

struct PlanRlimit {
  std::string resource;  // "RLIMIT_CORE", "RLIMIT_NOFILE", ...
  uint64_t soft = 0;
  uint64_t hard = 0;
  bool operator==(const PlanRlimit&) const = default;
};

struct PlanLimit {
  std::string name;  // "memory", "processes", "cpu", "cpu_time", "disk", ...
  uint64_t value = 0;
  std::string unit;  // "bytes", "count", "percent", "ms"
  bool required = true;
  bool operator==(const PlanLimit&) const = default;
};

struct LaunchPlan {
  int version = kLaunchPlanVersion;
  std::string policy_name;
  std::string policy_sha256;

  std::vector<std::string> namespaces;  // "user", "mnt", "pid", "uts", "ipc", "cgroup", "net"
  ir::NetworkMode network = ir::NetworkMode::kOff;
  // kAllowList only: the TCP endpoints the enforcer's connect broker opens
  // from the host (JSON "network_allow", written only for allow-lists so the
  // plans of other policies are unchanged).
  std::vector<ir::NetworkEndpoint> network_allow;
  uint32_t uid = 65534;  // inside the user namespace
  uint32_t gid = 65534;

  ir::RootKind root = ir::RootKind::kHost;
  std::string rootfs;                 // host path for kRootfs
  std::vector<PlanMount> mounts;      // ordered
  std::string work_path = "/work";    // inside
  ir::WorkMode work_mode = ir::WorkMode::kStaged;
  uint64_t work_quota_bytes = 0;
  std::vector<ir::Copy> copies;

  std::vector<LandlockRule> landlock;  // ordered, unique per path
  std::vector<PlanRlimit> rlimits;     // always RLIMIT_CORE=0, RLIMIT_RTPRIO=0, NOFILE, FSIZE
  std::vector<PlanLimit> limits;       // memory/processes/cpu/cpu_time/wall_time/disk/output

  bool env_clear = true;               // false: the caller's whole environment is inherited
  std::vector<ir::EnvVar> env_set;     // sorted by name
  std::vector<std::string> env_pass;   // names copied from the caller
  std::vector<std::string> env_unset;  // names removed from an inherited environment
  std::string cwd = "/work";
  std::string hostname = "cocoon";

  uint64_t wall_timeout_ms = 0;  // 0: none
  uint64_t output_cap_bytes = 0; // per stream; 0: the enforcer's default cap

  std::string seccomp_path = "linux.seccomp.bpf";
  std::string seccomp_sha256;
  bool operator==(const LaunchPlan&) const = default;
};

// Pure: the IR's settings turned into the ordered plan. seccomp_sha256 is the
// hash of the BPF artifact the plan refers to.
Result<LaunchPlan> BuildLaunchPlan(const ir::Policy& policy, std::string_view seccomp_sha256);

// Canonical JSON (sorted keys, 2-space indent, trailing newline).
std::string LaunchPlanToJson(const LaunchPlan& plan);
// Strict: unknown kinds, a wrong version or a missing field are errors.
Result<LaunchPlan> LaunchPlanFromJson(std::string_view json);
// The plan's top-level "network" mode, read without building the document
// (one search in LaunchPlanToJson's layout, else a SAX pass that stops at
// the key, a third of a full parse): the launcher
// starts the sandbox's first process on it before the plan is parsed
// (enforcer/started_child.h). A hint only: nullopt when the key is missing
// or the text is malformed, and LaunchPlanFromJson stays the authority.
std::optional<ir::NetworkMode> PeekLaunchPlanNetwork(std::string_view json);

// Used when a limit is unset: RLIMIT_NOFILE default, the output cap default.
inline constexpr uint64_t kDefaultOpenFiles = 1024;
inline constexpr uint64_t kDefaultOutputCapBytes = 16ull << 20;
inline constexpr uint64_t kDefaultTmpfsBytes = 64ull << 20;

}  // namespace cocoon::backends
