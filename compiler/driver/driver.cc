#include "compiler/driver/driver.h"

#include <algorithm>
#include <exception>
#include <future>
#include <optional>
#include <set>
#include <system_error>

#include "cocoon_version.h"
#ifdef COCOON_HAVE_BACKEND_OCI
#include "compiler/backends/oci/oci_seccomp.h"
#endif
#ifdef COCOON_HAVE_BACKEND_SECCOMP
#include "compiler/backends/seccomp/seccomp_backend.h"
#endif

namespace cocoon::driver {
namespace {

using backends::Artifact;

constexpr Target kAll[] = {Target::kLinux, Target::kMacos, Target::kWindows, Target::kOci, Target::kKubernetes};

[[maybe_unused]] Status Unavailable(Target target, std::string_view library) {
  return FailedPreconditionError("target " + std::string(TargetName(target)) + " unavailable: this build of cocoon " +
                                 "has no " + std::string(library));
}

bool Wants(const std::vector<Target>& targets, Target target) {
  return std::find(targets.begin(), targets.end(), target) != targets.end();
}

// What several targets of one CompileTargets call would each compute: made
// once and handed down. It lives for that one call only (nothing is kept
// across compiles, so a repeated compile pays the full cost): oci and k8s
// share one seccomp profile, built and serialised once, on the calling
// thread. The linux target computes its own BPF-form effective rules on its
// worker thread (CompileAll): sharing one ComputeEffectiveSyscallForms pass
// with OCI would save CPU (~0.2 ms for strict) but put the whole pass
// (~0.8 ms) before the worker could start, on the critical path; alone, the
// BPF form takes ~0.2 ms there and the rule form ~0.45 ms here, in parallel.
struct SharedWork {
#ifdef COCOON_HAVE_BACKEND_OCI
  std::optional<Result<backends::oci::OciSeccompProfile>> oci_profile;
#endif
};

SharedWork PrepareSharedWork(const ir::Policy& policy, const std::vector<Target>& targets) {
  SharedWork shared;
#ifdef COCOON_HAVE_BACKEND_OCI
  if (Wants(targets, Target::kOci) || Wants(targets, Target::kKubernetes)) {
    shared.oci_profile = backends::oci::SeccompProfileFor(policy);
  }
#endif
  (void)policy, (void)targets;
  return shared;
}

Result<std::vector<Artifact>> CompileLinux(const ir::Policy& policy) {
#if defined(COCOON_HAVE_BACKEND_SECCOMP) && defined(COCOON_HAVE_BACKEND_PLAN)
  COCOON_ASSIGN_OR_RETURN(std::vector<Artifact> out, backends::CompileSeccomp(policy));
  auto bpf = std::find_if(out.begin(), out.end(), [](const Artifact& a) { return a.path == "linux.seccomp.bpf"; });
  if (bpf == out.end()) return InternalError("seccomp back end produced no linux.seccomp.bpf");
  COCOON_ASSIGN_OR_RETURN(std::vector<Artifact> plan, backends::CompileLinuxPlan(policy, *bpf));
  out.insert(out.end(), plan.begin(), plan.end());
  return out;
#else
  (void)policy;
  return Unavailable(Target::kLinux, "seccomp BPF or launch-plan back end (cocoon_backend_seccomp/plan)");
#endif
}

Result<std::vector<Artifact>> CompileOne(const ir::Policy& policy, Target target, const SharedWork& shared) {
  switch (target) {
    case Target::kLinux: return CompileLinux(policy);
    case Target::kMacos:
#ifdef COCOON_HAVE_BACKEND_SBPL
      return backends::CompileSbpl(policy);
#else
      return Unavailable(target, "SBPL back end (cocoon_backend_sbpl)");
#endif
    case Target::kWindows:
#ifdef COCOON_HAVE_BACKEND_WINDOWS
      return backends::CompileWindows(policy);
#else
      return Unavailable(target, "Windows back end (cocoon_backend_windows)");
#endif
    case Target::kOci:
#ifdef COCOON_HAVE_BACKEND_OCI
      if (!shared.oci_profile) return backends::CompileOci(policy);
      if (!shared.oci_profile->ok()) return shared.oci_profile->status();
      return backends::CompileOciWithProfile(policy, **shared.oci_profile);
#else
      return Unavailable(target, "OCI back end (cocoon_backend_oci)");
#endif
    case Target::kKubernetes:
#ifdef COCOON_HAVE_BACKEND_OCI
      if (!shared.oci_profile) return backends::CompileKubernetes(policy);
      if (!shared.oci_profile->ok()) return shared.oci_profile->status();
      return backends::CompileKubernetesWithProfile(policy, **shared.oci_profile);
#else
      return Unavailable(target, "Kubernetes back end (cocoon_backend_oci)");
#endif
  }
  return InternalError("unknown target");
}

using TargetResult = Result<std::vector<Artifact>>;

TargetResult CompileOneNoThrow(const ir::Policy& policy, Target target, const SharedWork& shared) {
  try {
    return CompileOne(policy, target, shared);
  } catch (const std::exception& e) {  // e.g. std::bad_alloc: a status, never a crash on the worker
    return InternalError(std::string("target ") + std::string(TargetName(target)) + " threw: " + e.what());
  }
}

// The linux target is most of a compile (libseccomp 2.5.4 builds the filter
// and exports BPF and PFC: ~3.3 ms of strict's ~6.5 ms on one core) and
// shares nothing with the others, so when other targets are requested it
// runs on a second thread while they compile on this one. (Two cores are a
// fair resource for an in-process compile; on one core it costs only the
// thread start, ~0.05 ms.)
//
// libseccomp and threads: each scmp_filter_ctx is its own heap object, used
// by the worker alone (the other back ends call only the read-only syscall
// name tables, src/arch*.c). The library's process-wide state is the API
// level (src/api.c seccomp_api_level) and the kernel feature probes
// (src/system.c `state`), filled lazily and without a lock on first use;
// PrepareLibseccompForThreads fills them here, before the thread exists.
//
// The returned future always holds a value (an exception on the worker
// becomes a status); if no thread can be started the target is compiled
// right here. A std::async future joins its thread when destroyed, so the
// worker never outlives `policy`, whatever path leaves the caller.
std::future<TargetResult> StartLinux(const ir::Policy& policy) {
#ifdef COCOON_HAVE_BACKEND_SECCOMP
  backends::PrepareLibseccompForThreads();
#endif
  // Linux uses no shared work: it gets an empty SharedWork of its own.
  try {
    return std::async(std::launch::async,
                      [&policy] { return CompileOneNoThrow(policy, Target::kLinux, SharedWork{}); });
  } catch (const std::system_error&) {  // no thread (EAGAIN): fall back to this one
    std::promise<TargetResult> inline_result;
    inline_result.set_value(CompileOneNoThrow(policy, Target::kLinux, SharedWork{}));
    return inline_result.get_future();
  }
}

// Every requested target's result, in `targets` order. Each target runs to
// completion even if another fails (the caller reports the first failure in
// target order, as a sequential compile would, and returns no artifact).
std::vector<std::optional<TargetResult>> CompileAll(const ir::Policy& policy, const std::vector<Target>& targets) {
  std::vector<std::optional<TargetResult>> results(targets.size());
  const size_t linux_at =
      static_cast<size_t>(std::find(targets.begin(), targets.end(), Target::kLinux) - targets.begin());
  const bool linux_apart = linux_at < targets.size() && targets.size() > 1;
  std::future<TargetResult> linux;
  if (linux_apart) linux = StartLinux(policy);
  const SharedWork shared = PrepareSharedWork(policy, targets);
  for (size_t i = 0; i < targets.size(); ++i) {
    if (linux_apart && i == linux_at) continue;
    results[i] = CompileOneNoThrow(policy, targets[i], shared);
  }
  if (linux_apart) results[linux_at] = linux.get();
  return results;
}

std::string ArchName(ir::Arch arch) {
  switch (arch) {
    case ir::Arch::kX86_64: return "x86_64";
    case ir::Arch::kX32: return "x32";
    case ir::Arch::kX86: return "x86";
    case ir::Arch::kAarch64: return "aarch64";
  }
  return "unknown";
}

}  // namespace

std::string_view TargetName(Target target) {
  switch (target) {
    case Target::kLinux: return "linux";
    case Target::kMacos: return "macos";
    case Target::kWindows: return "windows";
    case Target::kOci: return "oci";
    case Target::kKubernetes: return "k8s";
  }
  return "unknown";
}

std::vector<Target> AllTargets() { return {std::begin(kAll), std::end(kAll)}; }

Result<std::vector<Target>> ParseTargets(std::string_view spec) {
  std::set<Target> chosen;
  size_t start = 0;
  while (start <= spec.size()) {
    size_t end = spec.find(',', start);
    if (end == std::string_view::npos) end = spec.size();
    std::string_view name = spec.substr(start, end - start);
    bool found = name == "all";
    if (found) chosen.insert(std::begin(kAll), std::end(kAll));
    for (Target t : kAll) {
      if (name == TargetName(t)) {
        chosen.insert(t);
        found = true;
      }
    }
    if (!found) {
      return InvalidArgumentError("unknown target '" + std::string(name) +
                                  "' (expected linux, macos, windows, oci, k8s or all)");
    }
    start = end + 1;
  }
  return std::vector<Target>(chosen.begin(), chosen.end());
}

Result<CompileOutput> CompileTargets(const ir::Policy& policy, const std::vector<Target>& targets) {
  if (targets.empty()) return InvalidArgumentError("no target given");
  CompileOutput out;
  std::vector<std::optional<TargetResult>> results = CompileAll(policy, targets);
  std::set<std::string> paths{std::string(kManifestFile)};
  std::set<std::string> seen_warnings;
  for (size_t i = 0; i < targets.size(); ++i) {
    const Target target = targets[i];
    TargetResult& artifacts = *results[i];
    if (!artifacts.ok()) return artifacts.status().WithContext("compiling target " + std::string(TargetName(target)));
    for (Artifact& artifact : *artifacts) {
      if (!IsSafeArtifactPath(artifact.path) || !paths.insert(artifact.path).second) {
        return InternalError("back end produced an unsafe or duplicate artifact path '" + artifact.path + "'");
      }
      for (const auto& w : artifact.warnings) {
        if (seen_warnings.insert(w).second) out.warnings.push_back(w);
      }
      out.manifest.artifacts.push_back(
          {artifact.path, artifact.target, artifact.media_type, artifact.sha256, artifact.bytes.size()});
      out.artifacts.push_back(std::move(artifact));
    }
    out.manifest.targets.emplace_back(TargetName(target));
  }
  out.manifest.compiler_version = COCOON_VERSION_STRING;
  out.manifest.profile = policy.name;
  out.manifest.policy_sha256 = policy.source_sha256;
  for (ir::Arch arch : policy.syscalls.architectures) out.manifest.architectures.push_back(ArchName(arch));
  out.manifest.warnings = out.warnings;
  return out;
}

}  // namespace cocoon::driver
