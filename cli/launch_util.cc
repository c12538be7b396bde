#include "cli/launch_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#include <sys/random.h>

#include "cli/host_overlap_guard.h"
#include "cli/launch_dynamic.h"
#include "cli/policy_compile.h"
#include "compiler/driver/manifest.h"
#include "enforcer/artifact_cache.h"
#include "enforcer/owned_fd.h"
#include "enforcer/spare_child.h"
#include "enforcer/started_child.h"

namespace cocoon::cli {
namespace {

// LoadPolicyArtifacts's early start, between reading the plan and parsing
// it. A hint that turns out wrong (LaunchPlanFromJson is the authority)
// costs a second child, never a different run (Sandbox::Run checks Fits).
void StartChildBeforeParsing(std::string_view plan_json, LaunchRequest* launch) {
  if (launch == nullptr || (!launch->audit.log_path.empty() && LaunchDynamicExecsFullCocoon())) return;
  launch->started_child.reset();  // one child per launch: never two guards alive at once
  std::optional<ir::NetworkMode> network = backends::PeekLaunchPlanNetwork(plan_json);
  if (!network || *network == ir::NetworkMode::kAllowList) return;
  std::optional<enforcer::ChildStartOptions> options = enforcer::StartedChild::OptionsBeforePlan(
      *network, launch->stdin_mode, launch->signals, !launch->work_dir.empty());
  if (!options) return;
  if (launch->spare_children != nullptr) launch->started_child = launch->spare_children->Take(*options);
  if (launch->started_child) return;
  auto started = enforcer::StartedChild::Start(*options);
  if (started.ok()) launch->started_child = std::move(*started);  // else Run starts one, and says why it failed
}

// A compiled dir decides what a sandbox may do, as a cache entry does: it,
// each directory above it and the files read from it must be owned by the
// caller or root and writable by nobody else (the cache's walk,
// OpenTrustedCacheDir), else another user could have written the policy
// that runs. The dir is resolved, checked and opened first, and everything
// is read through that fd: a check by path after a load by path let
// another user's symlink in the path point at their dir for the load and
// at a trusted one for the check. The dir being trusted, only the caller or
// root can swap a file in it, so its files are checked by fd after.
constexpr const char* kUntrustedCompiledDirAdvice =
    "; refusing to run it: compile into a directory of your own (`cocoon compile POLICY -o DIR`), or make it and its "
    "files yours (or root's) and not group- or world-writable";

Result<int> OpenTrustedCompiledDir(const std::string& dir, std::string& resolved) {
  char real[PATH_MAX];
  if (realpath(dir.c_str(), real) == nullptr) return ErrnoError("open compiled dir " + dir);
  resolved = real;
  Result<int> fd = enforcer::OpenTrustedCacheDir(real, enforcer::CacheDirCreation::kExisting);
  if (!fd.ok()) {
    return PermissionDeniedError("compiled dir " + dir + ": " + fd.status().message() + kUntrustedCompiledDirAdvice);
  }
  return fd;
}

Status CheckCompiledFilesAreTrusted(int dir_fd, const std::string& dir, const std::vector<std::string>& files) {
  for (const std::string& name : files) {
    struct stat st{};
    const bool ok = fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
    const bool owner_ok = ok && (st.st_uid == geteuid() || st.st_uid == 0);
    if (!owner_ok || (st.st_mode & 022) != 0) {
      return PermissionDeniedError(
          dir + "/" + name +
          (!ok ? " cannot be inspected"
               : !owner_ok ? " is owned by uid " + std::to_string(st.st_uid) + ", not by you or root"
                           : " is writable by group or others") +
          kUntrustedCompiledDirAdvice);
    }
  }
  return Status::Ok();
}

// `cocoon compile` output: through the driver's loader (manifest.h), as
// docs/targets.md says every consumer does. Only the linux artifacts are
// read and hashed (a launch needs nothing else, and this is the
// precompiled launch's path), each opened with O_NOFOLLOW from the
// directory's fd; the whole manifest is checked. A compiled dir holds one
// profile: `--profile` must name it (another is refused, never ignored).
Result<PolicyArtifacts> LoadCompiledDir(const std::string& dir, const std::string& profile, LaunchRequest* launch) {
  constexpr const char* kPlan = "linux.plan.json";
  constexpr const char* kBpf = "linux.seccomp.bpf";
  constexpr const char* kSidecar = "linux.seccomp.json";
  driver::LoadOptions options;
  options.only = {kPlan, kBpf, kSidecar};
  std::string resolved;  // resolved once: the path checked is the path recorded
  COCOON_ASSIGN_OR_RETURN(int trusted_fd, OpenTrustedCompiledDir(dir, resolved));
  enforcer::OwnedFd trusted(trusted_fd);
  Result<driver::CompiledPolicy> compiled = driver::LoadCompiledDirAt(trusted.get(), dir, options);
  if (!compiled.ok()) {
    if (compiled.status().code() == ErrorCode::kInvalidArgument || compiled.status().code() == ErrorCode::kNotFound) {
      return InvalidArgumentError(compiled.status().message() + "; refusing to run it");
    }
    return DataLossError(dir + ": " + compiled.status().message() + "; refusing to run it");
  }
  for (const driver::ManifestEntry& entry : compiled->manifest.artifacts) {
    const bool ours = entry.path == kPlan || entry.path == kBpf || entry.path == kSidecar;
    if (ours && entry.target != "linux") {
      return DataLossError(dir + "/manifest.json lists " + entry.path + " for target " + entry.target +
                           ", not linux; refusing to run it");
    }
  }
  if (!profile.empty() && profile != compiled->manifest.profile) {
    return InvalidArgumentError("--profile " + profile + ": " + dir + " was compiled from profile '" +
                                compiled->manifest.profile + "' (its manifest.json), and holds no other; drop " +
                                "--profile, or compile that profile with `cocoon compile POLICY --profile " + profile +
                                " -o DIR`, or enforce the policy file itself");
  }
  COCOON_RETURN_IF_ERROR(
      CheckCompiledFilesAreTrusted(trusted.get(), dir, {std::string(driver::kManifestFile), kPlan, kBpf, kSidecar}));
  PolicyArtifacts artifacts;
  artifacts.origin = "dir";
  artifacts.profile = compiled->manifest.profile;
  artifacts.policy_path = dir;
  // The manifest's hashes sit beside what they check: whoever can write
  // the dir can rewrite both.
  artifacts.source_files.push_back(resolved);
  std::string plan_text = std::move(compiled->files[kPlan]);
  artifacts.seccomp_bpf = std::move(compiled->files[kBpf]);
  artifacts.seccomp_sidecar_json = std::move(compiled->files[kSidecar]);
  StartChildBeforeParsing(plan_text, launch);
  COCOON_ASSIGN_OR_RETURN(artifacts.plan, backends::LaunchPlanFromJson(plan_text));
  if (artifacts.plan.policy_name != compiled->manifest.profile) {
    return DataLossError(dir + "/manifest.json says profile '" + compiled->manifest.profile +
                         "' but linux.plan.json is profile '" + artifacts.plan.policy_name +
                         "'; refusing to run it: compile the policy again with `cocoon compile`");
  }
  return artifacts;
}

Result<PolicyArtifacts> LoadPolicyFileArtifacts(const std::string& policy, const std::string* text,
                                                const std::string& profile, LaunchRequest* launch);

std::string NewRunId() {
  unsigned char bytes[12];
  if (getrandom(bytes, sizeof(bytes), 0) != static_cast<ssize_t>(sizeof(bytes))) return std::to_string(getpid());
  static const char kHex[] = "0123456789abcdef";
  std::string id;
  for (unsigned char b : bytes) {
    id.push_back(kHex[b >> 4]);
    id.push_back(kHex[b & 15]);
  }
  return id;
}

}  // namespace

Result<PolicyArtifacts> LoadPolicyArtifacts(const std::string& policy, const std::string& profile,
                                            LaunchRequest* launch) {
  struct stat st;
  if (stat(policy.c_str(), &st) != 0) return ErrnoError("policy " + policy);
  if (S_ISDIR(st.st_mode)) return LoadCompiledDir(policy, profile, launch);

  return LoadPolicyFileArtifacts(policy, nullptr, profile, launch);
}

Result<PolicyArtifacts> LoadPolicyTextArtifacts(const std::string& path, const std::string& text,
                                                const std::string& profile, LaunchRequest* launch) {
  return LoadPolicyFileArtifacts(path, &text, profile, launch);
}

namespace {

// A policy file's artifacts: from the cache, or compiled and stored there.
// With `text`, the file's bytes are those (read by the caller).
Result<PolicyArtifacts> LoadPolicyFileArtifacts(const std::string& policy, const std::string* text,
                                                const std::string& profile, LaunchRequest* launch) {
  enforcer::ArtifactCache cache(enforcer::ArtifactCache::DefaultDir());
  std::string key = text != nullptr ? enforcer::ArtifactCache::KeyForText(policy, *text, profile)
                                    : enforcer::ArtifactCache::KeyFor(policy, profile);
  PolicyArtifacts artifacts;
  artifacts.policy_path = policy;
  artifacts.profile = profile;
  std::optional<enforcer::CompiledLinuxArtifacts> compiled = cache.Lookup(key);
  artifacts.origin = compiled ? "cache" : "compiled";
  if (!compiled) {
    COCOON_ASSIGN_OR_RETURN(auto fresh, text != nullptr ? CompilePolicyTextOnCacheMiss(policy, *text, profile)
                                                        : CompilePolicyOnCacheMiss(policy, profile));
    (void)cache.Store(key, fresh);  // an optimisation: a read-only cache is fine
    compiled = std::move(fresh);
  }
  StartChildBeforeParsing(compiled->plan_json, launch);
  COCOON_ASSIGN_OR_RETURN(artifacts.plan, backends::LaunchPlanFromJson(compiled->plan_json));
  artifacts.source_files = std::move(compiled->source_files);
  artifacts.shadowing_paths = std::move(compiled->shadowing_paths);
  artifacts.seccomp_bpf = std::move(compiled->seccomp_bpf);
  artifacts.seccomp_sidecar_json = std::move(compiled->seccomp_sidecar_json);
  return artifacts;
}

}  // namespace

namespace {

// `--copy data/` names the directory data, as cp does: the name the copy
// gets in the work dir, or empty when the path has none.
std::string CopyName(const std::string& copy) {
  std::string named = copy;
  while (named.size() > 1 && named.back() == '/') named.pop_back();
  std::string base = named.substr(named.find_last_of('/') == std::string::npos ? 0 : named.find_last_of('/') + 1);
  return base == "." || base == ".." ? "" : base;
}

std::string MountKindWord(backends::PlanMountKind kind) {
  switch (kind) {
    case backends::PlanMountKind::kBindReadOnly: return "read-only";
    case backends::PlanMountKind::kBindWritable: return "writable";
    case backends::PlanMountKind::kTmpfs: return "tmpfs";
    case backends::PlanMountKind::kMask: return "hide";
    default: return "policy";
  }
}

// An extra copy is staged into the work dir before the mounts are made: a
// mount at or above its destination hides it from the sandbox (and the
// host's work dir gets only an empty mount point back), one below it hides
// part of it. Refused before anything runs or is written, as `cocoon
// check` refuses a policy `copy` (checker.cc CheckCopiesUnderMounts).
Status CheckCopiesBesideMounts(const backends::LaunchPlan& plan, const std::vector<std::string>& copies) {
  auto work = std::find_if(plan.mounts.begin(), plan.mounts.end(),
                           [](const backends::PlanMount& m) { return m.kind == backends::PlanMountKind::kWork; });
  if (work == plan.mounts.end()) return Status::Ok();
  auto at_or_under = [](const std::string& path, const std::string& dir) {
    return path == dir || (path.size() > dir.size() && path.compare(0, dir.size() + 1, dir + "/") == 0);
  };
  for (const std::string& copy : copies) {
    const std::string name = CopyName(copy);
    if (name.empty()) continue;  // refused below with its own message
    const std::string inside = (work->target == "/" ? "" : work->target) + "/" + name;
    for (const backends::PlanMount& mount : plan.mounts) {
      if (mount.kind == backends::PlanMountKind::kWork) continue;
      // An optional bind whose source this host lacks is not mounted (the
      // child spec skips it), so it hides nothing.
      struct stat source_st;
      if (mount.optional && lstat(mount.source.c_str(), &source_st) != 0 && errno == ENOENT) continue;
      const bool covers = at_or_under(inside, mount.target);
      if (!covers && !at_or_under(mount.target, inside)) continue;
      const std::string the_mount = "the " + MountKindWord(mount.kind) + " mount of '" + mount.target + "'";
      return InvalidArgumentError(
          "--copy " + copy + ": copy to '" + name + "' lands at '" + inside + "', " +
          (covers ? "under " + the_mount + ": the mount hides the copy from the sandbox"
                  : "which holds " + the_mount + ": the mount hides that part of the copy from the sandbox") +
          ", and what it hides is lost; copy a path of another name, or mount on another target");
    }
  }
  return Status::Ok();
}

// The host path of each `hide` (a kMask mount): through the innermost bind
// that shows it (`hide /app/secrets` under `readonly /opt/app as /app`:
// /opt/app/secrets), else the path itself. A work dir or copy is checked
// against them (host_overlap_guard.h).
std::vector<std::string> HiddenHostPaths(const backends::LaunchPlan& plan) {
  auto at_or_under = [](const std::string& path, const std::string& dir) {
    return dir == "/" || path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 &&
                                         path[dir.size()] == '/');
  };
  std::vector<std::string> hidden;
  for (const backends::PlanMount& mask : plan.mounts) {
    // The optional masks are the defaults (/proc/kcore, /sys/firmware...),
    // in trees no work dir or copy may be in anyway.
    if (mask.kind != backends::PlanMountKind::kMask || mask.optional) continue;
    const backends::PlanMount* shown_by = nullptr;
    for (const backends::PlanMount& bind : plan.mounts) {
      const bool is_bind = bind.kind == backends::PlanMountKind::kBindReadOnly ||
                           bind.kind == backends::PlanMountKind::kBindWritable;
      if (is_bind && at_or_under(mask.target, bind.target) &&
          (shown_by == nullptr || bind.target.size() > shown_by->target.size())) {
        shown_by = &bind;
      }
    }
    if (shown_by == nullptr) {
      hidden.push_back(mask.target);
    } else {
      const std::string rest = mask.target.substr(shown_by->target == "/" ? 0 : shown_by->target.size());
      hidden.push_back(shown_by->source + (shown_by->source == "/" && !rest.empty() ? rest.substr(1) : rest));
    }
  }
  return hidden;
}

}  // namespace

Result<enforcer::Outcome> LaunchSandboxed(const PolicyArtifacts& artifacts, LaunchRequest request) {
  if (request.argv.empty()) return InvalidArgumentError("missing command: give it after `--`");
  // Before anything is staged into (or written to) the work dir.
  COCOON_RETURN_IF_ERROR(CheckCopiesBesideMounts(artifacts.plan, request.copies));
  if (!request.work_dir.empty()) {
    struct stat st;
    if (stat(request.work_dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return NotFoundError("work dir " + request.work_dir + " does not exist or is not a directory");
    }
  }
  // Before the audit log is opened: a refused path leaves no trace on disk.
  std::vector<std::string> bound_sources, writable_sources;
  for (const backends::PlanMount& mount : artifacts.plan.mounts) {
    if (mount.kind == backends::PlanMountKind::kBindReadOnly || mount.kind == backends::PlanMountKind::kBindWritable) {
      bound_sources.push_back(mount.source);
    }
    if (mount.kind == backends::PlanMountKind::kBindWritable) writable_sources.push_back(mount.source);
  }
  COCOON_ASSIGN_OR_RETURN(GuardedHostPaths guarded,
                          CheckHostPathsForLaunch({request.work_dir, request.work_dir_is_ours, request.copies,
                                                   std::move(bound_sources), std::move(writable_sources),
                                                   request.audit.log_path, request.audit.key_path,
                                                   artifacts.source_files, artifacts.shadowing_paths,
                                                   HiddenHostPaths(artifacts.plan)}));
  // The audit log is opened before anything runs: a run whose record cannot
  // be written is refused. Like the allow-list's resolver, it needs the
  // dynamic loader: the launcher hands over to cocoon-full here
  // (cli/launch_dynamic.h), before anything has started.
  std::unique_ptr<LaunchAuditLog> log;
  if ((!request.audit.log_path.empty() && LaunchDynamicExecsFullCocoon()) ||
      artifacts.plan.network == ir::NetworkMode::kAllowList) {
    // Both may exec cocoon-full: no child of ours may live on as its zombie.
    // (StartChildBeforeParsing starts none for them; a plan whose peeked
    // network mode disagreed with the parsed one could have.)
    if (request.started_child) request.started_child->Kill();
    request.started_child.reset();
  }
  if (!request.audit.log_path.empty()) {
    COCOON_ASSIGN_OR_RETURN(log, OpenLaunchAuditLog(request.audit));
  }
  enforcer::AllowListResolver resolver = nullptr;
  if (artifacts.plan.network == ir::NetworkMode::kAllowList) {
    COCOON_ASSIGN_OR_RETURN(resolver, HostNameResolver());
  }
  std::vector<std::string> argv = request.argv;
  enforcer::SandboxRequest sandbox_request;
  sandbox_request.plan = artifacts.plan;
  sandbox_request.seccomp_bpf = artifacts.seccomp_bpf;
  sandbox_request.seccomp_sidecar_json = artifacts.seccomp_sidecar_json;
  sandbox_request.argv = std::move(request.argv);
  // The paths as the guard resolved them (host_overlap_guard.h).
  sandbox_request.work_host_dir = guarded.work_dir;
  sandbox_request.discard_work_dir = request.discard_work_dir;
  for (size_t i = 0; i < request.copies.size(); ++i) {
    const std::string& copy = request.copies[i];
    std::string base = CopyName(copy);
    if (base.empty()) return InvalidArgumentError("--copy " + copy + ": no file name");
    sandbox_request.extra_copies.push_back({guarded.copies[i], base});  // named as given, read from where it resolved
  }
  sandbox_request.output_mode = request.output_mode;
  sandbox_request.stdin_mode = request.stdin_mode;
  sandbox_request.stdin_data = std::move(request.stdin_data);
  sandbox_request.passed_values = std::move(request.passed_values);
  sandbox_request.signals = request.signals;
  sandbox_request.on_output = std::move(request.on_output);
  sandbox_request.cancel = request.cancel;
  sandbox_request.resolve_allow_list = resolver;
  sandbox_request.started_child = std::move(request.started_child);
  COCOON_ASSIGN_OR_RETURN(auto sandbox, enforcer::Sandbox::Prepare(std::move(sandbox_request)));
  std::string run_id = NewRunId();
  if (log) {
    COCOON_ASSIGN_OR_RETURN(AuditReference reference, log->RecordLaunch(artifacts, *sandbox, argv, request, run_id));
    if (request.audit_reference) *request.audit_reference = reference;
  }
  auto outcome = sandbox->Run();
  if (!outcome.ok()) {
    if (log) log->RecordFailure(outcome.status(), sandbox->pid(), run_id);
    return outcome.status();
  }
  if (log) {
    if (Status recorded = log->RecordOutcome(*outcome, sandbox->pid(), run_id); !recorded.ok()) {
      outcome->audit_error = recorded.message();
    }
  }
  return outcome;
}

int RefusalExitCode(const Status& status) {
  if (enforcer::IsRunCancelledBeforeStart(status)) return 130;  // cancelled, like a cancel during the run
  bool exec_step = status.message().find("step 'execve") != std::string::npos;
  if (exec_step && status.code() == ErrorCode::kNotFound) return kExitCommandNotFound;
  if (exec_step && status.code() == ErrorCode::kPermissionDenied) return kExitCannotExecute;
  return kExitRefused;
}

}  // namespace cocoon::cli
