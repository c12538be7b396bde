#include "cli/launch_util.h"
#include "compiler/common/file_read.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include <sys/random.h>

#include "cli/host_overlap_guard.h"
#include "cli/launch_dynamic.h"
#include "cli/policy_compile.h"
#include "compiler/common/digest.h"
#include "enforcer/artifact_cache.h"
#include "enforcer/spare_child.h"
#include "enforcer/started_child.h"

namespace cocoon::cli {
namespace {

// Collects {path, sha256} pairs anywhere in the manifest (the driver owns the
// exact layout; every artifact entry carries both keys).
void CollectHashes(const nlohmann::json& j, std::vector<std::pair<std::string, std::string>>& out) {
  if (j.is_object()) {
    if (j.contains("path") && j.contains("sha256") && j["path"].is_string() && j["sha256"].is_string()) {
      out.emplace_back(j["path"].get<std::string>(), j["sha256"].get<std::string>());
    }
    for (const auto& [key, value] : j.items()) CollectHashes(value, out);
  } else if (j.is_array()) {
    for (const auto& value : j) CollectHashes(value, out);
  }
}

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

Result<PolicyArtifacts> LoadCompiledDir(const std::string& dir, LaunchRequest* launch) {
  auto manifest_text = ReadFileToString(dir + "/manifest.json");
  if (!manifest_text.ok()) {
    return InvalidArgumentError(dir + " is a directory but has no manifest.json; is it `cocoon compile` output?");
  }
  std::vector<std::pair<std::string, std::string>> hashes;
  try {
    CollectHashes(nlohmann::json::parse(*manifest_text), hashes);
  } catch (const nlohmann::json::exception& e) {
    return DataLossError(dir + "/manifest.json: " + e.what());
  }
  PolicyArtifacts artifacts;
  artifacts.origin = "dir";
  artifacts.policy_path = dir;
  // The manifest's hashes sit beside what they check: whoever can write
  // the dir can rewrite both.
  if (char real[PATH_MAX]; realpath(dir.c_str(), real) != nullptr) artifacts.source_files.push_back(real);
  std::string plan_text;
  for (auto [name, out] : {std::pair{"linux.plan.json", &plan_text}, std::pair{"linux.seccomp.bpf", &artifacts.seccomp_bpf},
                           std::pair{"linux.seccomp.json", &artifacts.seccomp_sidecar_json}}) {
    COCOON_ASSIGN_OR_RETURN(*out, ReadFileToString(dir + "/" + name));
    std::string expected;
    for (const auto& [path, sha] : hashes) {
      if (path == name || path == std::string("linux/") + name) expected = sha;
    }
    if (expected.empty()) return DataLossError(dir + "/manifest.json does not list " + name + "; refusing to run it");
    if (Sha256Hex(*out) != expected) {
      return DataLossError(dir + "/" + name + " does not match its SHA-256 in manifest.json (expected " + expected +
                           "); the compiled policy was modified, refusing to run it");
    }
  }
  StartChildBeforeParsing(plan_text, launch);
  COCOON_ASSIGN_OR_RETURN(artifacts.plan, backends::LaunchPlanFromJson(plan_text));
  return artifacts;
}

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
  if (S_ISDIR(st.st_mode)) return LoadCompiledDir(policy, launch);

  enforcer::ArtifactCache cache(enforcer::ArtifactCache::DefaultDir());
  std::string key = enforcer::ArtifactCache::KeyFor(policy, profile);
  PolicyArtifacts artifacts;
  artifacts.policy_path = policy;
  artifacts.profile = profile;
  std::optional<enforcer::CompiledLinuxArtifacts> compiled = cache.Lookup(key);
  artifacts.origin = compiled ? "cache" : "compiled";
  if (!compiled) {
    COCOON_ASSIGN_OR_RETURN(auto fresh, CompilePolicyOnCacheMiss(policy, profile));
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

Result<enforcer::Outcome> LaunchSandboxed(const PolicyArtifacts& artifacts, LaunchRequest request) {
  if (request.argv.empty()) return InvalidArgumentError("missing command: give it after `--`");
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
                                                   artifacts.source_files, artifacts.shadowing_paths}));
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
    // `--copy data/` names the directory data, as cp does.
    std::string named = copy;
    while (named.size() > 1 && named.back() == '/') named.pop_back();
    std::string base = named.substr(named.find_last_of('/') == std::string::npos ? 0 : named.find_last_of('/') + 1);
    if (base.empty() || base == "." || base == "..") return InvalidArgumentError("--copy " + copy + ": no file name");
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
