// Language runtimes: the presets in policies/runtimes/*.cocoon (each a profile
// with a `runtime NAME { interpreter ... flags ... }` block), finding the
// interpreter a preset names, asking it for its version, and building the argv
// and scratch environment of one run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/common/diagnostics.h"
#include "compiler/common/status.h"
#include "compiler/ir/policy_ir.h"
#include "compiler/ir/runtime_memory_flag.h"

namespace cocoon::cli {

struct RuntimeInfo {
  std::string name;         // preset name, e.g. "python", "python-skill"
  std::string preset_file;  // policies/runtimes/<name>.cocoon
  bool available = false;   // an interpreter candidate exists and is executable
  std::string path;         // the interpreter found
  std::string version;      // first line of `<interpreter> <version_args>`
  std::vector<std::string> flags;
  std::string code_flag;
  std::string extension;
  std::vector<std::string> candidates;  // what was searched, for "missing" reports
  std::string error;        // why the preset could not be loaded or probed
};

// <search path>/runtimes for every front-end search path that has one.
std::vector<std::string> RuntimeSearchDirs();
// Every preset found in those dirs, sorted, first dir wins per name.
std::vector<std::string> RuntimePresetNames();
std::optional<std::string> RuntimePresetPath(const std::string& name);

// Compiles the preset's profile (named like the file).
std::optional<ir::Policy> LoadRuntimePreset(const std::string& name, Diagnostics& diagnostics);

// The first candidate that is an executable regular file (after symlinks).
std::optional<std::string> FindInterpreter(const ir::Runtime& runtime);

// Runs `path args...` outside any sandbox (the host's own interpreter, only to
// read its version), with an empty environment, stdin from /dev/null and a
// timeout; returns the first non-empty line of stdout+stderr.
Result<std::string> InterpreterVersion(const std::string& path, const std::vector<std::string>& args,
                                       int timeout_ms = 5000);

// Loads every preset and probes it (cached per process: versions do not
// change under a running server).
std::vector<RuntimeInfo> InspectRuntimes(bool use_cache = true);
RuntimeInfo InspectRuntime(const std::string& name);
nlohmann::json RuntimesToJson(const std::vector<RuntimeInfo>& runtimes);

// A runtime flag meaning "the interpreter is a compiler without a run mode":
// compile to /tmp/cocoon-main inside the sandbox, then exec it (rust).
inline constexpr const char* kCompileAndRun = "@compile-and-run";

// A runtime flag's part that follows the memory limit
// (compiler/ir/runtime_memory_flag.h), so that a heap cap written for the
// preset's limit moves with --mem. A flag holding it is left out when the
// run has no memory limit.
using ir::kMemoryMibPlaceholder;

// The runtime's flags with every kMemoryMibPlaceholder filled in for
// `memory_bytes` (0: no limit, such flags are dropped). A malformed one
// (not "{memory_mib:N%}" with N from 1 to 100) is an error naming the flag.
Result<std::vector<std::string>> ScaleMemoryFlags(const ir::Runtime& runtime, uint64_t memory_bytes);

// How the code reaches the interpreter.
enum class CodeDelivery {
  kInline,      // <interpreter> <flags> <code_flag> <code>
  kScriptFile,  // <interpreter> <flags> <script path inside the sandbox>
};

// The command line of one run. `script_path` is used for kScriptFile, and for
// kInline when the runtime has no code_flag (the caller must stage the file).
std::vector<std::string> RuntimeArgv(const ir::Runtime& runtime, const std::string& interpreter,
                                     CodeDelivery delivery, const std::string& code,
                                     const std::string& script_path);

// True when code must be staged as a file (no code_flag, or compile-and-run).
bool NeedsScriptFile(const ir::Runtime& runtime);

}  // namespace cocoon::cli
