// IR -> LaunchPlan: the Linux launch plan back end (issue 3, "Linux launch
// plan"). Pure: never touches the disk. Ordering rules live here so that the
// enforcer's child can apply the list front to back without thinking.
#include <algorithm>
#include <iterator>
#include <string_view>
#include <vector>

#include "compiler/backends/default_kernel_paths.h"
#include "compiler/backends/plan/launch_plan.h"
#include "compiler/ir/cpu_time_rlimit.h"
#include "compiler/ir/file_size_rlimit.h"

namespace cocoon::backends {
namespace {

// The minimal /dev: what POSIX programs expect and nothing that reaches
// hardware. tty, kvm and gpu nodes only when the policy enables them.
constexpr std::string_view kBaseDevices[] = {"/dev/full", "/dev/null", "/dev/random", "/dev/urandom", "/dev/zero"};

bool IsUnder(std::string_view path, std::string_view dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

Status AddFilesystemMounts(const ir::Policy& policy, LaunchPlan& plan) {
  const auto& fs = policy.filesystem;
  std::vector<PlanMount> mounts;
  for (const auto& m : fs.mounts) {
    if (m.target == "/" ) return InvalidArgumentError("a mount may not replace the sandbox root");
    if (IsUnder(m.target, "/proc") || IsUnder(m.target, "/dev")) {
      return InvalidArgumentError("mount target " + m.target + " is managed by the enforcer (/proc, /dev)");
    }
    if (m.target == fs.work.path) {
      return InvalidArgumentError("mount target " + m.target + " is also the work dir");
    }
    PlanMount mount;
    mount.source = m.source;
    mount.target = m.target;
    mount.optional = m.optional;
    switch (m.kind) {
      case ir::MountKind::kReadOnly: mount.kind = PlanMountKind::kBindReadOnly; break;
      case ir::MountKind::kWritable: mount.kind = PlanMountKind::kBindWritable; break;
      case ir::MountKind::kTmpfs:
        mount.kind = PlanMountKind::kTmpfs;
        mount.source.clear();
        mount.size_bytes = m.size_bytes != 0 ? m.size_bytes : kDefaultTmpfsBytes;
        break;
    }
    mounts.push_back(std::move(mount));
  }
  PlanMount work{PlanMountKind::kWork, "", fs.work.path, fs.work.quota_bytes, false};
  mounts.push_back(std::move(work));
  // A parent path is a prefix of its children, so it sorts first: nested
  // mounts are applied on top of the mount that contains them.
  std::stable_sort(mounts.begin(), mounts.end(),
                   [](const PlanMount& a, const PlanMount& b) { return a.target < b.target; });
  plan.mounts = std::move(mounts);
  return Status::Ok();
}

void AddProcAndDev(const ir::Policy& policy, LaunchPlan& plan) {
  plan.mounts.push_back({PlanMountKind::kProc, "", "/proc", 0, false});
  std::vector<PlanMount> dev;
  for (auto node : kBaseDevices) dev.push_back({PlanMountKind::kDevice, std::string(node), std::string(node), 0, false});
  const auto& devices = policy.filesystem.devices;
  if (devices.tty == ir::DeviceAccess::kAllowed) dev.push_back({PlanMountKind::kDevice, "/dev/tty", "/dev/tty", 0, true});
  if (devices.kvm == ir::DeviceAccess::kAllowed) dev.push_back({PlanMountKind::kDevice, "/dev/kvm", "/dev/kvm", 0, true});
  if (devices.gpu == ir::DeviceAccess::kAllowed) {
    for (auto node : {"/dev/dri", "/dev/nvidia0", "/dev/nvidiactl", "/dev/nvidia-uvm"}) {
      dev.push_back({PlanMountKind::kDevice, node, node, 0, true});
    }
  }
  std::stable_sort(dev.begin(), dev.end(), [](const PlanMount& a, const PlanMount& b) { return a.target < b.target; });
  plan.mounts.insert(plan.mounts.end(), dev.begin(), dev.end());
  // Shells and tools open /dev/stdout, /dev/fd/N: symlinks into the new procfs.
  plan.mounts.push_back({PlanMountKind::kDevSymlink, "/proc/self/fd", "/dev/fd", 0, false});
  plan.mounts.push_back({PlanMountKind::kDevSymlink, "/proc/self/fd/2", "/dev/stderr", 0, false});
  plan.mounts.push_back({PlanMountKind::kDevSymlink, "/proc/self/fd/0", "/dev/stdin", 0, false});
  plan.mounts.push_back({PlanMountKind::kDevSymlink, "/proc/self/fd/1", "/dev/stdout", 0, false});
  // POSIX shared memory and semaphores (Python multiprocessing) need /dev/shm.
  plan.mounts.push_back({PlanMountKind::kTmpfs, "", "/dev/shm", 16ull << 20, false});
}

void AddMasks(const ir::Policy& policy, LaunchPlan& plan) {
  std::vector<std::string> masks(policy.filesystem.hidden.begin(), policy.filesystem.hidden.end());
  for (const auto& path : masks) plan.mounts.push_back({PlanMountKind::kMask, "", path, 0, false});
  // Optional: an entry this kernel does not have (or a /sys path no bind
  // brings in) is skipped by the enforcer.
  // runc only makes /proc/sysrq-trigger read-only; our own sandbox hides it
  // too (it is write-only, so nothing legitimate reads it).
  std::vector<std::string_view> defaults(std::begin(kDefaultMaskedPaths), std::end(kDefaultMaskedPaths));
  defaults.push_back("/proc/sysrq-trigger");
  for (auto path : defaults) {
    if (std::find(masks.begin(), masks.end(), path) != masks.end()) continue;
    plan.mounts.push_back({PlanMountKind::kMask, "", std::string(path), 0, true});
    masks.emplace_back(path);
  }
  for (auto path : kDefaultReadOnlyPaths) {
    if (std::find(masks.begin(), masks.end(), path) != masks.end()) continue;  // hidden already
    plan.mounts.push_back({PlanMountKind::kReadOnly, "", std::string(path), 0, true});
  }
}

void AddLandlock(LaunchPlan& plan) {
  // Read and execute everywhere the sandbox can see (it only sees what the
  // plan mounted); writes only where the policy made something writable.
  plan.landlock.push_back({"/", LandlockAccess::kReadExecute, false});
  for (const auto& m : plan.mounts) {
    switch (m.kind) {
      case PlanMountKind::kBindWritable:
      case PlanMountKind::kWork:
      case PlanMountKind::kTmpfs:
        plan.landlock.push_back({m.target, LandlockAccess::kReadWrite, m.optional});
        break;
      case PlanMountKind::kDevice:
        plan.landlock.push_back({m.target, LandlockAccess::kDevice, m.optional});
        break;
      default:
        break;
    }
  }
}

void AddLimit(const ir::Limit& limit, std::string name, std::string unit, LaunchPlan& plan) {
  if (!limit.set) return;
  plan.limits.push_back({std::move(name), limit.value, std::move(unit), limit.enforcement == ir::Enforcement::kRequired});
}

void AddLimits(const ir::Limits& limits, const ir::WorkDir& work, LaunchPlan& plan) {
  plan.rlimits.push_back({"RLIMIT_CORE", 0, 0});    // no core dumps of sandbox memory on the host
  plan.rlimits.push_back({"RLIMIT_RTPRIO", 0, 0});  // no real-time scheduling to starve the host
  uint64_t nofile = limits.open_files.set ? limits.open_files.value : kDefaultOpenFiles;
  plan.rlimits.push_back({"RLIMIT_NOFILE", nofile, nofile});
  // What the enforcer applies (file_size_rlimit.h): file_size, else the disk
  // limit, else its default (it used to say unlimited there, while the
  // enforcer applied 16 GiB).
  const uint64_t fsize = ir::FileSizeRlimitBytes(limits, work);
  plan.rlimits.push_back({"RLIMIT_FSIZE", fsize, fsize});
  if (limits.cpu_time_ms.set) {
    // Whole seconds, soft = hard: the command gets no SIGXCPU (cpu_time_rlimit.h).
    const uint64_t seconds = ir::CpuTimeRlimitSeconds(limits.cpu_time_ms);
    plan.rlimits.push_back({"RLIMIT_CPU", seconds, seconds});
  }
  AddLimit(limits.wall_time_ms, "wall_time", "ms", plan);
  AddLimit(limits.cpu_time_ms, "cpu_time", "ms", plan);
  AddLimit(limits.memory_bytes, "memory", "bytes", plan);
  AddLimit(limits.processes, "processes", "count", plan);
  AddLimit(limits.open_files, "open_files", "count", plan);
  AddLimit(limits.file_size_bytes, "file_size", "bytes", plan);
  AddLimit(limits.disk_bytes, "disk", "bytes", plan);
  AddLimit(limits.output_bytes, "output", "bytes", plan);
  AddLimit(limits.cpu_percent, "cpu", "percent", plan);
  plan.wall_timeout_ms = limits.wall_time_ms.set ? limits.wall_time_ms.value : 0;
  plan.output_cap_bytes = limits.output_bytes.set ? limits.output_bytes.value : kDefaultOutputCapBytes;
}

}  // namespace

Result<LaunchPlan> BuildLaunchPlan(const ir::Policy& policy, std::string_view seccomp_sha256) {
  LaunchPlan plan;
  plan.policy_name = policy.name;
  plan.policy_sha256 = policy.source_sha256;
  plan.network = policy.network.mode;
  if (plan.network == ir::NetworkMode::kAllowList) plan.network_allow = policy.network.allow;
  // Order matters to the enforcer only for reporting; clone sets them at once.
  plan.namespaces = {"user", "mnt", "pid", "uts", "ipc", "cgroup"};
  if (policy.network.mode != ir::NetworkMode::kOn) plan.namespaces.push_back("net");
  plan.uid = policy.user.uid;
  plan.gid = policy.user.gid;
  plan.root = policy.filesystem.root;
  plan.rootfs = policy.filesystem.rootfs;
  if (plan.root == ir::RootKind::kRootfs && (plan.rootfs.empty() || plan.rootfs[0] != '/')) {
    return InvalidArgumentError("root rootfs needs an absolute host path");
  }
  if (policy.filesystem.work.path.empty() || policy.filesystem.work.path[0] != '/' || policy.filesystem.work.path == "/") {
    return InvalidArgumentError("work dir path must be absolute and not '/'");
  }
  plan.work_path = policy.filesystem.work.path;
  plan.work_mode = policy.filesystem.work.mode;
  plan.work_quota_bytes = policy.filesystem.work.quota_bytes;
  plan.copies = policy.filesystem.copies;
  COCOON_RETURN_IF_ERROR(AddFilesystemMounts(policy, plan));
  AddProcAndDev(policy, plan);
  AddMasks(policy, plan);
  AddLandlock(plan);
  AddLimits(policy.limits, policy.filesystem.work, plan);
  plan.env_clear = policy.environment.clear;
  plan.env_set = policy.environment.set;
  std::sort(plan.env_set.begin(), plan.env_set.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  plan.env_pass = policy.environment.pass;
  plan.env_unset = policy.environment.unset;
  plan.cwd = policy.cwd.empty() ? plan.work_path : policy.cwd;
  plan.hostname = policy.hostname.empty() ? "cocoon" : policy.hostname;
  if (plan.hostname.size() > 64) return InvalidArgumentError("hostname longer than 64 bytes");
  plan.seccomp_sha256 = std::string(seccomp_sha256);
  return plan;
}

Result<std::vector<Artifact>> CompileLinuxPlan(const ir::Policy& policy, const Artifact& seccomp_bpf) {
  COCOON_ASSIGN_OR_RETURN(LaunchPlan plan, BuildLaunchPlan(policy, seccomp_bpf.sha256));
  if (!seccomp_bpf.path.empty()) plan.seccomp_path = seccomp_bpf.path;
  std::vector<Artifact> artifacts;
  artifacts.push_back(MakeArtifact("linux", "linux.plan.json", std::string(kLaunchPlanMediaType), LaunchPlanToJson(plan)));
  return artifacts;
}

}  // namespace cocoon::backends
