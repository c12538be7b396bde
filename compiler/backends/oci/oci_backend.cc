// OCI back end: IR -> oci/config.json, an OCI runtime-spec 1.0 bundle config
// (https://github.com/opencontainers/runtime-spec/blob/main/config.md).
//
// The bundle layout the config expects (docs/targets.md): `rootfs/` (an empty
// directory for `root host`, into which the host system dirs are bound
// read-only) and `work/` (the work dir), both next to config.json. The
// process runs as the policy's uid/gid with no capabilities at all and
// noNewPrivileges, in new user/pid/ipc/uts/mount/cgroup namespaces and, unless the
// network is on, a new network namespace with only loopback. A user
// namespace maps the policy's uid/gid to host 65534, never to host root.
#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/backends/artifact.h"
#include "compiler/backends/default_kernel_paths.h"
#include "compiler/backends/host_paths.h"
#include "compiler/backends/oci/oci_common.h"
#include "compiler/backends/oci/oci_seccomp.h"
#include "compiler/backends/policy_origin.h"

namespace cocoon::backends {
namespace {

using nlohmann::ordered_json;

// `ro`, `nosuid` and `nodev` on a bind change only its top mount (a remount
// does not recurse). The recursive `rro`, `rnosuid`, `rnodev`
// (mount_setattr(2) with AT_RECURSIVE, Linux 5.12; runc 1.1+, crun) cover
// every submount, but crun 1.8.1 fails a bind of a FILE that carries any of
// them ("open mount target: Not a directory"), and the compiler does not
// know which sources are files. Read-only binds, files among them in every
// shipped policy, keep the plain options (docs/targets.md states the
// runtime requirement). Writable binds, directories in practice, add
// `rnosuid,rnodev`: crun 1.8.1 in a user namespace drops nosuid,nodev from
// a writable bind of a host path given only the plain options
// (tests/backends/oci/runtime_bundle_test.cc); a writable file bind fails
// closed there instead.
ordered_json BindMount(const std::string& destination, const std::string& source, bool writable) {
  ordered_json options = {"rbind", writable ? "rw" : "ro", "nosuid", "nodev"};
  if (writable) {
    options.push_back("rnosuid");
    options.push_back("rnodev");
  }
  return {{"destination", destination}, {"type", "bind"}, {"source", source}, {"options", std::move(options)}};
}

ordered_json Mounts(const ir::Policy& policy, std::vector<std::string>& warnings) {
  ordered_json mounts = ordered_json::array();
  std::string optional_sources;
  mounts.push_back({{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"},
                    {"options", {"nosuid", "noexec", "nodev"}}});
  // A private /dev: the runtime populates null, zero, full, random, urandom,
  // tty and the ptmx link itself (config-linux.md#default-devices).
  mounts.push_back({{"destination", "/dev"}, {"type", "tmpfs"}, {"source", "tmpfs"},
                    {"options", {"nosuid", "noexec", "strictatime", "mode=755", "size=65536k"}}});
  for (const ir::Mount& mount : policy.filesystem.mounts) {
    if (mount.kind == ir::MountKind::kTmpfs) {
      mounts.push_back({{"destination", mount.target}, {"type", "tmpfs"}, {"source", "tmpfs"},
                        {"options", {"nosuid", "nodev", "mode=1777", "size=" + std::to_string(mount.size_bytes)}}});
      continue;
    }
    if (mount.optional) optional_sources += " " + mount.source;
    mounts.push_back(BindMount(mount.target, mount.source, mount.kind == ir::MountKind::kWritable));
  }
  if (!optional_sources.empty()) {
    warnings.push_back("oci: OCI has no optional bind mounts; the runtime fails if any of these is missing on the "
                       "host:" + optional_sources);
  }
  // Bundle-relative source: the runtime resolves it against the bundle dir.
  mounts.push_back(BindMount(policy.filesystem.work.path, "work", true));
  // Runtimes mount in array order (config.md#mounts), so a parent mounted
  // after its child hides it: a read-only /work/vendor under a writable
  // /work. A parent path is a prefix of its children and sorts first, as in
  // the launch plan (compiler/backends/plan/plan_builder.cc).
  auto& list = mounts.get_ref<ordered_json::array_t&>();
  std::stable_sort(list.begin(), list.end(), [](const ordered_json& a, const ordered_json& b) {
    return a["destination"].get_ref<const std::string&>() < b["destination"].get_ref<const std::string&>();
  });
  return mounts;
}

ordered_json Process(const ir::Policy& policy, std::vector<std::string>& warnings) {
  ordered_json process = oci::ReservedObject(9);
  process["terminal"] = false;
  process["user"] = {{"uid", policy.user.uid}, {"gid", policy.user.gid}, {"additionalGids", ordered_json::array()}};
  process["args"] = oci::PlaceholderArgs(policy);
  process["env"] = oci::EnvList(policy, "oci", warnings);
  process["cwd"] = policy.cwd;
  // No capability in any set: the sandboxed code holds none, even as uid 0.
  const ordered_json none = ordered_json::array();
  process["capabilities"] = {{"bounding", none}, {"effective", none}, {"inheritable", none},
                             {"permitted", none}, {"ambient", none}};
  ordered_json rlimits = ordered_json::array();
  for (const oci::Rlimit& limit : oci::Rlimits(policy.limits, policy.filesystem.work)) {
    rlimits.push_back({{"type", limit.type}, {"hard", limit.hard}, {"soft", limit.soft}});
  }
  process["rlimits"] = std::move(rlimits);
  process["noNewPrivileges"] = true;
  return process;
}

ordered_json OciResources(const ir::Limits& limits) {
  ordered_json resources = oci::ReservedObject(4);
  if (limits.memory_bytes.set) {
    // swap = limit: memory+swap capped at the same value, so no swap at all.
    resources["memory"] = {{"limit", limits.memory_bytes.value}, {"swap", limits.memory_bytes.value}};
  }
  if (limits.processes.set) resources["pids"] = {{"limit", limits.processes.value}};
  if (limits.cpu_percent.set) {
    resources["cpu"] = {{"quota", limits.cpu_percent.value * 1000}, {"period", 100000}};
  }
  resources["devices"] = ordered_json::array({{{"allow", false}, {"access", "rwm"}}});
  return resources;
}

// The host id the sandbox's user runs as, as in the enforcer run as root
// (docs/security.md, "User namespace maps"): never a host id of its own.
constexpr uint32_t kHostNobody = 65534;

// uidMappings/gidMappings for the policy's `id` inside the user namespace.
// Runtimes build the container (mountpoints, binds, proc) as inside id 0
// before they switch to process.user, so 0 must be mapped: for a non-zero
// `id`, inside 0 is host 0 (holding no capability once process.user is set,
// and never reachable again: empty capability sets, noNewPrivileges) and `id`
// is host 65534. `user 0:0` maps inside 0 to host 65534 alone.
ordered_json IdMappings(uint32_t id) {
  ordered_json out = ordered_json::array();
  if (id != 0) out.push_back({{"containerID", 0}, {"hostID", 0}, {"size", 1}});
  out.push_back({{"containerID", id}, {"hostID", kHostNobody}, {"size", 1}});
  return out;
}

// /dev/kvm's number is fixed: the misc major and KVM_MINOR
// (include/linux/miscdevice.h).
constexpr int kMiscMajor = 10;
constexpr int kKvmMinor = 232;

// The policy's `devices { ... on }` as `linux.devices` entries, each allowed
// in the device cgroup after the deny-all rule in `cgroup_rules` (without
// that rule the node is there but open(2) fails with EPERM); what OCI
// cannot grant is warned about, never claimed:
//  - kvm: /dev/kvm, read-write for the policy's user only. How it gets there
//    depends on the runtime (tests/backends/oci/runtime_bundle_test.cc):
//    crun 1.8.1 makes the node with these mode and ids, runc 1.1.5 in a
//    user namespace bind-mounts the host's node instead, so there the host
//    node's mode decides who may open it and a host without /dev/kvm fails
//    the run (the enforcer skips a missing node);
//  - tty: nothing to add. /dev/tty is one of the runtime's default devices
//    (config-linux.md#default-devices), there whatever the policy says, and
//    opens nothing without a controlling terminal, as in the enforcer. So
//    `tty off` cannot be honoured: warned about when the compiled profile
//    itself says it (oci::ProfileSaysTtyOff: not for strict's or the
//    default's off, which every policy has);
//  - gpu: the nodes (/dev/nvidia*, /dev/dri/*), their numbers and the
//    user-space driver are the vendor's: not granted.
ordered_json Devices(const ir::Policy& policy, ordered_json& cgroup_rules, std::vector<std::string>& warnings) {
  ordered_json devices = ordered_json::array();
  const ir::Devices& wanted = policy.filesystem.devices;
  if (wanted.kvm == ir::DeviceAccess::kAllowed) {
    devices.push_back({{"path", "/dev/kvm"}, {"type", "c"}, {"major", kMiscMajor}, {"minor", kKvmMinor},
                       {"fileMode", 0600}, {"uid", policy.user.uid}, {"gid", policy.user.gid}});
    cgroup_rules.push_back({{"allow", true}, {"type", "c"}, {"major", kMiscMajor}, {"minor", kKvmMinor},
                            {"access", "rw"}});
    warnings.push_back("oci: " + DeviceRequest(policy, "kvm") +
                       ": /dev/kvm is in linux.devices for the sandbox's user and allowed in the device cgroup; "
                       "crun creates that node, but runc (in the container's user namespace) binds the host's "
                       "/dev/kvm instead: under runc the run fails if the host has none, and the sandbox (host uid "
                       "65534) can open it only if the host node's mode lets it (e.g. 0666)");
  }
  if (oci::ProfileSaysTtyOff(policy)) {
    warnings.push_back("oci: 'devices { tty off }'" + AtPolicyLine(policy, "filesystem.devices.tty") +
                       " is not enforced: /dev/tty is one of the OCI runtime's default devices "
                       "(config-linux.md#default-devices), in the container whatever the config says; with "
                       "process.terminal false it opens nothing without a controlling terminal");
  }
  if (wanted.gpu == ir::DeviceAccess::kAllowed) {
    warnings.push_back("oci: " + DeviceRequest(policy, "gpu") +
                       " is not granted: GPU device nodes and drivers are vendor-specific; add them with the "
                       "vendor's runtime hook (e.g. the NVIDIA Container Toolkit) or as linux.devices entries and "
                       "device cgroup rules of your own");
  }
  return devices;
}

// The work dir is a read-write bind of the bundle's work/: the sandbox
// writes the host directory itself. The Linux plan's staging (writes land
// on a tmpfs of the quota's size, verified, then committed) and its
// breakout check after the run have no runtime-spec equivalent, and a bind
// mount takes no size (a sized tmpfs at the work dir would hide the work/
// content the run needs). So they travel as annotations for a launcher that
// stages and checks work/ itself, and the target says what it does not do,
// at the policy's `work` line.
void WorkDirForALauncher(const ir::Policy& policy, ordered_json& annotations, std::vector<std::string>& warnings) {
  const ir::WorkDir& work = policy.filesystem.work;
  const bool staged = work.mode == ir::WorkMode::kStaged;
  annotations["cocoon.dev/work-mode"] = staged ? "staged" : "direct";
  if (work.quota_bytes != 0) annotations["cocoon.dev/work-quota-bytes"] = std::to_string(work.quota_bytes);
  std::string unenforced;
  if (work.quota_bytes != 0) unenforced = "its " + PolicySize(work.quota_bytes) + " quota";
  if (policy.limits.disk_bytes.set) unenforced += std::string(unenforced.empty() ? "" : " and ") + "the disk limit";
  warnings.push_back("oci: " + WorkStatement(policy) + ": the runtime binds the bundle's work/ read-write, so the " +
                     "sandbox writes it directly" + (staged ? ", not a staged copy" : "") +
                     (unenforced.empty() ? "" : ", without " + unenforced + " (a bind mount has no size)") +
                     ", and nothing checks what the run leaves there (symlinks, hardlinks, devices, setuid files) "
                     "as `cocoon enforce` does; the cocoon.dev/work-mode, work-quota-bytes and disk-bytes "
                     "annotations are for a launcher that stages and checks work/ itself");
}

// `linux.seccomp` is left null here: the caller embeds the profile's text
// (oci::DumpWithEmbedded) when it serialises the config.
ordered_json Linux(const ir::Policy& policy, std::vector<std::string>& warnings) {
  ordered_json linux = oci::ReservedObject(8);
  ordered_json namespaces = ordered_json::array();
  for (const char* type : {"user", "pid", "ipc", "uts", "mount", "cgroup"}) namespaces.push_back({{"type", type}});
  // A new, empty network namespace has only loopback: that is network off.
  // An allow-list cannot be expressed in OCI; it fails closed the same way.
  if (policy.network.mode != ir::NetworkMode::kOn) namespaces.push_back({{"type", "network"}});
  linux["namespaces"] = std::move(namespaces);
  // The policy's `user` is uid:gid inside a user namespace, never the host's
  // (process.user alone would make `user 0:0` host root).
  linux["uidMappings"] = IdMappings(policy.user.uid);
  linux["gidMappings"] = IdMappings(policy.user.gid);
  ordered_json resources = OciResources(policy.limits);
  ordered_json devices = Devices(policy, resources["devices"], warnings);
  if (!devices.empty()) linux["devices"] = std::move(devices);
  linux["resources"] = std::move(resources);
  linux["seccomp"] = nullptr;
  ordered_json masked = ordered_json::array();
  for (std::string_view path : kDefaultMaskedPaths) masked.push_back(path);
  // What is hidden is the host object: every name the binds give it is
  // masked, as the enforcer does at launch (host_paths.h: HiddenNames). The
  // runtime resolves bind sources on the run host, so symlinks among them are
  // resolved here, on the compiling host (docs/targets.md).
  for (const std::string& hidden : policy.filesystem.hidden) {
    for (std::string& path : HiddenNames(policy.filesystem, hidden, HostLookup::kResolveOnThisHost)) {
      if (std::find(masked.begin(), masked.end(), path) == masked.end()) masked.push_back(std::move(path));
    }
  }
  linux["maskedPaths"] = std::move(masked);
  ordered_json readonly = ordered_json::array();
  for (std::string_view path : kDefaultReadOnlyPaths) readonly.push_back(path);
  linux["readonlyPaths"] = std::move(readonly);
  return linux;
}

}  // namespace

Result<std::vector<Artifact>> CompileOci(const ir::Policy& policy) {
  COCOON_ASSIGN_OR_RETURN(oci::OciSeccompProfile profile, oci::SeccompProfileFor(policy));
  return CompileOciWithProfile(policy, profile);
}

Result<std::vector<Artifact>> CompileOciWithProfile(const ir::Policy& policy, const oci::OciSeccompProfile& profile) {
  std::vector<std::string> warnings;
  warnings.insert(warnings.end(), profile.rule_warnings.begin(), profile.rule_warnings.end());
  ordered_json config = oci::ReservedObject(8);
  // 1.1.0: the config uses SCMP_ACT_KILL_PROCESS, defaultErrnoRet, errnoRet
  // and the rnosuid/rnodev mount options, all added in runtime-spec 1.1.0.
  config["ociVersion"] = "1.1.0";
  config["process"] = Process(policy, warnings);
  config["root"] = {{"path", policy.filesystem.root == ir::RootKind::kRootfs ? policy.filesystem.rootfs : "rootfs"},
                    {"readonly", true}};
  config["hostname"] = policy.hostname;
  config["mounts"] = Mounts(policy, warnings);
  warnings.insert(warnings.end(), profile.translation_warnings.begin(), profile.translation_warnings.end());
  config["linux"] = Linux(policy, warnings);
  config["annotations"] = oci::Annotations(policy);
  WorkDirForALauncher(policy, config["annotations"], warnings);
  if (policy.user.uid == 0) {
    warnings.push_back("oci: user 0 is host uid 65534 in the container's user namespace, and the runtime builds the "
                       "container as that id: the bundle directory must be searchable by it and rootfs/ owned by it "
                       "(chown 65534:65534), or the runtime fails to make its mountpoints");
  }
  if (policy.network.mode == ir::NetworkMode::kAllowList) {
    warnings.push_back("oci: a network allow-list cannot be expressed in config.json; the container gets an "
                       "isolated network namespace (no network) instead");
  }
  std::vector<Artifact> out;
  out.push_back(MakeArtifact("oci", "oci/config.json", "application/vnd.cocoon.oci-runtime-config+json",
                             oci::DumpWithEmbedded(std::move(config), ordered_json::json_pointer("/linux/seccomp"),
                                                   profile.text) +
                                 "\n"));
  out[0].warnings = std::move(warnings);
  return out;
}

}  // namespace cocoon::backends
