// Windows back end: IR -> windows.json.
//
// The model (Chromium sandbox/win, the Codex Windows sandbox):
//  - a Job Object at Chromium's lockdown level: kill on job close, die on
//    unhandled exception, process/memory/CPU-time limits, all UI restrictions,
//    and never a breakaway flag;
//  - CreateRestrictedToken(DISABLE_MAX_PRIVILEGE | LUA_TOKEN | WRITE_RESTRICTED)
//    whose only restricting SID is the sandbox SID, at Low integrity: every
//    write must then be granted to the sandbox SID explicitly;
//  - per path, ACEs for that SID (deny before allow) plus a mandatory label:
//    writable roots get a Low label (a Low process cannot "write up"), hidden
//    paths a Medium no-read-up label (a Low process cannot read them at all).
#include <string>
#include <vector>

#include "compiler/backends/artifact.h"
#include "compiler/backends/host_paths.h"
#include "compiler/backends/policy_origin.h"
#include "compiler/backends/syscall_fidelity.h"
#include "compiler/common/digest.h"
#include "compiler/backends/windows/sddl.h"
#include "compiler/backends/windows/windows_plan.h"

namespace cocoon::backends {
namespace {

// A capability-style SID (S-1-15-3-1024-<8 RIDs>) derived from the SHA-256
// of the profile name: stable per profile, so golden files and rollback notes
// agree, and distinct from any real account.
std::string DeriveSandboxSid(std::string_view name) {
  const std::string hex = Sha256Hex("cocoon-sandbox-sid:" + std::string(name));
  std::string sid = "S-1-15-3-1024";
  for (size_t i = 0; i < 8; ++i) {
    sid += "-" + std::to_string(std::stoul(hex.substr(i * 8, 8), nullptr, 16));
  }
  return sid;
}

using windows::AceType;
using windows::PathAcl;
using windows::PathRole;

struct RoleAces {
  std::vector<std::pair<AceType, std::string_view>> aces;
  std::string_view label;  // "" = keep
};

// The ACE sets per role. Order matters: deny ACEs first (Windows evaluates a
// DACL in order and canonical order puts explicit denies before allows).
RoleAces AcesFor(PathRole role) {
  switch (role) {
    case PathRole::kWork:
    case PathRole::kTemp:
    case PathRole::kWritable:
      return {{{AceType::kDeny, windows::kRightsChangeAcl}, {AceType::kAllow, windows::kRightsModify}},
              "(ML;OICI;NW;;;LW)"};
    case PathRole::kReadOnly:
      return {{{AceType::kDeny, windows::kRightsWrite},
               {AceType::kDeny, windows::kRightsDelete},
               {AceType::kAllow, windows::kRightsReadExecute}},
              ""};
    case PathRole::kHidden:
      return {{{AceType::kDeny, windows::kRightsAll}}, "(ML;OICI;NRNWNX;;;ME)"};
  }
  return {};
}

Result<PathAcl> MakePathAcl(std::string policy_path, std::string location, PathRole role, bool optional,
                            const std::string& sid) {
  PathAcl acl{std::move(policy_path), std::move(location), role, optional, {}, {}, "", ""};
  RoleAces role_aces = AcesFor(role);
  for (const auto& [type, rights] : role_aces.aces) {
    COCOON_ASSIGN_OR_RETURN(std::string ace, windows::Ace(type, rights, sid));
    (type == AceType::kDeny ? acl.deny_aces : acl.allow_aces).push_back(std::move(ace));
  }
  acl.label_ace = std::string(role_aces.label);
  acl.sddl = "D:";
  for (const auto& ace : acl.deny_aces) acl.sddl += ace;
  for (const auto& ace : acl.allow_aces) acl.sddl += ace;
  if (!acl.label_ace.empty()) acl.sddl += "S:" + acl.label_ace;
  return acl;
}

void SetJobLimits(const ir::Limits& limits, windows::JobSettings& job) {
  auto flag = [&](uint32_t bit, const char* name) {
    job.limit_flags |= bit;
    job.limit_flag_names.push_back(name);
  };
  flag(windows::kLimitKillOnJobClose, "JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE");
  flag(windows::kLimitDieOnUnhandledException, "JOB_OBJECT_LIMIT_DIE_ON_UNHANDLED_EXCEPTION");
  flag(windows::kLimitPriorityClass, "JOB_OBJECT_LIMIT_PRIORITY_CLASS");
  job.priority_class = windows::kBelowNormalPriorityClass;
  if (limits.processes.set) {
    flag(windows::kLimitActiveProcess, "JOB_OBJECT_LIMIT_ACTIVE_PROCESS");
    job.active_process_limit = static_cast<uint32_t>(std::min<uint64_t>(limits.processes.value, UINT32_MAX));
  }
  if (limits.memory_bytes.set) {
    flag(windows::kLimitProcessMemory, "JOB_OBJECT_LIMIT_PROCESS_MEMORY");
    flag(windows::kLimitJobMemory, "JOB_OBJECT_LIMIT_JOB_MEMORY");
    job.process_memory_limit = job.job_memory_limit = limits.memory_bytes.value;
  }
  if (limits.cpu_time_ms.set) {
    flag(windows::kLimitJobTime, "JOB_OBJECT_LIMIT_JOB_TIME");
    job.per_job_user_time_100ns = limits.cpu_time_ms.value * 10000;  // 100 ns units
  }
  if (limits.cpu_percent.set) {
    job.cpu_rate_percent_of_one_cpu = static_cast<uint32_t>(std::min<uint64_t>(limits.cpu_percent.value, 100000));
  }
  job.ui_restrictions = windows::kUiAll;
  job.ui_restriction_names = {"JOB_OBJECT_UILIMIT_HANDLES",         "JOB_OBJECT_UILIMIT_READCLIPBOARD",
                              "JOB_OBJECT_UILIMIT_WRITECLIPBOARD",  "JOB_OBJECT_UILIMIT_SYSTEMPARAMETERS",
                              "JOB_OBJECT_UILIMIT_DISPLAYSETTINGS", "JOB_OBJECT_UILIMIT_GLOBALATOMS",
                              "JOB_OBJECT_UILIMIT_DESKTOP",         "JOB_OBJECT_UILIMIT_EXITWINDOWS"};
}

void SetToken(const std::string& sid, windows::TokenSettings& token) {
  token.restricted_token_flags =
      windows::kTokenDisableMaxPrivilege | windows::kTokenLuaToken | windows::kTokenWriteRestricted;
  token.restricted_token_flag_names = {"DISABLE_MAX_PRIVILEGE", "LUA_TOKEN", "WRITE_RESTRICTED"};
  token.restricting_sids = {sid};
  token.integrity_level = "low";
  token.integrity_sid = std::string(windows::kLowIntegritySid);
}

// Limits with no Windows mechanism. Required ones make the applier refuse.
void NoteUnenforced(const ir::Limits& limits, windows::WindowsPlan& plan, std::vector<std::string>& warnings) {
  auto note = [&](const ir::Limit& limit, const char* name) {
    if (!limit.set) return;
    if (limit.enforcement == ir::Enforcement::kRequired) {
      plan.unenforced_required_limits.push_back(name);
      warnings.push_back(std::string("windows: required limit '") + name +
                         "' has no Windows mechanism; the applier refuses to run (mark it best_effort to allow)");
    } else {
      plan.unenforced_best_effort_limits.push_back(name);
    }
  };
  note(limits.open_files, "open_files");
  note(limits.file_size_bytes, "file_size");
}

// `devices { ... on }`: Windows has no device nodes and the plan grants
// none, so each one the policy turns on is reported, never dropped silently.
void WarnUngrantedDevices(const ir::Policy& policy, std::vector<std::string>& warnings) {
  const ir::Devices& wanted = policy.filesystem.devices;
  if (wanted.gpu == ir::DeviceAccess::kAllowed) {
    warnings.push_back("windows: " + DeviceRequest(policy, "gpu") +
                       " is not granted: the Windows plan has no device grants; the sandbox gets only the GPU access "
                       "its Low-integrity restricted token already has");
  }
  if (wanted.tty == ir::DeviceAccess::kAllowed) {
    warnings.push_back("windows: " + DeviceRequest(policy, "tty") +
                       " has no Windows equivalent: there is no /dev/tty; a console program shares the console "
                       "cocoon-windows-run runs in, whatever this setting says");
  }
  if (wanted.kvm == ir::DeviceAccess::kAllowed) {
    warnings.push_back("windows: " + DeviceRequest(policy, "kvm") +
                       " has no Windows equivalent (KVM is Linux's hypervisor interface); nothing is granted");
  }
}

// Neither root is confined for reads. The token is WRITE_RESTRICTED, so its
// restricting SID (the sandbox SID) is checked for write access only
// (CreateRestrictedToken, "WRITE_RESTRICTED"), and reads are checked against
// the user's own SIDs; Low integrity stops writes up but not reads up
// (the default mandatory policy is NO_WRITE_UP). So the sandbox reads
// whatever the user can, not only the read-only paths; the hide paths are
// the exception: their Medium label carries NO_READ_UP.
void WarnUnconfinedReads(const ir::Policy& policy, std::vector<std::string>& warnings) {
  const std::string where = AtPolicyLine(policy, "filesystem.root");
  const std::string reads =
      "the sandbox can read every file the user can (e.g. %USERPROFILE%\\.ssh), not only the read-only paths: its "
      "write-restricted token has the sandbox SID checked for writes only, and Low integrity may read Medium "
      "files; only the 'hide' paths (a Medium no-read-up label) are unreadable";
  if (policy.filesystem.root == ir::RootKind::kRootfs) {
    warnings.push_back("windows: 'root rootfs " + policy.filesystem.rootfs + "'" + where +
                       " has no Windows equivalent; the host file system stays visible, and " + reads);
  } else {
    warnings.push_back("windows: 'root host'" + where + " does not confine reads on Windows: " + reads);
  }
}

// The work dir and every tmpfs are per-run directories the launcher makes
// (%COCOON_WORK_DIR%, one %COCOON_TEMP_DIR% for all tmpfs mounts): the
// sandbox writes them in place, nothing caps their size, and nothing checks
// what the run leaves in the work dir, unlike Linux's staged, capped and
// verified work dir and its separate, sized tmpfs mounts. Said at each line.
void WarnUnstagedWorkAndTemp(const ir::Policy& policy, std::vector<std::string>& warnings) {
  const ir::WorkDir& work = policy.filesystem.work;
  warnings.push_back("windows: " + WorkStatement(policy) + ": the sandbox writes %COCOON_WORK_DIR% directly" +
                     (work.mode == ir::WorkMode::kStaged ? ", not a staged copy" : "") +
                     ", with no size cap (supervisor.work_quota_bytes and disk_bytes are for a launcher: "
                     "cocoon-windows-run enforces neither), and nothing checks what the run leaves there "
                     "(links, junctions) as `cocoon enforce` does");
  std::vector<const ir::Mount*> tmpfs;
  for (const ir::Mount& mount : policy.filesystem.mounts) {
    if (mount.kind == ir::MountKind::kTmpfs) tmpfs.push_back(&mount);
  }
  for (const ir::Mount* mount : tmpfs) {
    std::string others;
    for (const ir::Mount* other : tmpfs) {
      if (other != mount) others += (others.empty() ? "" : ", ") + other->target;
    }
    warnings.push_back("windows: " + TmpfsStatement(policy, *mount) +
                       " is the run's %COCOON_TEMP_DIR%, a directory with no size cap" +
                       (others.empty() ? std::string()
                                       : ", and the same directory as " + others +
                                             ": their contents are not kept apart and their sizes are lost"));
  }
}

Status AddPaths(const ir::Policy& policy, const std::string& sid, windows::WindowsPlan& plan) {
  const ir::Filesystem& fs = policy.filesystem;
  COCOON_ASSIGN_OR_RETURN(PathAcl work, MakePathAcl(fs.work.path, std::string(windows::kWorkDirPlaceholder),
                                                    PathRole::kWork, false, sid));
  plan.paths.push_back(std::move(work));
  for (const ir::Mount& mount : fs.mounts) {
    const std::string& host = mount.source.empty() ? mount.target : mount.source;
    PathRole role = mount.kind == ir::MountKind::kReadOnly   ? PathRole::kReadOnly
                    : mount.kind == ir::MountKind::kWritable ? PathRole::kWritable
                                                             : PathRole::kTemp;
    std::string location = role == PathRole::kTemp ? std::string(windows::kTempDirPlaceholder) : host;
    COCOON_ASSIGN_OR_RETURN(PathAcl acl, MakePathAcl(mount.target, location, role, mount.optional, sid));
    plan.paths.push_back(std::move(acl));
  }
  for (const std::string& hidden : fs.hidden) {
    // The ACL goes on the host path: Windows has no mounts, so under
    // `readonly /opt/app as /app` the sandbox path /app names nothing (host_paths.h).
    COCOON_ASSIGN_OR_RETURN(PathAcl acl,
                            MakePathAcl(hidden, HostPathOf(fs, hidden), PathRole::kHidden, true, sid));
    plan.paths.push_back(std::move(acl));
  }
  return Status::Ok();
}

// The policy's syscall rules, as far as a job object and the network mode
// carry them (syscall_fidelity.h): Windows starts every program, and every
// copy of one, as a new process, so refusing all of exec or all of
// fork/clone is an active-process limit of 1 (the first process only);
// refusing socket or connect is network off (which cocoon-windows-run then
// refuses to run: it has no filtering-platform rules yet). The rest is
// warned about once, at the syscalls block.
void ApplySyscallRules(const ir::Policy& policy, windows::WindowsPlan& plan, std::vector<std::string>& warnings) {
  std::vector<ExpressedDenial> expressed;
  const bool no_exec = PolicyDenies(policy, SyscallCapability::kExec);
  const bool no_fork = PolicyDenies(policy, SyscallCapability::kFork);
  if (no_exec || no_fork) {
    if ((plan.job.limit_flags & windows::kLimitActiveProcess) == 0) {
      plan.job.limit_flags |= windows::kLimitActiveProcess;
      plan.job.limit_flag_names.push_back("JOB_OBJECT_LIMIT_ACTIVE_PROCESS");
    }
    plan.job.active_process_limit = 1;
  }
  const std::string one = "an active-process limit of 1 (no process but the first";
  if (no_exec) expressed.push_back({SyscallCapability::kExec, one + ")"});
  if (no_fork) expressed.push_back({SyscallCapability::kFork, one + "; threads stay allowed)", Fidelity::kPartial});
  for (SyscallCapability capability : {SyscallCapability::kSocket, SyscallCapability::kConnect}) {
    if (!PolicyDenies(policy, capability)) continue;
    plan.network_mode = "off";
    plan.network_allow.clear();
    expressed.push_back({capability, "network off"});
  }
  std::string warning = UnexpressedSyscallsWarning(policy, "windows", expressed, "a Windows job filters no system calls");
  if (!warning.empty()) warnings.push_back(std::move(warning));
}

}  // namespace

Result<std::vector<Artifact>> CompileWindows(const ir::Policy& policy) {
  windows::WindowsPlan plan;
  std::vector<std::string> warnings;
  plan.profile = policy.name;
  plan.environment = policy.environment;
  plan.sandbox_sid = DeriveSandboxSid(policy.name);
  SetJobLimits(policy.limits, plan.job);
  SetToken(plan.sandbox_sid, plan.token);
  COCOON_RETURN_IF_ERROR(AddPaths(policy, plan.sandbox_sid, plan));
  plan.network_mode = policy.network.mode == ir::NetworkMode::kOff  ? "off"
                      : policy.network.mode == ir::NetworkMode::kOn ? "on"
                                                                    : "allow_list";
  for (const auto& endpoint : policy.network.allow) plan.network_allow.push_back({endpoint.host, endpoint.port});
  plan.wall_time_ms = policy.limits.wall_time_ms.set ? policy.limits.wall_time_ms.value : 0;
  plan.output_bytes = policy.limits.output_bytes.set ? policy.limits.output_bytes.value : 0;
  plan.disk_bytes = policy.limits.disk_bytes.set ? policy.limits.disk_bytes.value : 0;
  plan.work_quota_bytes = policy.filesystem.work.quota_bytes;
  ApplySyscallRules(policy, plan, warnings);
  WarnUnstagedWorkAndTemp(policy, warnings);
  NoteUnenforced(policy.limits, plan, warnings);
  WarnUngrantedDevices(policy, warnings);
  WarnUnconfinedReads(policy, warnings);
  std::vector<Artifact> out;
  out.push_back(MakeArtifact("windows", "windows.json", "application/vnd.cocoon.windows+json",
                             windows::WindowsPlanToJson(plan)));
  out[0].warnings = std::move(warnings);
  return out;
}

}  // namespace cocoon::backends
