// The in-process macOS applier. sandbox_init_with_parameters() is the private
// but long-stable libsystem_sandbox entry point that sandbox-exec(1) itself
// calls (see the Chromium sandbox/mac/seatbelt.cc wrapper): it compiles the
// SBPL text with the given (param "...") values and applies it to the calling
// process. Parameters are passed as a NULL-terminated array of alternating
// keys and values.
#include "compiler/backends/sbpl/macos_applier.h"

#include <vector>

#include "compiler/backends/sbpl/sbpl_params.h"

#ifdef __APPLE__
#include <sys/resource.h>

#include "compiler/backends/environment_plan.h"

extern char** environ;

extern "C" {
int sandbox_init_with_parameters(const char* profile, uint64_t flags, const char* const parameters[],
                                 char** errorbuf);
void sandbox_free_error(char* errorbuf);
}
#endif

namespace cocoon::backends::sbpl {

#ifdef __APPLE__
namespace {

int RlimitResource(const std::string& name) {
  if (name == "RLIMIT_CORE") return RLIMIT_CORE;
  if (name == "RLIMIT_CPU") return RLIMIT_CPU;
  if (name == "RLIMIT_FSIZE") return RLIMIT_FSIZE;
  if (name == "RLIMIT_NOFILE") return RLIMIT_NOFILE;
  if (name == "RLIMIT_NPROC") return RLIMIT_NPROC;
  return -1;
}

Status ApplyRlimits(const SbplParams& params) {
  for (const SbplRlimit& limit : params.rlimits) {
    const int resource = RlimitResource(limit.resource);
    if (resource < 0) return InvalidArgumentError("unknown rlimit " + limit.resource);
    struct rlimit value = {static_cast<rlim_t>(limit.soft), static_cast<rlim_t>(limit.hard)};
    if (setrlimit(resource, &value) != 0) return ErrnoError("setrlimit(" + limit.resource + ")");
  }
  return Status::Ok();
}

// Replaces the process's environment with the policy's: macOS has no
// clearenv(), and environ may be assigned (the strings are kept alive for
// the rest of the process, which execs the command next).
void ApplyEnvironment(const SbplParams& params) {
  std::vector<std::string> caller;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) caller.emplace_back(*entry);
  static std::vector<std::string> entries;
  static std::vector<char*> pointers;
  entries = backends::SandboxEnvironment(params.environment, caller);
  pointers.clear();
  for (std::string& entry : entries) pointers.push_back(entry.data());
  pointers.push_back(nullptr);
  environ = pointers.data();
}

}  // namespace

Status ApplyMacosSandbox(const MacosApplyRequest& request) {
  COCOON_ASSIGN_OR_RETURN(SbplParams params, ParseSbplParams(request.params_json));
  COCOON_ASSIGN_OR_RETURN(auto resolved, ResolveParams(params, request.overrides));
  COCOON_RETURN_IF_ERROR(ApplyRlimits(params));
  ApplyEnvironment(params);
  std::vector<const char*> argv;
  for (const auto& [name, value] : resolved) {
    argv.push_back(name.c_str());
    argv.push_back(value.c_str());
  }
  argv.push_back(nullptr);
  char* error = nullptr;
  if (sandbox_init_with_parameters(request.profile_text.c_str(), 0, argv.data(), &error) != 0) {
    std::string message = error ? error : "unknown error";
    if (error) sandbox_free_error(error);
    return PermissionDeniedError("sandbox_init_with_parameters: " + message);
  }
  return Status::Ok();
}

#else

Status ApplyMacosSandbox(const MacosApplyRequest& request) {
  // Still validate the inputs, so that callers on Linux get the same errors
  // for a broken compiled dir as they would on a Mac.
  COCOON_ASSIGN_OR_RETURN(SbplParams params, ParseSbplParams(request.params_json));
  COCOON_ASSIGN_OR_RETURN(auto resolved, ResolveParams(params, request.overrides));
  (void)resolved;
  return UnimplementedError("not implemented: the macOS Seatbelt applier only runs on macOS");
}

#endif

}  // namespace cocoon::backends::sbpl
