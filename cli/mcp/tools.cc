#include "cli/mcp/tools.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "cli/mcp/json_rpc.h"
#include "compiler/common/hidden_characters.h"

namespace cocoon::mcp {
namespace {

using nlohmann::json;

json FilesSchema(const ToolLimits& limits) {
  return {{"type", "object"},
          {"description", "Files to stage into the work dir before the run: relative path -> UTF-8 content."},
          {"maxProperties", limits.max_files},
          {"propertyNames", {{"pattern", kRelativePathPattern}}},
          {"additionalProperties", {{"type", "string"}}}};
}

// maxLength counts characters and the server's limit is bytes of UTF-8: the
// description says which one holds.
json CodeSchema(const ToolLimits& limits) {
  return {{"type", "string"},
          {"maxLength", limits.max_code_bytes},
          {"description", "Source code; at most " + std::to_string(limits.max_code_bytes) + " bytes of UTF-8, no NUL"}};
}

json ObjectSchema(json properties, json required) {
  return {{"type", "object"}, {"properties", std::move(properties)}, {"required", std::move(required)},
          {"additionalProperties", false}};
}

// The audit reference every result carries (audit.note: why it is empty).
json AuditSchema() {
  return {{"type", "object"},
          {"properties", {{"sequence", {{"type", "integer"}}}, {"event_id", {{"type", "string"}}}, {"note", {{"type", "string"}}}}},
          {"required", {"sequence", "event_id"}}};
}

// Why a call did not run (bad input, busy, cancelled while queued, ...).
json ErrorSchema() {
  return {{"type", "object"},
          {"properties", {{"kind", {{"type", "string"}}}, {"message", {{"type", "string"}}}}},
          {"required", {"kind", "message"}}};
}

// The Outcome subset every run result is guaranteed to carry (the full
// Outcome has more keys; additional properties are allowed in the output).
json OutcomeSchema() {
  json audit = AuditSchema();
  json error = ErrorSchema();
  return {{"type", "object"},
          {"properties",
           {{"exit_code", {{"type", "integer"}}},
            {"stdout", {{"type", "string"}}},
            {"stderr", {{"type", "string"}}},
            {"timed_out", {{"type", "boolean"}}},
            {"oom_killed", {{"type", "boolean"}}},
            {"oom_kill", {{"type", "string"}, {"enum", {"command", "child"}}}},
            {"termination_reason", {{"type", "string"}}},
            {"stdout_truncated", {{"type", "boolean"}}},
            {"stderr_truncated", {{"type", "boolean"}}},
            {"wall_ms", {{"type", "integer"}}},
            {"audit", audit},
            {"error", error}}},
          {"required", {"exit_code", "stdout", "stderr", "timed_out", "oom_killed", "termination_reason", "audit"}}};
}

json RuntimesSchema() {
  json runtime = {{"type", "object"},
                  {"properties",
                   {{"name", {{"type", "string"}}},
                    {"available", {{"type", "boolean"}}},
                    {"path", {{"type", "string"}}},
                    {"version", {{"type", "string"}}}}},
                  {"required", {"name", "available"}}};
  return {{"type", "object"},
          {"properties",
           {{"runtimes", {{"type", "array"}, {"items", runtime}}}, {"audit", AuditSchema()}, {"error", ErrorSchema()}}},
          {"required", {"runtimes", "audit"}}};
}

json Annotations(std::string_view title, bool read_only) {
  // A sandbox run changes nothing outside its own ephemeral sandbox, and the
  // default policy has no network: not destructive, not open-world.
  return {{"title", title}, {"readOnlyHint", read_only}, {"destructiveHint", false},
          {"idempotentHint", read_only}, {"openWorldHint", false}};
}

json Tool(std::string_view name, std::string_view title, std::string_view description, json input,
          json output, bool read_only) {
  return {{"name", name}, {"title", title}, {"description", description}, {"inputSchema", std::move(input)},
          {"outputSchema", std::move(output)}, {"annotations", Annotations(title, read_only)}};
}

Status Bad(std::string message) { return InvalidArgumentError(std::move(message)); }

// Reads an optional string field; enforces a byte cap.
Status OptionalString(const json& args, std::string_view key, size_t cap, std::string* out) {
  auto it = args.find(key);
  if (it == args.end()) return Status::Ok();
  if (!it->is_string()) return Bad("'" + std::string(key) + "' must be a string");
  const auto& value = it->get_ref<const std::string&>();
  if (value.size() > cap) return Bad("'" + std::string(key) + "' exceeds " + std::to_string(cap) + " bytes");
  *out = value;
  return Status::Ok();
}

Status RequiredString(const json& args, std::string_view key, size_t cap, std::string* out) {
  if (!args.contains(key)) return Bad("missing required '" + std::string(key) + "'");
  return OptionalString(args, key, cap, out);
}

// A positive integer (JSON numbers that are whole, e.g. 5 or 5.0; not 5.5).
Status OptionalPositive(const json& args, std::string_view key, uint64_t max, std::optional<uint64_t>* out) {
  auto it = args.find(key);
  if (it == args.end()) return Status::Ok();
  double value = 0;
  if (it->is_number_unsigned()) value = static_cast<double>(it->get<uint64_t>());
  else if (it->is_number()) value = it->get<double>();
  else return Bad("'" + std::string(key) + "' must be a number");
  if (!(value >= 1) || value > static_cast<double>(max)) {
    return Bad("'" + std::string(key) + "' must be between 1 and " + std::to_string(max));
  }
  // The schema says integer: 1.9 s is not quietly 1 s.
  if (value != static_cast<double>(static_cast<uint64_t>(value))) return Bad("'" + std::string(key) + "' must be a whole number");
  *out = static_cast<uint64_t>(value);
  return Status::Ok();
}

Status CheckKeys(const json& args, std::initializer_list<std::string_view> allowed) {
  if (!args.is_object()) return Bad("arguments must be an object");
  for (auto& [key, value] : args.items()) {
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return Bad("unknown argument '" + EchoOfClientText(key) + "'");
    }
  }
  return Status::Ok();
}

Status ParseFiles(const json& args, const ToolLimits& limits, std::map<std::string, std::string>* files) {
  auto it = args.find("files");
  if (it == args.end()) return Status::Ok();
  if (!it->is_object()) return Bad("'files' must be an object of relative path -> content");
  if (it->size() > limits.max_files) return Bad("'files' has more than " + std::to_string(limits.max_files) + " entries");
  size_t total = 0;
  for (auto& [path, content] : it->items()) {
    if (std::string why = RelativePathProblem(path); !why.empty()) {
      return Bad("'files' path '" + EchoOfClientText(path) + "' " + why);
    }
    if (!content.is_string()) return Bad("'files' content for '" + EchoOfClientText(path) + "' must be a string");
    total += content.get_ref<const std::string&>().size();
    if (total > limits.max_files_total_bytes) return Bad("'files' exceed " + std::to_string(limits.max_files_total_bytes) + " bytes");
    (*files)[path] = content.get<std::string>();
  }
  return Status::Ok();
}

Status ParsePolicy(const json& args, const ToolContext& context, std::string* policy) {
  COCOON_RETURN_IF_ERROR(OptionalString(args, "policy", 256, policy));
  if (policy->empty()) return Status::Ok();
  if (std::find(context.policies.begin(), context.policies.end(), *policy) == context.policies.end()) {
    if (context.policies.empty()) return Bad("this server offers no policy choice (it was started without --policy)");
    std::string names;
    for (const auto& p : context.policies) names += (names.empty() ? "" : ", ") + p;
    return Bad("unknown policy '" + SanitizeUtf8(*policy) + "'; this server offers: " + names);
  }
  return Status::Ok();
}

// Short code goes to the runtime as an argument (-c), which ends at a NUL,
// and long code as a file, which keeps it: the same code would run cut short
// or whole by its size, while the audit log records all of it. No runtime
// takes a NUL in source anyway.
Status CodeHasNoNul(const std::string& code) {
  if (code.find('\0') != std::string::npos) return Bad("'code' must not contain NUL");
  return Status::Ok();
}

Result<ExecRequest> ParseExecuteCode(const json& args, const ToolContext& context) {
  COCOON_RETURN_IF_ERROR(CheckKeys(args, {"language", "code", "stdin", "files", "timeout_ms", "policy"}));
  ExecRequest request;
  request.kind = ExecKind::kCode;
  COCOON_RETURN_IF_ERROR(RequiredString(args, "language", 64, &request.language));
  if (std::find(context.languages.begin(), context.languages.end(), request.language) == context.languages.end()) {
    return Bad("unsupported language '" + EchoOfClientText(request.language) + "' (see inspect_runtimes)");
  }
  COCOON_RETURN_IF_ERROR(RequiredString(args, "code", context.limits.max_code_bytes, &request.code));
  COCOON_RETURN_IF_ERROR(CodeHasNoNul(request.code));
  COCOON_RETURN_IF_ERROR(OptionalString(args, "stdin", context.limits.max_stdin_bytes, &request.stdin_data));
  COCOON_RETURN_IF_ERROR(ParseFiles(args, context.limits, &request.files));
  COCOON_RETURN_IF_ERROR(OptionalPositive(args, "timeout_ms", context.limits.max_timeout_ms, &request.timeout_ms));
  COCOON_RETURN_IF_ERROR(ParsePolicy(args, context, &request.policy));
  return request;
}

bool IsSkillName(std::string_view name) {
  if (name.empty() || name.size() > 64 || name.front() == '-' || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  }) && name.find("..") == std::string_view::npos;
}

Result<ExecRequest> ParseExecuteSkill(const json& args, const ToolContext& context) {
  COCOON_RETURN_IF_ERROR(CheckKeys(args, {"skill", "code", "files"}));
  ExecRequest request;
  request.kind = ExecKind::kSkill;
  request.language = "python-skill";
  COCOON_RETURN_IF_ERROR(RequiredString(args, "skill", 64, &request.skill));
  if (!IsSkillName(request.skill)) return Bad("'skill' must be a name of letters, digits, '-', '_' or '.'");
  COCOON_RETURN_IF_ERROR(RequiredString(args, "code", context.limits.max_code_bytes, &request.code));
  COCOON_RETURN_IF_ERROR(CodeHasNoNul(request.code));
  COCOON_RETURN_IF_ERROR(ParseFiles(args, context.limits, &request.files));
  return request;
}

Status ParseCommand(const json& args, const ToolLimits& limits, std::vector<std::string>* argv) {
  auto it = args.find("command");
  if (it == args.end()) return Bad("missing required 'command'");
  if (it->is_string()) {
    const auto& line = it->get_ref<const std::string&>();
    if (line.empty() || line.size() > limits.max_code_bytes) return Bad("'command' must be a non-empty string");
    // It becomes an argument of sh -c, which ends at a NUL: the rest would
    // not run, while the audit log recorded all of it.
    if (line.find('\0') != std::string::npos) return Bad("'command' must not contain NUL");
    *argv = {"/bin/sh", "-c", line};
    return Status::Ok();
  }
  if (!it->is_array() || it->empty() || it->size() > limits.max_argv) {
    return Bad("'command' must be a shell string or a non-empty array of strings");
  }
  size_t total = 0;
  for (const auto& arg : *it) {
    if (!arg.is_string()) return Bad("'command' array items must be strings");
    const auto& s = arg.get_ref<const std::string&>();
    if (s.find('\0') != std::string::npos) return Bad("'command' arguments must not contain NUL");
    total += s.size();
    if (total > limits.max_code_bytes) return Bad("'command' exceeds " + std::to_string(limits.max_code_bytes) + " bytes");
    argv->push_back(s);
  }
  if ((*argv)[0].empty()) return Bad("'command' program must not be empty");
  return Status::Ok();
}

// memory_max: bytes as an integer, or a string with a unit ("256MiB", "1G").
Status ParseMemory(const json& args, std::optional<uint64_t>* out) {
  auto it = args.find("memory_max");
  if (it == args.end()) return Status::Ok();
  if (it->is_number_unsigned() || it->is_number_integer()) {
    if (!it->is_number_unsigned() || it->get<uint64_t>() == 0) return Bad("'memory_max' must be positive");
    *out = it->get<uint64_t>();
    return Status::Ok();
  }
  if (!it->is_string()) return Bad("'memory_max' must be bytes or a string like \"256MiB\"");
  const auto& s = it->get_ref<const std::string&>();
  size_t digits = 0;
  while (digits < s.size() && digits < 12 && std::isdigit(static_cast<unsigned char>(s[digits]))) ++digits;
  if (digits == 0) return Bad("'memory_max' must start with a number");
  uint64_t number = std::stoull(s.substr(0, digits));
  std::string unit = s.substr(digits);
  static const std::pair<std::string_view, uint64_t> kUnits[] = {
      {"", 1}, {"B", 1}, {"K", 1024}, {"KiB", 1024}, {"M", 1 << 20}, {"MiB", 1 << 20},
      {"G", 1ull << 30}, {"GiB", 1ull << 30}, {"KB", 1000}, {"MB", 1000000}, {"GB", 1000000000}};
  for (const auto& [name, factor] : kUnits) {
    if (unit == name) {
      if (number == 0) return Bad("'memory_max' must be positive");
      if (number > UINT64_MAX / factor) return Bad("'memory_max' is too large");  // 12 digits of GiB wrapped
      *out = number * factor;
      return Status::Ok();
    }
  }
  return Bad("'memory_max' has an unknown unit '" + EchoOfClientText(unit) + "' (use B, KiB, MiB, GiB)");
}

Result<ExecRequest> ParseRunInSandbox(const json& args, const ToolContext& context) {
  COCOON_RETURN_IF_ERROR(CheckKeys(args, {"command", "timeout", "memory_max", "workdir"}));
  ExecRequest request;
  request.kind = ExecKind::kCommand;
  COCOON_RETURN_IF_ERROR(ParseCommand(args, context.limits, &request.argv));
  std::optional<uint64_t> seconds;
  COCOON_RETURN_IF_ERROR(OptionalPositive(args, "timeout", context.limits.max_timeout_ms / 1000, &seconds));
  if (seconds) request.timeout_ms = *seconds * 1000;
  COCOON_RETURN_IF_ERROR(ParseMemory(args, &request.memory_bytes));
  COCOON_RETURN_IF_ERROR(OptionalString(args, "workdir", 4096, &request.workdir));
  if (!request.workdir.empty() && request.workdir != ".") {
    if (std::string why = RelativePathProblem(request.workdir); !why.empty()) {
      return Bad("'workdir' '" + EchoOfClientText(request.workdir) + "' " + why);
    }
  }
  if (request.workdir == ".") request.workdir.clear();
  // It becomes the policy's cwd, and the policy front end refuses what a
  // review cannot see: said here about the argument, not as an error at a
  // line of the generated policy (a host file the client never sees).
  if (auto hidden = FindHiddenCharacters("/work/" + request.workdir); !hidden.empty()) {
    char code_point[16];
    std::snprintf(code_point, sizeof code_point, "U+%04X", static_cast<unsigned>(hidden[0].code_point));
    return Bad("'workdir' must not contain " + std::string(code_point) + " " + std::string(hidden[0].name) +
               ": invisible and bidirectional-control characters are refused in a path the policy names");
  }
  return request;
}

// structuredContent and the same JSON as a text block, for clients that read
// only text. The block has no "text" here: ToolResultLine (json_rpc.h)
// writes it into the response line from structuredContent, so that a run's
// captured output is held once, not also as a text copy.
json TextResult(json structured, bool is_error) {
  json result = json::object();
  result["content"] = json::array({json{{"type", "text"}}});
  result["structuredContent"] = std::move(structured);
  result["isError"] = is_error;
  return result;
}

// A captured stream goes into the answer twice, JSON-escaped each time (in
// structuredContent, and in the text copy, escaped once more). Text at most
// doubles when escaped ('"', '\\', a newline or a tab take two bytes), but a
// control character takes six ("\u0000", seven in the text copy) and an
// invalid byte three (U+FFFD): a command printing NULs up to the output cap
// made an answer 13 times the cap. Such a stream is cut where its escaped
// form reaches twice its captured size (plus kEscapeSlack, so that a short
// output with a few escapes is whole), and marked truncated, with a note.
constexpr size_t kEscapeSlack = 64 * 1024;

void KeepEscapedOutputWithinBudget(json& structured, const std::string& stream) {
  auto& text = structured[stream].get_ref<std::string&>();
  const size_t kept = PrefixWithinEscapedSize(text, 2 * text.size() + kEscapeSlack);
  if (kept == text.size()) return;
  const size_t captured = text.size();
  text.resize(kept);
  text.shrink_to_fit();  // the captured buffer goes now, before the answer is written
  structured[stream + "_truncated"] = true;
  if (!structured["notes"].is_array()) structured["notes"] = json::array();
  structured["notes"].push_back(stream + " cut from " + std::to_string(captured) + " to " + std::to_string(kept) +
                                " bytes: control characters or invalid UTF-8 made its JSON form more than twice "
                                "its size");
}

}  // namespace

bool IsKnownTool(std::string_view name) {
  return name == kExecuteCode || name == kExecuteSkill || name == kInspectRuntimes || name == kRunInSandbox;
}

json ToolDescriptors(const ToolContext& context) {
  const ToolLimits& limits = context.limits;
  json languages = context.languages;
  json policies = context.policies;
  // An empty enum would be unsatisfiable; without a --policy file the field
  // exists (additionalProperties is false) but every value is refused.
  json policy_schema = {{"type", "string"}, {"description", "Profile of the server's policy file to run under"}};
  if (!context.policies.empty()) policy_schema["enum"] = policies;
  json execute_code = ObjectSchema(
      {{"language", {{"type", "string"}, {"enum", languages}, {"description", "Runtime preset (see inspect_runtimes)"}}},
       {"code", CodeSchema(limits)},
       {"stdin", {{"type", "string"}}},
       {"files", FilesSchema(limits)},
       {"timeout_ms", {{"type", "integer"}, {"minimum", 1}, {"maximum", limits.max_timeout_ms},
                       {"description", "Wall-clock limit; can only shorten the server policy's"}}},
       {"policy", policy_schema}},
      {"language", "code"});
  json execute_skill = ObjectSchema(
      {{"skill", {{"type", "string"}, {"pattern", "^(?!.*\\.\\.)[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$"}}},
       {"code", CodeSchema(limits)},
       {"files", FilesSchema(limits)}},
      {"skill", "code"});
  json run_in_sandbox = ObjectSchema(
      {{"command", {{"description", "argv array, or a string run with /bin/sh -c"},
                    {"anyOf", json::array({{{"type", "string"}, {"minLength", 1}},
                                           {{"type", "array"}, {"items", {{"type", "string"}}}, {"minItems", 1}}})}}},
       {"timeout", {{"type", "integer"}, {"minimum", 1}, {"maximum", limits.max_timeout_ms / 1000},
                    {"description", "Seconds; can only shorten the policy's"}}},
       {"memory_max", {{"description", "Bytes, or a string such as \"256MiB\"; can only lower the policy's"},
                       {"anyOf", json::array({{{"type", "integer"}, {"minimum", 1}}, {{"type", "string"}}})}}},
       {"workdir", {{"type", "string"}, {"pattern", std::string("^\\.?$|") + kRelativePathPattern},
                    {"description", "Directory inside the work dir to run in (relative, at most 4096 bytes and 64 "
                                    "components; made if missing; \"\" or \".\": the work dir)"}}}},
      {"command"});
  json empty = ObjectSchema(json::object(), json::array());
  return json::array({
      Tool(kExecuteCode, "Execute code in a sandbox",
           "Run a snippet in a fresh Cocoon sandbox (no network, read-only system, time and memory limits) "
           "and return its Outcome: exit code, stdout, stderr, limits, audit reference.",
           std::move(execute_code), OutcomeSchema(), false),
      Tool(kExecuteSkill, "Run a skill script",
           "Run Python code under the python-skill preset (site-packages visible for document tools) in a fresh sandbox.",
           std::move(execute_skill), OutcomeSchema(), false),
      Tool(kInspectRuntimes, "List runtimes", "Which language runtimes exist on this host, with versions and paths.",
           std::move(empty), RuntimesSchema(), true),
      Tool(kRunInSandbox, "Run a command in a sandbox",
           "Run a command (argv array or shell string) in a fresh Cocoon sandbox and return its Outcome.",
           std::move(run_in_sandbox), OutcomeSchema(), false),
  });
}

Result<ExecRequest> ParseToolArguments(std::string_view tool, const json& arguments, const ToolContext& context) {
  Result<ExecRequest> request = Status(ErrorCode::kInternal, "unreachable");
  if (tool == kExecuteCode) request = ParseExecuteCode(arguments, context);
  else if (tool == kExecuteSkill) request = ParseExecuteSkill(arguments, context);
  else if (tool == kRunInSandbox) request = ParseRunInSandbox(arguments, context);
  else return InvalidArgumentError("tool '" + SanitizeUtf8(tool) + "' takes no run arguments");
  if (request.ok()) request->tool = std::string(tool);
  return request;
}

bool IsErrorStatus(ExecStatus status) { return status != ExecStatus::kCompleted; }

std::string_view ExecStatusName(ExecStatus status) {
  switch (status) {
    case ExecStatus::kCompleted: return "exited";
    case ExecStatus::kTimeout: return "timeout";
    case ExecStatus::kOomKilled: return "oom_killed";
    case ExecStatus::kChildOomKilled: return "child_oom_killed";
    case ExecStatus::kPolicyKill: return "policy_kill";
    case ExecStatus::kSignaled: return "signaled";
    case ExecStatus::kCancelled: return "cancelled";
    case ExecStatus::kWorkDirUnverified: return "workdir_unverified";
    case ExecStatus::kFailed: return "failed";
  }
  return "unknown";
}

json CallResultFromExec(ExecResult result) {
  json structured = result.outcome.is_object() ? std::move(result.outcome) : json::object();
  // Guarantee the keys the outputSchema requires, whatever the Outcome JSON holds.
  auto ensure = [&](const char* key, json value) {
    if (!structured.contains(key) || structured[key].type() != value.type()) structured[key] = std::move(value);
  };
  ensure("exit_code", result.exit_code);
  ensure("stdout", "");
  ensure("stderr", "");
  ensure("timed_out", result.status == ExecStatus::kTimeout);
  const bool oom = result.status == ExecStatus::kOomKilled || result.status == ExecStatus::kChildOomKilled;
  ensure("oom_killed", oom);
  // Whose OOM kill it was: the command's own (termination_reason
  // "oom_killed") or a child's, while the command went on to the end its
  // exit_code and termination_reason tell. Both are errors.
  if (oom) structured["oom_kill"] = result.status == ExecStatus::kOomKilled ? "command" : "child";
  ensure("termination_reason", std::string(ExecStatusName(result.status)));
  structured["audit"] = {{"sequence", result.audit_sequence}, {"event_id", result.audit_event_id}};
  if (!result.audit_note.empty()) structured["audit"]["note"] = result.audit_note;
  KeepEscapedOutputWithinBudget(structured, "stdout");
  KeepEscapedOutputWithinBudget(structured, "stderr");
  return TextResult(std::move(structured), IsErrorStatus(result.status));
}

json AuditJson(const AuditRef& audit) {
  json out = {{"sequence", audit.sequence}, {"event_id", audit.event_id}};
  if (audit.event_id.empty()) out["note"] = "no audit log configured (cocoon mcp --audit-log FILE --audit-key KEY)";
  return out;
}

json CallResultFromError(std::string_view tool, std::string_view kind, const Status& status, const json& audit) {
  json error = {{"kind", kind}, {"message", SanitizeUtf8(status.message())}};
  // Clients validate structuredContent against the tool's outputSchema even
  // when isError is set (the TypeScript SDK does), so the refusal takes the
  // shape of the tool's own result.
  if (tool == kInspectRuntimes) {
    return TextResult({{"runtimes", json::array()}, {"audit", audit}, {"error", std::move(error)}}, true);
  }
  json structured = {{"exit_code", -1},        {"stdout", ""},
                     {"stderr", ""},           {"timed_out", false},
                     {"oom_killed", false},    {"termination_reason", "not_started"},
                     {"audit", audit},         {"error", std::move(error)}};
  return TextResult(std::move(structured), true);
}

json CallResultFromRuntimes(const json& runtimes, const AuditRef& audit) {
  json structured = runtimes.is_object() && runtimes.contains("runtimes") ? runtimes : json{{"runtimes", json::array()}};
  structured["audit"] = AuditJson(audit);
  return TextResult(std::move(structured), false);
}

std::string RelativePathProblem(std::string_view path) {
  if (path.empty()) return "must not be empty";
  if (path.size() > 4096) return "is longer than 4096 bytes";
  if (path.front() == '/') return "must be relative to the work dir, not absolute";
  for (size_t i = 0; i < path.size(); ++i) {
    const auto byte = static_cast<unsigned char>(path[i]);
    // C1 controls (U+0080..U+009F, a terminal's 8-bit CSI among them) are
    // 0xC2 0x80..0x9F in UTF-8.
    const bool c1 = byte == 0xC2 && i + 1 < path.size() && static_cast<unsigned char>(path[i + 1]) >= 0x80 &&
                    static_cast<unsigned char>(path[i + 1]) <= 0x9F;
    if (byte < 0x20 || byte == 0x7F || c1) return "must not contain control characters (NUL, newline, tab...)";
  }
  size_t components = 0, start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (part.empty()) return "must not have an empty component ('//' or a trailing '/')";
    if (part == "." || part == "..") return "must not have a '.' or '..' component";
    if (++components > 64) return "has more than 64 components";
    start = end + 1;
  }
  return "";
}

}  // namespace cocoon::mcp
