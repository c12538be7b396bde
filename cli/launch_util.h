// The glue between a policy on disk and a sandboxed run, shared by
// `cocoon enforce`, `cocoon run`, `cocoon mcp` and `cocoon pipeline`:
//
//   policy file (.cocoon)  --cache hit------------------------+
//        \--front end -> seccomp + plan back ends -> cache ---+--> PolicyArtifacts
//   compiled dir (cocoon compile -o DIR) --manifest hashes----/
//
//   PolicyArtifacts + command -> enforcer::Sandbox -> Outcome -> audit events
//
// Audit: when LaunchRequest::audit.log_path is set, the "launch" event is
// written BEFORE the sandbox starts (a run whose audit record cannot be
// written is refused), and the denied-syscall, limit, breakout and exit
// events after it ends.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "audit/events.h"
#include "compiler/backends/plan/launch_plan.h"
#include "compiler/common/status.h"
#include "enforcer/outcome.h"
#include "enforcer/sandbox.h"

namespace cocoon::enforcer {
class SpareChildKeeper;  // spare_child.h
}  // namespace cocoon::enforcer

namespace cocoon::cli {

struct PolicyArtifacts {
  backends::LaunchPlan plan;
  std::string seccomp_bpf;
  std::string seccomp_sidecar_json;
  std::string origin;      // "cache", "compiled", "dir"
  std::string policy_path; // what the user named
  std::string profile;
  // The files the policy was read from (the root file and what it includes
  // or imports; a compiled dir itself), absolute, and the paths where a new
  // file would change what it imports (ir::Policy::shadowing_paths): no
  // place the sandbox writes may hold any of them (host_overlap_guard.h).
  std::vector<std::string> source_files;
  std::vector<std::string> shadowing_paths;
};

// Exit codes for a refused run (the command never ran).
inline constexpr int kExitRefused = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitCannotExecute = 126;
inline constexpr int kExitCommandNotFound = 127;


struct AuditOptions {
  std::string log_path;  // "" = no audit log
  std::string key_path;  // Ed25519 private key (cocoon audit keygen)
};

struct AuditReference {
  uint64_t sequence = 0;
  std::string event_id;  // the launch event's metadata.uid
};

struct LaunchRequest {
  std::vector<std::string> argv;
  std::string work_dir;                // host work dir, "" = throwaway tmpfs
  bool discard_work_dir = false;       // staged: verify, commit nothing (SandboxRequest)
  bool work_dir_is_ours = false;       // a private dir made by Cocoon (host_overlap_guard.h)
  std::vector<std::string> copies;     // --copy host paths (copied to their base name)
  enforcer::OutputMode output_mode = enforcer::OutputMode::kCapture;
  enforcer::StdinMode stdin_mode = enforcer::StdinMode::kNull;
  std::string stdin_data;  // StdinMode::kData
  std::map<std::string, std::string> passed_values;  // SandboxRequest::passed_values
  enforcer::SignalHandling signals = enforcer::SignalHandling::kNone;
  enforcer::OutputCallback on_output;
  std::shared_ptr<enforcer::CancelHandle> cancel;
  AuditOptions audit;
  std::vector<std::string> overrides;  // recorded in the launch event
  audit::McpCallInfo mcp_call;         // recorded in the launch event (`cocoon mcp`)
  // When set, receives the launch event's place in the signed log, so callers
  // (the MCP tools) can tie a result to its audit line.
  std::shared_ptr<AuditReference> audit_reference;
  // Set by LoadPolicyArtifacts(..., &request); killed if the launch is refused.
  std::shared_ptr<enforcer::StartedChild> started_child;
  // A long-lived caller's keeper of children started ahead of need
  // (enforcer/spare_child.h): LoadPolicyArtifacts takes its spare when it
  // fits, instead of starting a child. Not owned; the caller Replenishes it
  // when the launch is over.
  enforcer::SpareChildKeeper* spare_children = nullptr;
};

// POLICY is a .cocoon file (compiled, or taken from the artifact cache) or a
// directory written by `cocoon compile` (its manifest hashes are verified; a
// mismatch is refused). Policy mistakes come back as kInvalidArgument with
// the rendered diagnostics as the message.
//
// `launch`: the one launch these artifacts are loaded for (cocoon enforce,
// run, pipeline, mcp). Its sandbox's first process is then started as soon as the
// compiled plan is read and verified, before it is parsed, and travels in
// launch->started_child (enforcer/started_child.h): the kernel builds the
// namespaces while the plan is parsed and the sandbox prepared (or taken from
// launch->spare_children). Not for a network allow-list, nor for an audited
// launch in the launcher, which hands over to cocoon-full first
// (launch_dynamic.h).
Result<PolicyArtifacts> LoadPolicyArtifacts(const std::string& policy, const std::string& profile,
                                            LaunchRequest* launch = nullptr);

// The same for a policy file whose bytes the caller holds (`cocoon run`'s
// generated policy, just written to the quick dir): keyed and compiled from
// `text`, never from the file read back.
Result<PolicyArtifacts> LoadPolicyTextArtifacts(const std::string& path, const std::string& text,
                                                const std::string& profile, LaunchRequest* launch = nullptr);

// Runs one command. A Status means the run was refused or failed before the
// command started; map it to an exit code with RefusalExitCode.
Result<enforcer::Outcome> LaunchSandboxed(const PolicyArtifacts& artifacts, LaunchRequest request);

int RefusalExitCode(const Status& status);

}  // namespace cocoon::cli
