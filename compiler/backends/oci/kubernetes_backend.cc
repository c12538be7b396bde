// Kubernetes back end: IR -> k8s/seccomp.json (for the kubelet's seccomp
// root, by default /var/lib/kubelet/seccomp), k8s/pod.json (a Pod whose
// securityContext references it as a Localhost profile) and, unless the
// network is on, k8s/networkpolicy.json. JSON is valid YAML; kubectl apply -f
// accepts these files as they are.
#include <arpa/inet.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/backends/artifact.h"
#include "compiler/common/digest.h"
#include "compiler/backends/oci/oci_common.h"
#include "compiler/backends/oci/oci_seccomp.h"
#include "compiler/backends/policy_origin.h"

namespace cocoon::backends {
namespace {

using nlohmann::ordered_json;

// Longest label: "cocoon-" + label is a Pod or NetworkPolicy name of at most 63.
constexpr size_t kMaxLabel = 56;

// RFC 1123 label: lower-case alphanumerics and '-', at most `max_size`,
// alnum at both ends.
std::string DnsLabel(std::string_view name, size_t max_size = kMaxLabel) {
  std::string out;
  for (char c : name) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    out += ok ? c : '-';
  }
  out = out.substr(0, max_size);
  while (!out.empty() && out.back() == '-') out.pop_back();
  while (!out.empty() && out.front() == '-') out.erase(0, 1);
  return out.empty() ? "sandbox" : out;
}

// The profile's label (Pod and NetworkPolicy names, the cocoon.dev/profile
// label and selector). Profile names may hold '_', '.' and capitals and be
// longer than a label, so sanitising can map two profiles to one label
// (`web_a`, `web.a` and `Web-A` all become `web-a`), and one profile's
// NetworkPolicy would then select, and replace, the other's Pod. Whenever
// sanitising changed the name, the label ends in 8 hex digits of the exact
// name's SHA-256, which keeps such names apart.
std::string ProfileLabel(const std::string& profile) {
  const std::string label = DnsLabel(profile);
  if (label == profile) return label;
  constexpr size_t kHashDigits = 8;
  return DnsLabel(profile, kMaxLabel - kHashDigits - 1) + "-" + Sha256Hex(profile).substr(0, kHashDigits);
}

std::string Quantity(uint64_t bytes) { return std::to_string(bytes); }

ordered_json ContainerSecurityContext(const ordered_json& seccomp_ref) {
  return {{"allowPrivilegeEscalation", false},
          {"privileged", false},
          {"readOnlyRootFilesystem", true},
          {"runAsNonRoot", true},
          {"capabilities", {{"drop", {"ALL"}}}},
          {"seccompProfile", seccomp_ref}};
}

ordered_json PodResources(const ir::Limits& limits) {
  ordered_json quantities = ordered_json::object();
  if (limits.memory_bytes.set) quantities["memory"] = Quantity(limits.memory_bytes.value);
  if (limits.cpu_percent.set) quantities["cpu"] = std::to_string(limits.cpu_percent.value * 10) + "m";
  if (limits.disk_bytes.set) quantities["ephemeral-storage"] = Quantity(limits.disk_bytes.value);
  // requests == limits: the Guaranteed QoS class, never overcommitted.
  return {{"limits", quantities}, {"requests", quantities}};
}

// Limits a Pod has no field for: each one set is reported, never dropped
// silently (the wall time is activeDeadlineSeconds; memory, cpu and disk are
// Resources above).
void WarnUnexpressedLimits(const ir::Limits& limits, std::vector<std::string>& warnings) {
  auto warn = [&](const ir::Limit& limit, const std::string& what, const std::string& instead) {
    if (!limit.set) return;
    warnings.push_back("k8s: the " + what + " limit (" + std::to_string(limit.value) +
                       ") has no Pod field and is not enforced; " + instead);
  };
  warn(limits.processes, "processes",
       "the node's kubelet podPidsLimit (--pod-max-pids) is the only per-Pod process cap");
  const std::string rlimit = "a Pod cannot set rlimits, so the container runtime's default applies";
  warn(limits.open_files, "open_files", rlimit + " (RLIMIT_NOFILE)");
  warn(limits.file_size_bytes, "file_size", rlimit + " (RLIMIT_FSIZE)");
  warn(limits.cpu_time_ms, "cpu_time (ms)",
       rlimit + " (RLIMIT_CPU); activeDeadlineSeconds bounds the wall time only");
  warn(limits.output_bytes, "output (bytes per stream)",
       "container logs are only rotated by the kubelet (containerLogMaxSize); the cocoon.dev/output-bytes "
       "annotation is for a launcher to enforce");
}

// `devices { ... on }`: a Pod cannot name a host device (only a privileged
// container sees them, and this Pod never is one); device plugins expose
// them as extended resources whose names the cluster chooses. Each one the
// policy turns on is reported, never dropped silently. tty needs nothing:
// /dev/tty is one of the OCI runtime's default devices in every container,
// which is also why the profile's own `tty off` is warned about (as for OCI).
void WarnUngrantedDevices(const ir::Policy& policy, std::vector<std::string>& warnings) {
  const ir::Devices& wanted = policy.filesystem.devices;
  const std::string not_granted = " is not granted: a Pod reaches host devices only through a device plugin";
  if (wanted.kvm == ir::DeviceAccess::kAllowed) {
    warnings.push_back("k8s: " + DeviceRequest(policy, "kvm") + not_granted +
                       "; with one that exposes /dev/kvm (e.g. KubeVirt's devices.kubevirt.io/kvm), add its resource "
                       "to the container's resources.limits");
  }
  if (oci::ProfileSaysTtyOff(policy)) {
    warnings.push_back("k8s: 'devices { tty off }'" + AtPolicyLine(policy, "filesystem.devices.tty") +
                       " is not enforced: /dev/tty is one of the container runtime's default devices, in every "
                       "container; with tty false (the Pod's default) it opens nothing without a controlling "
                       "terminal");
  }
  if (wanted.gpu == ir::DeviceAccess::kAllowed) {
    warnings.push_back("k8s: " + DeviceRequest(policy, "gpu") + not_granted +
                       "; add the vendor's GPU resource (e.g. nvidia.com/gpu: 1) to the container's resources.limits");
  }
}

bool IsUnder(const std::string& path, const std::string& parent) {
  if (parent == "/") return path != "/";
  return path.size() > parent.size() && path.compare(0, parent.size(), parent) == 0 && path[parent.size()] == '/';
}

// A read-only path under the work dir or under a writable or tmpfs mount lies
// inside a writable emptyDir volume, not in the read-only image root.
bool UnderAWritableVolume(const ir::Policy& policy, const std::string& target) {
  if (IsUnder(target, policy.filesystem.work.path)) return true;
  for (const ir::Mount& other : policy.filesystem.mounts) {
    if (other.kind != ir::MountKind::kReadOnly && IsUnder(target, other.target)) return true;
  }
  return false;
}

void AddVolumes(const ir::Policy& policy, ordered_json& volumes, ordered_json& mounts,
                std::vector<std::string>& warnings) {
  ordered_json work = {{"name", "work"}, {"emptyDir", ordered_json::object()}};
  if (policy.filesystem.work.quota_bytes) work["emptyDir"]["sizeLimit"] = Quantity(policy.filesystem.work.quota_bytes);
  volumes.push_back(std::move(work));
  mounts.push_back({{"name", "work"}, {"mountPath", policy.filesystem.work.path}});
  int index = 0;
  for (const ir::Mount& mount : policy.filesystem.mounts) {
    const bool read_only = mount.kind == ir::MountKind::kReadOnly;
    // Elsewhere the read-only image root (readOnlyRootFilesystem) covers a
    // read-only path. Under a writable volume it would be writable: give it
    // an empty volume mounted readOnly instead.
    if (read_only && !UnderAWritableVolume(policy, mount.target)) continue;
    const std::string name = "vol-" + std::to_string(index++);
    ordered_json empty = ordered_json::object();
    if (mount.kind == ir::MountKind::kTmpfs) {
      empty["medium"] = "Memory";
      empty["sizeLimit"] = Quantity(mount.size_bytes);
    } else {
      warnings.push_back("k8s: " + std::string(read_only ? "read-only " : "writable ") + mount.target +
                         " becomes an empty volume" + (read_only ? " mounted readOnly" : "") +
                         "; host data is not shared");
    }
    volumes.push_back({{"name", name}, {"emptyDir", std::move(empty)}});
    ordered_json volume_mount = {{"name", name}, {"mountPath", mount.target}};
    if (read_only) volume_mount["readOnly"] = true;
    mounts.push_back(std::move(volume_mount));
  }
  if (!policy.filesystem.hidden.empty()) {
    warnings.push_back("k8s: 'hide' paths cannot be masked in a Pod; the container runtime masks only its defaults");
  }
}

ordered_json Pod(const ir::Policy& policy, const std::string& profile_path, std::vector<std::string>& warnings) {
  const std::string label = ProfileLabel(policy.name);
  const ordered_json seccomp_ref = {{"type", "Localhost"}, {"localhostProfile", profile_path}};
  ordered_json container = oci::ReservedObject(9);
  container["name"] = "sandbox";
  container["image"] = "debian:bookworm-slim";
  container["command"] = oci::PlaceholderArgs(policy);
  container["workingDir"] = policy.cwd;
  ordered_json env = ordered_json::array();
  for (const auto& var : policy.environment.set) env.push_back({{"name", var.name}, {"value", var.value}});
  container["env"] = std::move(env);
  container["securityContext"] = ContainerSecurityContext(seccomp_ref);
  container["resources"] = PodResources(policy.limits);
  WarnUnexpressedLimits(policy.limits, warnings);
  WarnUngrantedDevices(policy, warnings);
  ordered_json volumes = ordered_json::array();
  ordered_json mounts = ordered_json::array();
  AddVolumes(policy, volumes, mounts, warnings);
  container["volumeMounts"] = std::move(mounts);

  ordered_json spec = oci::ReservedObject(12);
  spec["restartPolicy"] = "Never";
  if (policy.limits.wall_time_ms.set) spec["activeDeadlineSeconds"] = (policy.limits.wall_time_ms.value + 999) / 1000;
  spec["automountServiceAccountToken"] = false;
  spec["enableServiceLinks"] = false;
  spec["hostNetwork"] = false;
  spec["hostPID"] = false;
  spec["hostIPC"] = false;
  spec["hostname"] = DnsLabel(policy.hostname);
  spec["securityContext"] = {{"runAsNonRoot", true},
                             {"runAsUser", policy.user.uid},
                             {"runAsGroup", policy.user.gid},
                             {"seccompProfile", seccomp_ref}};
  spec["containers"] = ordered_json::array({std::move(container)});
  spec["volumes"] = std::move(volumes);
  if (policy.user.uid == 0) warnings.push_back("k8s: user 0 conflicts with runAsNonRoot; the kubelet will refuse the Pod");

  ordered_json pod = oci::ReservedObject(4);
  pod["apiVersion"] = "v1";
  pod["kind"] = "Pod";
  pod["metadata"] = {{"name", "cocoon-" + label},
                     {"labels", {{"app.kubernetes.io/managed-by", "cocoon"}, {"cocoon.dev/profile", label}}},
                     {"annotations", oci::Annotations(policy)}};
  pod["spec"] = std::move(spec);
  return pod;
}

// Egress only to the listed IP endpoints; host names cannot be expressed in a
// NetworkPolicy (it matches IP blocks), so they stay blocked.
ordered_json NetworkPolicy(const ir::Policy& policy, std::vector<std::string>& warnings) {
  ordered_json egress = ordered_json::array();
  for (const auto& endpoint : policy.network.allow) {
    unsigned char buffer[16];
    std::string cidr;
    if (inet_pton(AF_INET, endpoint.host.c_str(), buffer) == 1) cidr = endpoint.host + "/32";
    if (inet_pton(AF_INET6, endpoint.host.c_str(), buffer) == 1) cidr = endpoint.host + "/128";
    if (cidr.empty()) {
      warnings.push_back("k8s: NetworkPolicy matches IP blocks only; " + endpoint.host + ":" +
                         std::to_string(endpoint.port) + " stays blocked");
      continue;
    }
    egress.push_back({{"to", {{{"ipBlock", {{"cidr", cidr}}}}}},
                      {"ports", {{{"protocol", "TCP"}, {"port", endpoint.port}}}}});
  }
  const std::string label = ProfileLabel(policy.name);
  ordered_json np = oci::ReservedObject(4);
  np["apiVersion"] = "networking.k8s.io/v1";
  np["kind"] = "NetworkPolicy";
  np["metadata"] = {{"name", "cocoon-" + label}, {"labels", {{"app.kubernetes.io/managed-by", "cocoon"}}}};
  np["spec"] = {{"podSelector", {{"matchLabels", {{"cocoon.dev/profile", label}}}}},
                {"policyTypes", {"Ingress", "Egress"}},
                {"ingress", ordered_json::array()},
                {"egress", std::move(egress)}};
  return np;
}

}  // namespace

Result<std::vector<Artifact>> CompileKubernetes(const ir::Policy& policy) {
  COCOON_ASSIGN_OR_RETURN(oci::OciSeccompProfile profile, oci::SeccompProfileFor(policy));
  return CompileKubernetesWithProfile(policy, profile);
}

Result<std::vector<Artifact>> CompileKubernetesWithProfile(const ir::Policy& policy,
                                                           const oci::OciSeccompProfile& profile) {
  std::vector<std::string> warnings;
  warnings.insert(warnings.end(), profile.rule_warnings.begin(), profile.rule_warnings.end());
  warnings.insert(warnings.end(), profile.translation_warnings.begin(), profile.translation_warnings.end());
  // The exact profile name (IDENT: letters, digits, '_', '-', '.'; never
  // '/'), as docs/targets.md says to install it: a file name is not a DNS
  // label, and sanitising it made distinct profiles share one file.
  const std::string profile_path = "profiles/cocoon-" + policy.name + ".json";
  std::vector<Artifact> out;
  out.push_back(MakeArtifact("k8s", "k8s/seccomp.json", "application/vnd.cocoon.seccomp-profile+json",
                             profile.text + "\n"));
  out.push_back(MakeArtifact("k8s", "k8s/pod.json", "application/vnd.kubernetes.pod+json",
                             Pod(policy, profile_path, warnings).dump(2) + "\n"));
  if (policy.network.mode != ir::NetworkMode::kOn) {
    out.push_back(MakeArtifact("k8s", "k8s/networkpolicy.json", "application/vnd.kubernetes.networkpolicy+json",
                               NetworkPolicy(policy, warnings).dump(2) + "\n"));
  }
  out[0].warnings = std::move(warnings);
  return out;
}

}  // namespace cocoon::backends
