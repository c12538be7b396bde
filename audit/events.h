// Builders for every audit event type. Each takes a plain struct and returns
// an Event: the OCSF 1.8.0 + ECS body without the per-line fields (time,
// sequence, metadata.uid, integrity), which AuditLog::Append fills in.
//
// OCSF classes used:
//   1007 Process Activity     sandbox launched (1 Launch), process exited (2 Terminate),
//                             an MCP tool call that started no sandbox (99 Other)
//   1003 Kernel Activity      syscall denied/logged (4 Invoke, kernel.type_id 2 System Call)
//                             with the security_control profile
//   2004 Detection Finding    breakout finding (1 Create); limit hit (1 Create)
//   1008 Event Log Activity   log started (6), rotated (5), stopped/sealed (7),
//                             checkpoint / key rotation / recovery (99 Other)
//   6002 Application Lifecycle  policy checked or compiled (99 Other)
//
// Untrusted strings (argv, paths, output) may hold any bytes: the builders
// replace invalid UTF-8 with U+FFFD so every line stays valid JCS.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cocoon::audit {

struct RenderedEvent;  // internal (audit/record.h)

// One audit event body. `fields` is the OCSF/ECS object; do not set
// `cocoon.integrity`, `time`, `@timestamp`, `metadata.uid` or sequence fields:
// Append owns them. The builders below return the body already rendered to
// canonical text (`rendered`, immutable, cheap to copy) and leave `fields`
// null, so the serialised writer never walks or frees a DOM; EventFields()
// gives the DOM back. A hand-made Event sets `fields` only. Append refuses an
// event with both (its `fields` edit would otherwise be lost).
struct Event {
  nlohmann::json fields = nlohmann::json::object();
  std::shared_ptr<const RenderedEvent> rendered;
};

// The event's fields as a DOM (for inspection and tests): `fields`, or the
// rendered body without the per-line members.
nlohmann::json EventFields(const Event& event);

struct PolicyCompiledInfo {
  std::string policy_name;
  std::string policy_path;
  std::string policy_sha256;
  std::string operation = "compile";            // "check" or "compile"
  bool ok = true;                               // false: the policy had errors
  uint32_t error_count = 0;
  uint32_t warning_count = 0;
  std::map<std::string, std::string> artifacts; // target ("seccomp", "oci", ...) -> sha256
};

struct LimitInfo {
  std::string limit;      // "memory", "processes", "wall_time", ...
  uint64_t requested = 0;
  std::string unit;       // "bytes", "ms", "count", "percent"
  std::string mechanism;  // "cgroup-v1", "rlimit", "supervisor", "not-enforced", ...
  bool required = true;
};

// The MCP tool call an event belongs to (`cocoon.mcp`): empty `tool` and
// `request_id` outside `cocoon mcp`.
struct McpCallInfo {
  std::string tool;         // "execute_code", "inspect_runtimes", ... ("" when the request named none)
  std::string request_id;   // the JSON-RPC id, as text
  std::string client_name;  // the client's clientInfo.name ("" when it sent none)
};

struct SandboxLaunchedInfo {
  std::string policy_name;
  std::string policy_sha256;
  std::string profile;                    // e.g. "default", "ci"
  std::vector<std::string> argv;
  std::string cwd;
  int pid = 0;                            // host pid of the sandboxed process (0 if not yet known)
  uint32_t uid_inside = 0;
  uint32_t gid_inside = 0;
  std::string user_inside;                // e.g. "nobody"
  std::vector<std::string> namespaces;    // "user", "mnt", "pid", ...
  std::vector<LimitInfo> limits;
  int landlock_abi = 0;
  std::vector<std::string> overrides;     // command-line overrides of the policy
  std::string run_id;                     // ties the events of one run together
  McpCallInfo mcp;                        // the tool call that launched it (`cocoon mcp`)
};

struct SyscallDeniedInfo {
  std::string name;
  int number = -1;
  std::vector<uint64_t> args;             // up to 6
  std::string action;                     // "errno(EPERM)", "kill", "log", ...
  uint64_t count = 1;                     // coalesced identical denials
  std::string policy_name;
  int pid = 0;
  std::string run_id;
};

enum class LimitKind { kTimeout, kOom, kProcessCap, kDiskQuota, kOutputTruncated };
std::string_view LimitKindName(LimitKind kind);  // "timeout", "oom", ...

struct LimitHitInfo {
  LimitKind kind = LimitKind::kTimeout;
  uint64_t limit = 0;                     // the configured value, in `unit`
  uint64_t observed = 0;                  // what was measured, in `unit`
  std::string unit;                       // "ms", "bytes", "count"
  std::string detail;                     // e.g. "stdout"
  std::string policy_name;
  std::string run_id;
};

struct BreakoutFindingInfo {
  std::string path;                       // relative to the work dir
  std::string kind;                       // "symlink-escape", "hardlink", "device", ...
  std::string target;                     // link target or ""
  std::string policy_name;
  std::string run_id;
};

struct ProcessExitedInfo {
  int pid = 0;
  int exit_code = -1;
  int signal = 0;
  std::string termination_reason;         // "exited", "signaled", "timeout", ...
  uint64_t wall_ms = 0;
  uint64_t user_cpu_ms = 0;
  uint64_t system_cpu_ms = 0;
  uint64_t peak_memory_kib = 0;
  std::string peak_memory_source;
  uint64_t stdout_bytes = 0;
  uint64_t stderr_bytes = 0;
  bool breakout_clean = true;
  // Breakout findings in all, and how many got a BreakoutFinding event of
  // their own (at most kMaxBreakoutFindingEvents: the Outcome lists them all).
  uint64_t breakout_findings = 0;
  uint64_t breakout_findings_logged = 0;
  // With a work dir (Outcome::work_mode, verification, committed,
  // verification_error, commit_warning); work_mode empty: no
  // "cocoon.workdir" object.
  std::string work_mode;
  std::string verified;
  bool committed = false;
  std::string verification_error;
  std::string commit_warning;
  // With writable binds (Outcome::writable_verification, writable_error);
  // empty: no "cocoon.writable_mounts" object.
  std::string writable_verified;
  std::string writable_error;
  // termination_reason "failed": why the run could not be completed after
  // its launch event (a step of the isolation sequence, or the supervisor
  // after the command started: Outcome::supervisor_error).
  std::string error;
  // A cancel that came after the command had ended (Outcome::
  // cancelled_after_end): it stopped nothing; empty: none came.
  std::string cancelled_after_end;
  std::string policy_name;
  std::string run_id;
};

// An MCP tool call that ran no sandbox: refused before one started (bad
// input, a busy server, a policy that does not compile) or one that needs
// none (inspect_runtimes). Calls that run a sandbox are audited by its
// launch and exit events instead (SandboxLaunchedInfo::mcp).
struct ToolCallInfo {
  McpCallInfo call;
  bool refused = false;
  std::string kind;        // the refusal's class: "bad_input", "busy", "unknown_tool", ...
  std::string detail;      // why it was refused, or what it did
  int server_pid = 0;      // the `cocoon mcp` process that handled it
};

Event PolicyCompiled(const PolicyCompiledInfo& info);
Event ToolCall(const ToolCallInfo& info);
Event SandboxLaunched(const SandboxLaunchedInfo& info);
Event SyscallDenied(const SyscallDeniedInfo& info);
Event LimitHit(const LimitHitInfo& info);
Event BreakoutFinding(const BreakoutFindingInfo& info);
Event ProcessExited(const ProcessExitedInfo& info);

// Replaces invalid UTF-8 sequences with U+FFFD (and keeps at most max_bytes).
std::string SanitizeUtf8(std::string_view bytes, size_t max_bytes = SIZE_MAX);

}  // namespace cocoon::audit
