// cocoon-full's side of the compiler seam (policy_compile.h): the whole
// compiler, in process.

#include "cli/frontend_util.h"
#include "cli/policy_compile.h"
#include "compiler/backends/artifact.h"
#include "compiler/backends/seccomp/seccomp_backend.h"
#include "enforcer/artifact_cache.h"
#include "compiler/frontend/frontend.h"

namespace cocoon::cli {
namespace {

const backends::Artifact* FindArtifact(const std::vector<backends::Artifact>& artifacts, std::string_view path) {
  for (const auto& artifact : artifacts) {
    if (artifact.path == path) return &artifact;
  }
  return nullptr;
}

// The seccomp filter and sidecar for a checked policy. They depend only on
// SeccompCompileInput, so they are cached under that text: a `cocoon run`
// whose flags change only limits, mounts or the environment (a new
// --timeout, --mem, --ro, stdin) is a new policy, but not a new filter, and
// building strict's filter is ~4.5 ms of a ~10 ms cache miss. Same cache
// directory, trust rules and integrity hashes as the policy entries.
// (Only seccomp_bpf and seccomp_sidecar_json are set.)
Result<enforcer::CompiledLinuxArtifacts> SeccompFilterFor(const ir::Policy& policy) {
  enforcer::ArtifactCache cache(enforcer::ArtifactCache::DefaultDir());
  std::string key = enforcer::ArtifactCache::KeyForContent("seccomp", backends::SeccompCompileInput(policy));
  if (auto hit = cache.Lookup(key); hit && hit->plan_json.empty() && !hit->seccomp_bpf.empty()) return std::move(*hit);
  COCOON_ASSIGN_OR_RETURN(auto seccomp, backends::CompileSeccomp(policy));
  const backends::Artifact* bpf = FindArtifact(seccomp, "linux.seccomp.bpf");
  const backends::Artifact* sidecar = FindArtifact(seccomp, "linux.seccomp.json");
  if (bpf == nullptr || sidecar == nullptr) return InternalError("seccomp back end returned no BPF or sidecar");
  enforcer::CompiledLinuxArtifacts filter;
  filter.seccomp_bpf = bpf->bytes;
  filter.seccomp_sidecar_json = sidecar->bytes;
  (void)cache.Store(key, filter);  // an optimisation: a read-only cache is fine
  return filter;
}

// The artifacts of a checked policy, with the digests of what the front end
// parsed.
Result<enforcer::CompiledLinuxArtifacts> CompileCheckedPolicy(Result<ir::Policy> policy) {
  if (!policy.ok()) return InvalidArgumentError(policy.status().message() + "; refusing to run");
  COCOON_ASSIGN_OR_RETURN(enforcer::CompiledLinuxArtifacts compiled, SeccompFilterFor(*policy));
  backends::Artifact bpf = backends::MakeArtifact("linux", "linux.seccomp.bpf", "application/vnd.cocoon.seccomp-bpf",
                                                  compiled.seccomp_bpf);
  COCOON_ASSIGN_OR_RETURN(auto plan, backends::CompileLinuxPlan(*policy, bpf));
  compiled.plan_json = plan.at(0).bytes;
  // What the front end read and parsed, never a second read of the files:
  // an edit since would otherwise be recorded as what this plan came from.
  for (const auto& source : policy->source_digests) {
    if (source.path.empty()) continue;  // not read from a file
    compiled.source_files.push_back(source.path);
    compiled.source_sha256.push_back(source.sha256);
  }
  compiled.shadowing_paths = policy->shadowing_paths;
  return compiled;
}

Result<ir::Policy> CheckPolicyFileWithText(const std::string& path, const std::string* text, const std::string& profile) {
  frontend::FrontendOptions options;
  AddBackEndChecks(options);
  Diagnostics diagnostics(options.diagnostics);
  auto policy = text != nullptr ? frontend::CompilePolicyFileText(path, *text, profile, options, diagnostics)
                                : frontend::CompilePolicyFile(path, profile, options, diagnostics);
  // A policy failure, not a usage error: exit 1 from enforce, run and
  // pipeline alike (docs/cli.md).
  if (!policy) return FailedPreconditionError(diagnostics.Render() + path + ": the policy does not check");
  return *policy;
}

}  // namespace

Result<enforcer::CompiledLinuxArtifacts> CompilePolicyOnCacheMiss(const std::string& path, const std::string& profile) {
  return CompileCheckedPolicy(CheckPolicyFileWithText(path, nullptr, profile));
}

Result<enforcer::CompiledLinuxArtifacts> CompilePolicyTextOnCacheMiss(const std::string& path, const std::string& text,
                                                                      const std::string& profile) {
  return CompileCheckedPolicy(CheckPolicyFileWithText(path, &text, profile));
}

Result<ir::Policy> CheckPolicyFile(const std::string& path, const std::string& profile) {
  return CheckPolicyFileWithText(path, nullptr, profile);
}

Result<ir::Policy> CheckPolicyText(const std::string& display_name, const std::string& text,
                                   const std::string& profile, std::string* warnings) {
  frontend::FrontendOptions options;
  AddBackEndChecks(options);
  Diagnostics diagnostics(options.diagnostics);
  auto compiled = frontend::CompilePolicyText(display_name, text, profile, options, diagnostics);
  if (!compiled) return InvalidArgumentError(diagnostics.Render());
  if (warnings && diagnostics.warning_count() > 0) *warnings = diagnostics.Render();
  return *compiled;
}

std::optional<ir::Policy> CheckRuntimePresetFile(const std::string& path, const std::string& name,
                                                 Diagnostics& diagnostics) {
  return frontend::CompilePolicyFile(path, name, {}, diagnostics);
}

Result<std::string> ExplainCheckedPolicy(const ir::Policy& policy) { return frontend::ExplainPolicy(policy); }

void RememberConsumedStdin(const std::string& /*bytes*/) {}  // nothing to hand on: this process compiles

}  // namespace cocoon::cli
