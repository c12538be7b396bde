// macOS Seatbelt back end: IR -> macos.sb + macos.params.json.
//
// The profile is deny-default (Codex CLI seatbelt_base_policy.sbpl, Chromium
// sandbox/policy/mac/common.sb). Seatbelt evaluates every matching rule and
// the LAST one wins, so the order below is: base process rights, system reads,
// policy reads, writable roots (minus protected subpaths), network, and the
// hidden paths last so that nothing earlier can re-open them.
// No string that came from the policy is ever written into the profile text:
// paths are (param "NAME") and the profile name is reduced to [A-Za-z0-9_-].
#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "cocoon_version.h"
#include "compiler/backends/artifact.h"
#include "compiler/backends/host_paths.h"
#include "compiler/backends/policy_origin.h"
#include "compiler/backends/sbpl/sbpl_params.h"
#include "compiler/backends/syscall_fidelity.h"

namespace cocoon::backends {
namespace {

using sbpl::ParamRole;

// Read access a dynamically linked macOS process needs before main(): the
// dyld shared cache (in the Cryptexes since macOS 13), system frameworks and
// libraries, time zones, locale data. Deliberately NOT "/System" as a whole:
// /System/Volumes/Data is the entire user data volume.
constexpr std::string_view kSystemReadSubpaths[] = {
    "/Library/Apple",          "/System/Cryptexes",       "/System/Library",
    "/System/Volumes/Preboot/Cryptexes", "/private/var/db/dyld", "/private/var/db/timezone",
    "/usr/lib",                "/usr/share"};
constexpr std::string_view kSystemReadLiterals[] = {"/", "/private/etc/localtime",
                                                    "/private/var/select/sh"};
// Relative to every writable root: writing these lets sandboxed code run
// commands later on the host (git hooks, core.hooksPath/fsmonitor in config).
constexpr std::string_view kProtectedInWritableRoots[] = {".git/config", ".git/hooks"};

// SBPL string literal. Only back-end constants and generated parameter names
// reach here, but quote defensively anyway.
std::string Quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string SanitizedTag(std::string_view name) {
  std::string out;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    out += ok ? c : '_';
  }
  return out.substr(0, 64);
}

// `path` below `root` (not `root` itself), as the relative path from `root`,
// compared as Seatbelt sees them (/tmp is /private/tmp); "" when not below.
std::string RelativeBelow(std::string_view path, std::string_view root) {
  const std::string p = sbpl::CanonicalMacosPath(path);
  const std::string r = sbpl::CanonicalMacosPath(root);
  if (r == "/") return p.size() > 1 ? p.substr(1) : "";
  if (p.size() > r.size() && p.compare(0, r.size(), r) == 0 && p[r.size()] == '/') return p.substr(r.size() + 1);
  return "";
}

// What Seatbelt can do with an allow-list host. Its (remote ip "HOST:PORT")
// filter takes only "localhost" or "*" as HOST (sandbox-exec refuses an
// address: "host must be * or localhost in network address"), and
// "localhost" matches the loopback addresses 127.0.0.1 and ::1, both
// families; it is not reported to match the rest of 127.0.0.0/8.
enum class SeatbeltHost {
  kLocalhost,     // "localhost": the policy named both families itself
  kOneLoopback,   // 127.0.0.1 or ::1: "localhost" opens the other family's too
  kOtherLoopback, // 127.0.0.2 ...: "localhost" would open other endpoints, maybe not this one
  kRemote,        // any other host: only "*" could name it
};

SeatbeltHost ClassifyHost(const std::string& host) {
  if (host == "localhost") return SeatbeltHost::kLocalhost;
  if (host == "::1") return SeatbeltHost::kOneLoopback;  // the checker spells IPv6 one way (RFC 5952)
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) != 1) return SeatbeltHost::kRemote;
  const uint32_t address = ntohl(v4.s_addr);
  if (address == INADDR_LOOPBACK) return SeatbeltHost::kOneLoopback;
  return (address >> 24) == 127 ? SeatbeltHost::kOtherLoopback : SeatbeltHost::kRemote;
}

class SbplWriter {
 public:
  explicit SbplWriter(const ir::Policy& policy) : policy_(policy) {
    params_.profile = policy.name;
    params_.environment = policy.environment;
  }

  Result<std::vector<Artifact>> Build();

 private:
  std::string AddParam(std::string_view prefix, std::string value, ParamRole role);
  std::string AddDerivedParam(const std::string& base, std::string_view relative,
                              ParamRole role = ParamRole::kProtected);
  void Header();
  void SystemReads();
  void PolicyReads();
  void WritableRoot(std::string_view prefix, const std::string& host_path, const std::string& sandbox_path,
                    ParamRole role);
  void WritableRoots();
  void ProtectedAncestors();
  void Network();
  void Hidden();
  void Limits();
  void SyscallRules();

  const ir::Policy& policy_;
  std::string text_;
  sbpl::SbplParams params_;
  std::vector<std::string> warnings_;
  std::vector<std::string> writable_paths_;  // policy paths of writable roots
  // Parameters of entries that must not be renamed or removed: each writable
  // root holding a protected path, and (below) the directories in between.
  std::vector<std::string> unrenamable_roots_;
  std::vector<std::string> protected_ancestors_;
  std::map<std::string, int> counters_;      // next index per parameter prefix
};

std::string SbplWriter::AddParam(std::string_view prefix, std::string value, ParamRole role) {
  std::string name = std::string(prefix) + "_" + std::to_string(counters_[std::string(prefix)]++);
  params_.params.push_back({name, sbpl::CanonicalMacosPath(value), role, "", ""});
  return name;
}

std::string SbplWriter::AddDerivedParam(const std::string& base, std::string_view relative, ParamRole role) {
  size_t index = 0;
  for (const auto& param : params_.params) index += param.base == base && param.role == role;
  std::string name = base + (role == ParamRole::kProtected ? "_PROTECTED_" : "_ANCESTOR_") + std::to_string(index);
  std::string base_value;
  for (const auto& param : params_.params) {
    if (param.name == base) base_value = param.value;
  }
  params_.params.push_back({name, base_value + "/" + std::string(relative), role, base, std::string(relative)});
  return name;
}

void SbplWriter::Header() {
  text_ += "(version 1)\n";
  text_ += "; Generated by cocoon " COCOON_VERSION_STRING ". Every path is a parameter: see macos.params.json.\n";
  text_ += "(deny default (with message " + Quote("cocoon:" + SanitizedTag(policy_.name)) + "))\n";
  // Seatbelt filters no system calls; a policy that refuses every exec or
  // every fork/clone loses the whole operation here (SyscallRules warns).
  if (!PolicyDenies(policy_, SyscallCapability::kExec)) text_ += "(allow process-exec)\n";
  if (!PolicyDenies(policy_, SyscallCapability::kFork)) text_ += "(allow process-fork)\n";
  text_ += "(allow signal (target same-sandbox))\n";
  text_ += "(allow process-info* (target same-sandbox))\n";
  text_ += "(allow sysctl-read)\n";
  // libinfo (getpwuid) and the logging daemon; without them libc calls fail.
  text_ += "(allow mach-lookup (global-name \"com.apple.system.opendirectoryd.libinfo\")"
           " (global-name \"com.apple.system.logger\"))\n";
}

void SbplWriter::SystemReads() {
  text_ += "(allow file-read*";
  for (auto path : kSystemReadLiterals) text_ += " (literal " + Quote(path) + ")";
  for (auto path : kSystemReadSubpaths) text_ += " (subpath " + Quote(path) + ")";
  text_ += ")\n";
  text_ += "(allow file-read* file-write-data (literal \"/dev/null\") (literal \"/dev/zero\"))\n";
  text_ += "(allow file-read* (literal \"/dev/random\") (literal \"/dev/urandom\"))\n";
  if (policy_.filesystem.devices.tty == ir::DeviceAccess::kAllowed) {
    text_ += "(allow file-read* file-write* file-ioctl (literal \"/dev/tty\"))\n";
  }
  if (policy_.filesystem.devices.gpu == ir::DeviceAccess::kAllowed) {
    warnings_.push_back("macos: " + DeviceRequest(policy_, "gpu") +
                        " has no Seatbelt equivalent here; GPU access stays denied");
  }
  if (policy_.filesystem.devices.kvm == ir::DeviceAccess::kAllowed) {
    warnings_.push_back("macos: " + DeviceRequest(policy_, "kvm") +
                        " has no macOS equivalent (KVM is Linux's hypervisor interface); nothing is granted");
  }
}

void SbplWriter::PolicyReads() {
  if (policy_.filesystem.root == ir::RootKind::kRootfs) {
    std::string system;
    for (std::string_view path : kSystemReadSubpaths) system += (system.empty() ? "" : ", ") + std::string(path);
    for (std::string_view path : kSystemReadLiterals) system += ", " + std::string(path);
    warnings_.push_back("macos: 'root rootfs " + policy_.filesystem.rootfs + "'" +
                        AtPolicyLine(policy_, "filesystem.root") +
                        " has no macOS equivalent: the sandbox sees the host's own file system, not that tree; it "
                        "may read the listed read-only paths, its writable roots, and what every macOS process "
                        "needs (" + system + ", /dev/null, /dev/zero, /dev/random, /dev/urandom)");
  }
  std::vector<std::string> names;
  for (const ir::Mount& mount : policy_.filesystem.mounts) {
    if (mount.kind != ir::MountKind::kReadOnly) continue;
    names.push_back(AddParam("READ_ROOT", mount.source.empty() ? mount.target : mount.source, ParamRole::kReadRoot));
  }
  if (policy_.runtime) {
    for (const std::string& interpreter : policy_.runtime->interpreters) {
      names.push_back(AddParam("READ_FILE", interpreter, ParamRole::kReadLiteral));
    }
  }
  if (names.empty()) return;
  text_ += "(allow file-read*";
  for (const std::string& name : names) {
    const bool literal = name.rfind("READ_FILE_", 0) == 0;
    text_ += std::string(literal ? " (literal" : " (subpath") + " (param " + Quote(name) + "))";
  }
  text_ += ")\n";
}

// `host_path` is where Seatbelt sees the root (the bind source; for the
// work dir and tmpfs mounts the path the launcher may override),
// `sandbox_path` where the policy puts it.
void SbplWriter::WritableRoot(std::string_view prefix, const std::string& host_path, const std::string& sandbox_path,
                              ParamRole role) {
  const std::string name = role == ParamRole::kWorkDir ? std::string(prefix) : AddParam(prefix, host_path, role);
  if (role == ParamRole::kWorkDir) params_.params.push_back({name, sbpl::CanonicalMacosPath(host_path), role, "", ""});
  std::vector<std::string> relatives(std::begin(kProtectedInWritableRoots), std::end(kProtectedInWritableRoots));
  auto protect = [&relatives](std::string relative) {
    if (!relative.empty() && std::find(relatives.begin(), relatives.end(), relative) == relatives.end()) {
      relatives.push_back(std::move(relative));
    }
  };
  // Read-only paths inside this writable root stay unwritable. Seatbelt has
  // no mounts (host_paths.h), so both places count: the read-only data
  // itself where its host source lies in the root (`readonly
  // /tmp/shared/models as /models` under `tmpfs /tmp`: /private/tmp/shared/
  // models), and the part of the root that the read-only mount covers on
  // Linux (`readonly /opt/vendor as /work/vendor`: WORK_DIR/vendor).
  for (const ir::Mount& mount : policy_.filesystem.mounts) {
    if (mount.kind != ir::MountKind::kReadOnly) continue;
    protect(RelativeBelow(mount.source.empty() ? mount.target : mount.source, host_path));
    protect(RelativeBelow(mount.target, sandbox_path));
  }
  for (const std::string& hidden : policy_.filesystem.hidden) {
    protect(RelativeBelow(HostPathOf(policy_.filesystem, hidden), host_path));
  }
  std::vector<std::string> protected_names;
  for (const std::string& relative : relatives) protected_names.push_back(AddDerivedParam(name, relative));
  // The directories between the root and a protected path (.git for
  // .git/hooks), and the root itself: renaming one would carry the
  // protected path to a name no rule protects (mv .git .g; write .g/hooks;
  // mv .g .git). ProtectedAncestors denies that.
  std::vector<std::string> ancestors;
  for (const std::string& relative : relatives) {
    for (size_t slash = relative.find('/'); slash != std::string::npos; slash = relative.find('/', slash + 1)) {
      std::string ancestor = relative.substr(0, slash);
      const bool listed = std::find(ancestors.begin(), ancestors.end(), ancestor) != ancestors.end() ||
                          std::find(relatives.begin(), relatives.end(), ancestor) != relatives.end();
      if (!listed) ancestors.push_back(std::move(ancestor));
    }
  }
  unrenamable_roots_.push_back(name);
  for (const std::string& ancestor : ancestors) {
    protected_ancestors_.push_back(AddDerivedParam(name, ancestor, ParamRole::kProtectedAncestor));
  }
  text_ += "(allow file-read* (subpath (param " + Quote(name) + ")))\n";
  text_ += "(allow file-write* (require-all (subpath (param " + Quote(name) + "))";
  // Both forms: `literal` stops replacing the protected entry itself (a
  // symlink or file planted in its place), `subpath` everything below it.
  for (const std::string& p : protected_names) {
    text_ += "\n    (require-not (literal (param " + Quote(p) + ")))";
    text_ += " (require-not (subpath (param " + Quote(p) + ")))";
  }
  text_ += "))\n";
  writable_paths_.push_back(host_path);
}

void SbplWriter::WritableRoots() {
  const ir::WorkDir& work = policy_.filesystem.work;
  WritableRoot("WORK_DIR", work.path, work.path, ParamRole::kWorkDir);
  warnings_.push_back("macos: " + WorkStatement(policy_) + ": " +
                      (work.mode == ir::WorkMode::kStaged ? "Seatbelt cannot stage the work dir: " : "") +
                      "the sandbox writes WORK_DIR directly" + (work.quota_bytes != 0 ? ", with no quota" : "") +
                      ", and nothing checks what the run leaves there (symlinks, hardlinks, setuid files) as "
                      "`cocoon enforce` does; point WORK_DIR at a per-run copy and check it before using it");
  for (const ir::Mount& mount : policy_.filesystem.mounts) {
    if (mount.kind == ir::MountKind::kWritable) {
      WritableRoot("WRITE_ROOT", mount.source.empty() ? mount.target : mount.source, mount.target,
                   ParamRole::kWriteRoot);
    } else if (mount.kind == ir::MountKind::kTmpfs) {
      const std::string name = "TMP_DIR_" + std::to_string(counters_["TMP_DIR"]);
      WritableRoot("TMP_DIR", mount.target, mount.target, ParamRole::kTmpDir);
      // Seatbelt has no tmpfs: the parameter's default is the host path itself.
      warnings_.push_back("macos: " + TmpfsStatement(policy_, mount) + " is not a fresh, capped tmpfs: " + name +
                          " defaults to the host's own " + sbpl::CanonicalMacosPath(mount.target) +
                          ", shared with the host and what it already holds, with no size cap; point " + name +
                          " at a private per-run directory (sandbox-exec -D, ApplyMacosSandbox overrides)");
    }
  }
}

// The network, less what the policy's syscall rules refuse outright: no
// socket is no network at all, no connect no outbound (and no name service,
// which only serves connecting), no bind or listen no local endpoint.
// After every writable root (the last matching rule wins, and one root may
// lie in another): a protected path's ancestors inside a writable root
// cannot be renamed or removed (file-write-unlink is what rename(2) needs
// on its source), nor made anew (a directory prepared elsewhere, renamed
// into place, would bring its own .git/hooks); the roots themselves cannot
// be renamed. Writing inside them is untouched: Seatbelt checks a created
// file's own path.
void SbplWriter::ProtectedAncestors() {
  if (!unrenamable_roots_.empty()) {
    text_ += "(deny file-write-unlink";
    for (const std::string& name : unrenamable_roots_) text_ += "\n    (literal (param " + Quote(name) + "))";
    text_ += ")\n";
  }
  if (!protected_ancestors_.empty()) {
    text_ += "(deny file-write-create file-write-unlink";
    for (const std::string& name : protected_ancestors_) text_ += "\n    (literal (param " + Quote(name) + "))";
    text_ += ")\n";
  }
}

void SbplWriter::Network() {
  const ir::Network& net = policy_.network;
  if (net.mode == ir::NetworkMode::kOff || PolicyDenies(policy_, SyscallCapability::kSocket)) return;
  const bool outbound = !PolicyDenies(policy_, SyscallCapability::kConnect);
  if (net.mode == ir::NetworkMode::kOn) {
    if (outbound) text_ += "(allow network-outbound)\n";
    text_ += "(allow system-socket)\n";
    std::string local;
    if (!PolicyDenies(policy_, SyscallCapability::kBind)) local += " network-bind";
    if (!PolicyDenies(policy_, SyscallCapability::kListen)) local += " network-inbound";
    if (!local.empty()) text_ += "(allow" + local + " (local ip \"localhost:*\"))\n";
    if (outbound) {
      text_ += "(allow mach-lookup (global-name \"com.apple.dnssd.service\")"
               " (global-name \"com.apple.SystemConfiguration.DNSConfiguration\"))\n";
    }
    return;
  }
  if (!outbound) return;
  // A remote allow-list cannot be expressed without opening the port to
  // every host (ClassifyHost). Fail closed: only loopback endpoints are
  // allowed, and the others need a local proxy (the Codex CLI does the same).
  std::string rules;
  for (const ir::NetworkEndpoint& endpoint : net.allow) {
    const std::string port = std::to_string(endpoint.port);
    const std::string entry = (endpoint.host.find(':') != std::string::npos ? "[" + endpoint.host + "]"
                                                                             : endpoint.host) + ":" + port;
    switch (ClassifyHost(endpoint.host)) {
      case SeatbeltHost::kOneLoopback:
        warnings_.push_back("macos: network allow " + entry + AtPolicyLine(policy_, "network") +
                            " is widened to (remote ip \"localhost:" + port + "\"), both 127.0.0.1 and [::1] on port " +
                            port + ": Seatbelt's remote ip filter takes no address, only \"localhost\" or \"*\"");
        [[fallthrough]];
      case SeatbeltHost::kLocalhost:
        rules += " (remote ip " + Quote("localhost:" + port) + ")";
        break;
      case SeatbeltHost::kOtherLoopback:
        warnings_.push_back("macos: network allow " + entry + AtPolicyLine(policy_, "network") +
                            " stays blocked: Seatbelt's remote ip filter takes no address, and its \"localhost\" "
                            "is 127.0.0.1 and [::1], not this one (use 127.0.0.1 or localhost)");
        break;
      case SeatbeltHost::kRemote:
        warnings_.push_back("macos: Seatbelt cannot filter by remote host; " + entry +
                            " stays blocked (route it through a loopback proxy)");
        break;
    }
  }
  if (!rules.empty()) text_ += "(allow system-socket)\n(allow network-outbound" + rules + ")\n";
}

void SbplWriter::Hidden() {
  if (policy_.filesystem.hidden.empty()) return;
  text_ += "(deny file-read* file-write*";
  for (const std::string& hidden : policy_.filesystem.hidden) {
    // Seatbelt sees host paths: `hide /app/secrets` under `readonly /opt/app
    // as /app` must deny /opt/app/secrets (host_paths.h).
    const std::string name = AddParam("HIDDEN", HostPathOf(policy_.filesystem, hidden), ParamRole::kHidden);
    text_ += "\n    (literal (param " + Quote(name) + ")) (subpath (param " + Quote(name) + "))";
  }
  text_ += ")\n";
}

void SbplWriter::Limits() {
  const ir::Limits& limits = policy_.limits;
  params_.rlimits.push_back({"RLIMIT_CORE", 0, 0});
  if (limits.cpu_time_ms.set) {
    const uint64_t seconds = (limits.cpu_time_ms.value + 999) / 1000;
    // SIGXCPU at the soft limit, SIGKILL at the hard one (setrlimit(2)).
    params_.rlimits.push_back({"RLIMIT_CPU", seconds, seconds + 1});
  }
  if (limits.file_size_bytes.set) {
    params_.rlimits.push_back({"RLIMIT_FSIZE", limits.file_size_bytes.value, limits.file_size_bytes.value});
  }
  if (limits.open_files.set) {
    params_.rlimits.push_back({"RLIMIT_NOFILE", limits.open_files.value, limits.open_files.value});
  }
  if (limits.processes.set) {
    // macOS counts RLIMIT_NPROC per real uid across the whole machine.
    params_.rlimits.push_back({"RLIMIT_NPROC", limits.processes.value, limits.processes.value});
    warnings_.push_back("macos: the process limit is RLIMIT_NPROC, which counts every process of the user");
  }
  if (limits.wall_time_ms.set) params_.wall_time_ms = limits.wall_time_ms.value;
  auto unenforceable = [&](const ir::Limit& limit, std::string_view what) {
    if (limit.set) warnings_.push_back("macos: no Seatbelt or rlimit mechanism enforces the " + std::string(what) +
                                       " limit; only the launcher can watch it");
  };
  unenforceable(limits.memory_bytes, "memory");
  unenforceable(limits.disk_bytes, "disk");
  unenforceable(limits.cpu_percent, "cpu");
}

// One warning, at the syscalls block, for the profile's own rules that the
// profile above does not carry out (syscall_fidelity.h).
void SbplWriter::SyscallRules() {
  std::vector<ExpressedDenial> expressed;
  auto map = [&](SyscallCapability capability, std::string how, Fidelity fidelity = Fidelity::kExact) {
    if (PolicyDenies(policy_, capability)) expressed.push_back({capability, std::move(how), fidelity});
  };
  map(SyscallCapability::kExec, "no process-exec");
  map(SyscallCapability::kFork, "no process-fork (threads stay allowed)", Fidelity::kPartial);
  map(SyscallCapability::kSocket, "no network");
  map(SyscallCapability::kConnect, "no network-outbound");
  map(SyscallCapability::kBind, "no network-bind");
  map(SyscallCapability::kListen, "no network-inbound");
  std::string warning = UnexpressedSyscallsWarning(policy_, "macos", expressed, "Seatbelt filters no system calls");
  if (!warning.empty()) warnings_.push_back(std::move(warning));
}

Result<std::vector<Artifact>> SbplWriter::Build() {
  Header();
  SystemReads();
  PolicyReads();
  WritableRoots();
  ProtectedAncestors();
  Network();
  Hidden();
  Limits();
  SyscallRules();
  for (const auto& param : params_.params) {
    if (!sbpl::IsValidParamName(param.name)) return InternalError("sbpl: generated bad parameter " + param.name);
  }
  std::vector<Artifact> out;
  out.push_back(MakeArtifact("macos", "macos.sb", "application/vnd.apple.sbpl", std::move(text_)));
  out.push_back(MakeArtifact("macos", "macos.params.json", "application/json", sbpl::SbplParamsToJson(params_)));
  out[0].warnings = warnings_;
  return out;
}

}  // namespace

Result<std::vector<Artifact>> CompileSbpl(const ir::Policy& policy) {
  SbplWriter writer(policy);
  return writer.Build();
}

}  // namespace cocoon::backends
