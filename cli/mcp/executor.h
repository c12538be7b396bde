// The seam between the MCP protocol layer and the sandbox. The server parses
// and validates tool calls into ExecRequests and hands them to an Executor;
// the real one (cli/mcp_command.cc) goes through cli/launch_util.h, the same
// compile -> enforce -> audit path as `cocoon run`, and tests and the fuzzer
// use a fake. The protocol layer never launches anything itself.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/common/status.h"

namespace cocoon::mcp {

// Set by notifications/cancelled (or server shutdown). The executor registers
// how to kill its sandbox; the callback runs at most once, under the token's
// lock (so it must not call back into the token), on the thread that cancels,
// or immediately when registered after the cancellation.
class CancelToken {
 public:
  void Cancel();
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  // Replaces any earlier callback. Pass nullptr to unregister before the
  // resource the callback refers to goes away.
  void OnCancel(std::function<void()> callback);

 private:
  std::mutex mutex_;
  std::atomic<bool> cancelled_{false};
  std::function<void()> callback_;
};

enum class ExecKind {
  kCode,     // execute_code: a runtime preset runs `code`
  kSkill,    // execute_skill: the python-skill preset runs `code`
  kCommand,  // run_in_sandbox: an argv (or `sh -c` string)
};

struct ExecRequest {
  ExecKind kind = ExecKind::kCode;
  std::string tool;                       // the MCP tool name, for the audit log
  std::string language;                   // runtime preset name (kCode, kSkill)
  std::string code;                       // kCode, kSkill
  std::string skill;                      // kSkill
  std::vector<std::string> argv;          // kCommand
  std::string stdin_data;
  std::map<std::string, std::string> files;  // relative path -> content, staged into the work dir
  std::optional<uint64_t> timeout_ms;     // may only tighten the server policy
  std::optional<uint64_t> memory_bytes;   // may only tighten the server policy
  std::string workdir;                    // relative to the work dir ("" = its root)
  std::string policy;                     // a profile name the server offers ("" = its default)
  std::string request_id;                 // the JSON-RPC id, serialised, for the audit log
  std::string client_name;                // clientInfo.name, for the audit log
};

// How the run ended, as far as isError is concerned.
enum class ExecStatus {
  kCompleted,    // the command ran and exited (any exit code)
  kTimeout,
  kOomKilled,    // the command itself was OOM-killed (it ended the run)
  // Another process of the sandbox (a child of the command) was OOM-killed
  // while the command went on to its end: an OOM all the same (isError),
  // but the command's exit_code and termination_reason stand.
  kChildOomKilled,
  kPolicyKill,   // seccomp kill, or a breakout finding in the work dir
  kSignaled,
  kCancelled,
  kWorkDirUnverified,  // the command ran, but its work dir could not be verified
  kFailed,       // the supervisor failed after the command started (the sandbox was killed, then verified)
};

// Who asked, for the audit log: every event of a call names its tool, its
// JSON-RPC id and the client (clientInfo.name).
struct CallIdentity {
  std::string_view tool;        // "" when the request named no usable tool
  std::string_view request_id;  // the JSON-RPC id, serialised
  std::string_view client_name;
};

struct AuditRef {
  uint64_t sequence = 0;
  std::string event_id;  // "" when no audit log is configured
};

struct ExecResult {
  ExecStatus status = ExecStatus::kCompleted;
  int exit_code = -1;
  // The Outcome as JSON (enforcer::OutcomeToJson), possibly with extra keys
  // the executor adds (overrides, clamped limits). Becomes structuredContent.
  nlohmann::json outcome = nlohmann::json::object();
  uint64_t audit_sequence = 0;
  std::string audit_event_id;   // "" when no audit log is configured
  std::string audit_note;       // why there is no reference, when there is none
};

enum class OutputStream { kStdout, kStderr };

struct ExecHooks {
  CancelToken* cancel = nullptr;
  // Called live, from the executor's thread, as the command writes. May be empty.
  std::function<void(OutputStream, std::string_view)> on_output;
};

class Executor {
 public:
  virtual ~Executor() = default;
  // A failed Status means the request could not be run at all (bad input the
  // server could not catch, a policy that does not compile, a host failure);
  // the server turns it into an isError result. InvalidArgument is "bad input".
  virtual Result<ExecResult> Execute(const ExecRequest& request, const ExecHooks& hooks) = 0;
  // {"runtimes": [{name, available, path, version, ...}]}
  virtual nlohmann::json InspectRuntimes() = 0;
  // The runtime names execute_code accepts (the tool schema's enum).
  virtual std::vector<std::string> Languages() = 0;
  // The policy profiles a caller may pick with `policy` (first = default).
  virtual std::vector<std::string> Policies() = 0;
  // Every call is audited, including the ones refused before any sandbox ran
  // (unknown tool, bad input, busy server, cancelled while queued): this
  // records such a refusal. `kind` is the refusal's class ("bad_input",
  // "busy", ...). An error means the configured log could not be written; the
  // call is refused either way, and the client is told it went unaudited.
  virtual Result<AuditRef> AuditRefusedCall(const CallIdentity& call, std::string_view kind, const Status& why) {
    return AuditRef{};
  }
  // ...and a call that needs no sandbox (inspect_runtimes). An error means
  // the configured audit log could not be written: the call is refused, as
  // a launch would be.
  virtual Result<AuditRef> AuditToolCall(const CallIdentity& call, std::string_view detail) { return AuditRef{}; }
};

}  // namespace cocoon::mcp
