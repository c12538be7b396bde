// The quick-flag path shared by `cocoon run`, `cocoon pipeline` and the MCP
// tools: flags -> an in-memory policy TEXT that extends the base profile
// (strict, a runtime preset, or --policy FILE) -> the normal front end ->
// launch_util.h's LaunchSandboxed. There is no second way to build a sandbox:
// the generated text is an ordinary .cocoon profile, compiled, checked and
// cached like any other, and `--explain` prints exactly what will run.
//
// Flags may tighten freely. A flag that opens something the base forbids
// (--allow-network, a larger --mem/--timeout/--disk/--max-procs, --ro, a
// default read-only cwd) is written with a `relaxes` line and recorded as an
// override, which the audit launch event carries. Callers that must never
// open (the MCP server) ask for OpeningPolicy::kClampToBase instead.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/launch_util.h"
#include "cli/staged_code_file.h"
#include "compiler/common/status.h"
#include "compiler/ir/policy_ir.h"

namespace cocoon::cli {

enum class NetworkFlag { kAsPolicy, kAllow };
enum class GpuFlag { kAsPolicy, kDeny };
enum class CwdMount {
  kReadOnly,  // bind the current directory read-only at its own path, and run there
  kNone,
};
enum class OpeningPolicy {
  kRecordOverride,  // cocoon run: a larger value opens the base, recorded as an override
  kClampToBase,     // MCP: the base policy is the ceiling; larger requests are clamped
};

// The default policy's file: strict.cocoon, the first in the policy search
// path (frontend::DefaultSearchPaths), as an absolute path.
Result<std::string> FindStrict();

struct QuickPolicyOptions {
  std::string policy_file;  // --policy FILE ("" = the runtime's preset, else strict)
  std::string profile;      // --profile, for --policy files with several
  std::string runtime;      // -r NAME (a policies/runtimes preset)
  std::vector<std::string> readonly_paths;  // --ro: host paths, bound read-only at the same path
  std::vector<std::pair<std::string, std::string>> readonly_binds;  // host path -> sandbox path (code files)
  CwdMount cwd_mount = CwdMount::kNone;
  bool has_work_dir = false;  // --work given: run in /work rather than the read-only cwd
  std::string cwd_inside;     // run here instead (a path inside the sandbox), e.g. /work/sub
  std::optional<uint64_t> timeout_ms;
  std::optional<uint64_t> memory_bytes;
  std::optional<uint64_t> disk_bytes;
  std::optional<uint64_t> processes;
  NetworkFlag network = NetworkFlag::kAsPolicy;
  GpuFlag gpu = GpuFlag::kAsPolicy;
  std::vector<std::pair<std::string, std::string>> env;  // --env K=V
  OpeningPolicy openings = OpeningPolicy::kRecordOverride;
  // Code for the runtime. When the runtime takes no inline code (go, rust,
  // java...), or the code is over 64 KiB, it is written to a private
  // content-addressed file, bound read-only at /cocoon/main<ext>, and
  // removed when the last run using it has ended (QuickPolicy::staged_code).
  std::optional<std::string> code;
};

struct QuickPolicy {
  std::string text;                    // the generated .cocoon text
  std::string profile = "cocoon-run";  // the profile it defines
  std::string base_profile;            // what it extends
  // Where that comes from: "policy file" (--policy), "runtime preset" (no
  // --policy, a runtime: policies/runtimes/<name>.cocoon, which extends
  // strict with the limits its toolchain needs) or "strict".
  std::string base_source;
  std::vector<std::string> overrides;  // each opening, e.g. "network: off -> on (--allow-network)" (or "allow-list -> on")
  std::vector<std::string> notes;      // clamps and other adjustments
  std::optional<ir::Runtime> runtime;  // the runtime block in effect (preset or base)
  std::string cwd;                     // where the command runs inside the sandbox
  std::string code_file;               // "/cocoon/main<ext>" when the code was staged as a file
  // The host file code_file binds, held while this policy (or a copy) lives:
  // the last holder removes it (staged_code_file.h).
  std::shared_ptr<StagedCodeFile> staged_code;
  std::vector<std::string> readonly_dirs;  // host paths bound read-only at their own path (--ro, cwd)
  // --env K=V: the text says `pass K`, the value travels here to the
  // launch (SandboxRequest::passed_values), never into a file.
  std::map<std::string, std::string> passed_values;
};

// Builds the text. Fails on bad flags or a base policy that does not compile
// (the message carries the rendered diagnostics).
Result<QuickPolicy> BuildQuickPolicy(const QuickPolicyOptions& options);

// What to run: a runtime's code or script, or a plain command.
struct RunSpec {
  QuickPolicyOptions policy;
  std::string script_path;                // host script file (with a runtime): bound read-only at its path
  std::vector<std::string> script_args;
  std::vector<std::string> command;       // without a runtime: the argv
  bool code_from_stdin = false;           // the code was read from stdin, which the command then does not get
};

struct PreparedRun {
  QuickPolicy policy;
  std::vector<std::string> argv;
};

// Builds the policy and the argv (interpreter found on the host, hermetic
// flags, code inline or as a file).
Result<PreparedRun> PrepareRun(RunSpec spec);

// Compiles the text through the front end: the resolved policy, for
// `--explain`. Warnings other than the recorded openings are returned in *warnings.
Result<ir::Policy> CompileQuickPolicy(const QuickPolicy& policy, std::string* warnings = nullptr);

// Writes the text to a private, content-addressed file (so identical flags
// hit the compiled-artifact cache) and loads its artifacts with
// LoadPolicyArtifacts, the path `cocoon enforce` uses.
Result<PolicyArtifacts> QuickPolicyArtifacts(const QuickPolicy& policy, LaunchRequest* launch = nullptr);

// A private directory for generated policies and staged code files
// (<artifact cache>/quick, mode 0700, owned by us).
Result<std::string> QuickDir();
// Writes `bytes` to QuickDir()/<sha256><suffix> (once; content-addressed).
Result<std::string> WriteContentAddressed(const std::string& bytes, const std::string& suffix);

// "1.5 GiB" style quantities in policy text: bytes as "<n>B", time as "<n>ms".
std::string QuotePolicyString(const std::string& value);  // "..." with \ and " escaped

// Host paths no sandbox gets bound: /, /proc, /sys, /dev, /run, /var/run and
// what is below them; /boot, /root, /etc, /tmp, /var/tmp themselves.
bool IsForbiddenBind(const std::string& path);
// The real path of a host path to bind (as root following only root's
// symlinks: enforcer/workdir/host_path.h), refused when IsForbiddenBind;
// errors name `flag`.
Result<std::string> CanonicalHostPath(const std::string& path, const char* flag);
// The absolute, symlink-resolved form of a host path for messages and
// recorded overrides ("./out" -> "/home/me/project/out"); the input itself
// when it cannot be resolved (the launch reports that error).
std::string ResolvedHostPath(const std::string& path);

// Parses "256", "256M", "256MiB", "1G" as MiB-default sizes for --mem/--disk.
Result<uint64_t> ParseMegabytes(const std::string& text);
// --mem: ParseMegabytes, and at least the policy language's floor of 1 MiB
// (checker_limits.cc), so the mistake is named as the flag rather than as a
// line of the generated policy.
Result<uint64_t> ParseMemoryFlag(const std::string& text);

}  // namespace cocoon::cli
