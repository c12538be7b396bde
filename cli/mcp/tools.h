// The four MCP tools: their descriptors for tools/list (inputSchema with
// additionalProperties:false, outputSchema, annotations), argument checking
// into an ExecRequest, and the CallToolResult built from an ExecResult.
// Arguments are checked here by hand, field by field, so that bad input is
// reported as an isError result that names the field, never reaches a sandbox,
// and never throws.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/mcp/executor.h"
#include "compiler/common/status.h"

namespace cocoon::mcp {

inline constexpr std::string_view kExecuteCode = "execute_code";
inline constexpr std::string_view kExecuteSkill = "execute_skill";
inline constexpr std::string_view kInspectRuntimes = "inspect_runtimes";
inline constexpr std::string_view kRunInSandbox = "run_in_sandbox";

struct ToolLimits {
  size_t max_code_bytes = 1 << 20;          // code / command strings
  size_t max_stdin_bytes = 8 << 20;
  size_t max_files = 64;
  size_t max_files_total_bytes = 16 << 20;
  size_t max_argv = 4096;
  uint64_t max_timeout_ms = 3600 * 1000;    // a request may ask for less, never more
};

struct ToolContext {
  std::vector<std::string> languages;  // execute_code's language enum
  std::vector<std::string> policies;   // allowed `policy` values
  ToolLimits limits;
};

bool IsKnownTool(std::string_view name);

// tools/list's `tools` array, in a fixed order.
nlohmann::json ToolDescriptors(const ToolContext& context);

// Checks `arguments` against the tool's inputSchema and builds the request.
// InvalidArgument names the offending field. Not for inspect_runtimes.
Result<ExecRequest> ParseToolArguments(std::string_view tool, const nlohmann::json& arguments,
                                       const ToolContext& context);

// A CallToolResult: structuredContent, the same JSON as text, isError. The
// text block is {"type": "text"} until ToolResultLine (json_rpc.h) writes
// the line, its text taken from structuredContent there.
// A captured stream whose JSON form would take more than twice its size
// (plus 64 KiB) is cut there, `<stream>_truncated` set and a note added.
nlohmann::json CallResultFromExec(ExecResult result);
// isError result for input the tool refused or a run that could not start.
// `kind` names the class: "bad_input", "busy", "cancelled", "launch_failed", "audit_failed".
// A result's `audit` object: the event's sequence and id, with a note when
// there is no event because no audit log is configured.
nlohmann::json AuditJson(const AuditRef& audit);
// `audit`: AuditJson, or an object whose note says why the event is missing.
// The result has the shape of `tool`'s outputSchema (inspect_runtimes: an
// empty `runtimes`; the run tools: an Outcome that did not start).
nlohmann::json CallResultFromError(std::string_view tool, std::string_view kind, const Status& status,
                                   const nlohmann::json& audit);
nlohmann::json CallResultFromRuntimes(const nlohmann::json& runtimes, const AuditRef& audit);

// isError is true for a timeout, an OOM, a policy kill, a signal or a cancellation.
bool IsErrorStatus(ExecStatus status);
std::string_view ExecStatusName(ExecStatus status);

// A path relative to the work dir: not empty, not absolute, no "." or ".."
// or empty component (no "a//b", no trailing '/'), no control character,
// C0, DEL or C1 (NUL cuts a path short; a newline, tab or terminal escape
// in a name only confuses whoever reads a listing or a log), at most 4096
// bytes and 64 components.
// RelativePathProblem says what is wrong ("" when nothing is).
std::string RelativePathProblem(std::string_view path);
inline bool IsSafeRelativePath(std::string_view path) { return RelativePathProblem(path).empty(); }

// The pattern of such a path, for the tools' input schemas (ECMA-262, as
// JSON Schema's "pattern" is): clients that check the schema first get the
// same answer as the server.
// [\s\S], not '.': ECMA's '.' stops at U+2028, which the server counts as a
// plain character. {1,4096} counts UTF-16 units, the server bytes: the
// schema's description says the limit is bytes.
inline constexpr const char* kRelativePathPattern =
    "^(?!/)(?![\\s\\S]*//)(?![\\s\\S]*/$)(?!([\\s\\S]*/)?\\.\\.?(/|$))(?!([^/]*/){64})"
    "[^\\x00-\\x1F\\x7F-\\x9F]{1,4096}$";

}  // namespace cocoon::mcp
