// Event builders: OCSF 1.8.0 class fields + ECS fields + cocoon.* data.
#include "audit/events.h"

#include <cstdio>

#include "audit/event_common.h"
#include "audit/record.h"
#include "compiler/common/digest.h"
#include "compiler/common/display_text.h"
#include "compiler/common/hidden_characters.h"

namespace cocoon::audit {
namespace {

using nlohmann::json;

std::string S(std::string_view text) { return SanitizeUtf8(text, kMaxStringBytes); }

// Text for people (messages, command lines, paths and names an agent or a
// sandbox chose): `jq -r .message` on a terminal must not act on an escape
// sequence, draw a forged line, or show text a bidi override reordered
// ("Trojan Source"). Control characters (C0, DEL, C1) and the invisible and
// direction-changing characters (compiler/common/hidden_characters.h) come
// out as \n, \xNN, \uNNNN, and a backslash as \\ (so that a literal
// "\x1b" the sandbox wrote does not read as an ESC it did not); the exact
// bytes stay where a program reads them (process.args, whose SHA-256 is
// cocoon.sandbox.argv.sha256).
std::string H(std::string_view text) { return S(EscapeControlCharacters(text, Backslash::kEscaped)); }

json Strings(const std::vector<std::string>& values) {
  json out = json::array();
  for (const auto& v : values) out.push_back(H(v));
  return out;
}

// Inside bash's $'...': \\, \', \n, \t, \r, and \xNN for each byte of
// anything a terminal would act on or hide (control and invisible
// characters, invalid UTF-8). Bytes, not \uNNNN: bash turns \uNNNN into a
// character through the locale, and under LC_ALL=C leaves it as text.
std::string AnsiCQuoted(std::string_view arg) {
  std::string out = "$'";
  char escaped[8];
  for (size_t i = 0; i < arg.size();) {
    uint32_t code_point = 0;
    size_t length = DecodeUtf8(arg, i, code_point);
    const bool shown = length != 0 && IsDrawnAsItself(code_point);
    if (length == 0) length = 1;
    if (code_point == '\\' || code_point == '\'') {
      out += '\\';
      out += static_cast<char>(code_point);
    } else if (code_point == '\n') {
      out += "\\n";
    } else if (code_point == '\t') {
      out += "\\t";
    } else if (code_point == '\r') {
      out += "\\r";
    } else if (shown) {
      out.append(arg.substr(i, length));
    } else {
      for (size_t k = 0; k < length; ++k) {
        std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<uint8_t>(arg[i + k]));
        out += escaped;
      }
    }
    i += length;
  }
  return out + "'";
}

// uint64 syscall arguments exceed 2^53, so they are hex strings (integers in
// an audit line must be exact in an IEEE double: RFC 8785 section 3.2.2.3).
std::string Hex64(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(value));
  return buffer;
}

// Argv and command lines are what an auditor most needs whole, and what an
// attacker pads to push the end out of the log (`sh -c "true <17 KiB of
// spaces>; echo EVIL"`). A text longer than kMaxStringBytes keeps its head
// and its tail around a marker saying how much was cut, and sets `cut`;
// cocoon.sandbox.argv then has truncated: true and the full argv's SHA-256.
std::string Capped(std::string_view text, bool& cut) {
  std::string whole = SanitizeUtf8(text);
  if (whole.size() <= kMaxStringBytes) return whole;
  cut = true;
  constexpr size_t kTail = 4096;
  constexpr size_t kMarkerRoom = 64;
  auto continuation = [&](size_t at) { return (static_cast<unsigned char>(whole[at]) & 0xC0) == 0x80; };
  size_t head = kMaxStringBytes - kTail - kMarkerRoom;
  while (head > 0 && continuation(head)) --head;  // never split a UTF-8 sequence
  size_t tail = whole.size() - kTail;
  while (tail < whole.size() && continuation(tail)) ++tail;
  std::string out = whole.substr(0, head);
  out += " [... cocoon audit: " + std::to_string(tail - head) + " bytes cut ...] ";
  out.append(whole, tail, std::string::npos);
  return out;
}

// cocoon.sandbox.argv: what ran, even when the strings above were cut. The
// SHA-256 is over each argument followed by a NUL (/proc/PID/cmdline's form).
json ArgvSummary(const std::vector<std::string>& argv, bool truncated) {
  std::string cmdline;
  for (const auto& arg : argv) {
    cmdline += arg;
    cmdline += '\0';
  }
  return {{"bytes", Safe53(cmdline.size())}, {"count", Safe53(argv.size())}, {"sha256", Sha256Hex(cmdline)},
          {"truncated", truncated}};
}

// True when bash's '...' quoting would show `arg` as it is: no control,
// invisible or direction-changing character, and valid UTF-8.
bool Displayable(std::string_view arg) { return EscapeControlCharacters(arg) == arg; }

// Uncapped: callers pass it through Capped. An argument a terminal would act
// on or hide part of is written in bash's $'...' form (\n, \xNN, \\, \'),
// which a shell reads back as the same bytes in any locale: the command
// line stays one visible line and still says exactly what ran.
std::string ShellJoin(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& arg : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !arg.empty() && arg.find_first_not_of(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./=:,+@%") == std::string::npos;
    if (plain) { out += arg; continue; }
    if (Displayable(arg)) {
      out += '\'';
      for (char c : arg) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
      out += '\'';
      continue;
    }
    out += AnsiCQuoted(arg);
  }
  return out;
}

std::string BaseName(const std::string& path) {
  auto slash = path.rfind('/');
  return H(slash == std::string::npos ? path : path.substr(slash + 1));
}

void RunFields(json& e, const std::string& policy_name, const std::string& run_id) {
  if (!policy_name.empty()) e["cocoon"]["policy"]["name"] = S(policy_name);
  if (!run_id.empty()) e["cocoon"]["run_id"] = S(run_id);
}

// OCSF wants at least one of pid/uid/cpid. The launch event is written
// before the sandbox's first process exists, so it has no pid: its `uid`
// (OCSF: "a unique identifier for this process assigned by the producer")
// is the run's id, which every event of the run carries as cocoon.run_id.
json SandboxedProcess(int pid, const std::string& name, const std::string& run_id = "") {
  json process = json::object();
  if (pid > 0) process["pid"] = pid;
  if (!name.empty()) process["name"] = S(name);
  if (pid <= 0) process["uid"] = run_id.empty() ? std::string("unknown") : S(run_id);
  return process;
}

// Renders the body once, here, outside the writer's lock. Should rendering
// fail (it cannot for these builders), the DOM is kept so that Append
// reports the error.
Event Rendered(json e) {
  auto rendered = RenderEvent(e);
  if (!rendered.ok()) return Event{std::move(e), nullptr};
  return Event{json(), std::move(*rendered)};  // null: nothing to allocate or free
}

json McpFields(const McpCallInfo& call) {
  json fields = {{"tool", H(call.tool)}, {"request_id", H(call.request_id)}};
  if (!call.client_name.empty()) fields["client_name"] = H(call.client_name);
  return fields;
}

}  // namespace

std::string_view LimitKindName(LimitKind kind) {
  switch (kind) {
    case LimitKind::kTimeout: return "timeout";
    case LimitKind::kOom: return "oom";
    case LimitKind::kProcessCap: return "process-cap";
    case LimitKind::kDiskQuota: return "disk-quota";
    case LimitKind::kOutputTruncated: return "output-truncated";
  }
  return "unknown";
}

Event PolicyCompiled(const PolicyCompiledInfo& info) {
  bool compile = info.operation != "check";
  json e = OcsfBase(OcsfClass::kApplicationLifecycle, 99, info.ok ? 1 : 3);
  e["activity_name"] = compile ? "Compile" : "Check";
  e["type_name"] = std::string("Application Lifecycle: ") + (compile ? "Compile" : "Check");
  e["app"] = {{"name", "cocoon"}, {"vendor_name", "Cocoon"}, {"version", ProductVersion()}};
  e["status_id"] = info.ok ? 1 : 2;
  e["status"] = info.ok ? "Success" : "Failure";
  EcsEvent(e, "event", {"configuration"}, {compile ? "creation" : "info"},
           compile ? "policy-compiled" : "policy-checked", info.ok ? "success" : "failure");
  json& policy = e["cocoon"]["policy"];
  policy = {{"name", S(info.policy_name)}, {"path", S(info.policy_path)}, {"sha256", S(info.policy_sha256)},
            {"errors", info.error_count}, {"warnings", info.warning_count}, {"operation", S(info.operation)}};
  json artifacts = json::object();
  for (const auto& [target, sha] : info.artifacts) artifacts[S(target)] = S(sha);
  policy["artifacts"] = artifacts;
  e["message"] = H("policy " + info.policy_name + (compile ? " compiled" : " checked") +
                   (info.ok ? "" : " with errors"));
  return Rendered(std::move(e));
}

Event SandboxLaunched(const SandboxLaunchedInfo& info) {
  json e = OcsfBase(OcsfClass::kProcessActivity, 1, 1);
  std::string name = info.argv.empty() ? "" : BaseName(info.argv[0]);
  json process = SandboxedProcess(info.pid, name, info.run_id);
  bool cut = false;
  std::string command_line = Capped(ShellJoin(info.argv), cut);
  process["cmd_line"] = command_line;      // OCSF
  process["command_line"] = command_line;  // ECS
  json args = json::array();               // ECS (array of strings survives Wazuh)
  // Each argument is capped, and so is their sum: a raised stack limit lets
  // argv reach several MiB (six times that escaped), and a launch line past
  // the 16 MiB a writer reads back as the log's tail (sink.cc) would lock
  // every later writer out once a kill -9 left it last. The argv summary's
  // count and SHA-256 cover every argument.
  constexpr size_t kMaxArgsBytes = 256 << 10;
  size_t args_bytes = 0;
  for (const auto& arg : info.argv) {
    std::string kept = Capped(arg, cut);
    if (args_bytes + kept.size() > kMaxArgsBytes) {
      cut = true;
      break;
    }
    args_bytes += kept.size();
    args.push_back(std::move(kept));
  }
  process["args"] = std::move(args);
  if (!info.cwd.empty()) process["working_directory"] = H(info.cwd);
  process["user"] = {{"uid", std::to_string(info.uid_inside)}, {"name", S(info.user_inside)}};
  if (!info.argv.empty()) process["file"] = {{"path", Capped(EscapeControlCharacters(info.argv[0], Backslash::kEscaped), cut)}, {"name", name}, {"type_id", 1}};
  e["process"] = process;
  EcsEvent(e, "event", {"process"}, {"start"}, "sandbox-launched", "success");
  json& sandbox = e["cocoon"]["sandbox"];
  sandbox = {{"profile", S(info.profile)}, {"namespaces", Strings(info.namespaces)},
             {"landlock_abi", info.landlock_abi}, {"overrides", Strings(info.overrides)},
             {"uid_inside", info.uid_inside}, {"gid_inside", info.gid_inside}};
  json limits = json::object();  // keyed by limit: flattens cleanly (no arrays of objects)
  for (const auto& limit : info.limits) {
    limits[S(limit.limit)] = {{"requested", Safe53(limit.requested)}, {"unit", S(limit.unit)},
                              {"mechanism", S(limit.mechanism)}, {"required", limit.required}};
  }
  sandbox["limits"] = limits;
  sandbox["argv"] = ArgvSummary(info.argv, cut);
  RunFields(e, info.policy_name, info.run_id);
  if (!info.policy_sha256.empty()) e["cocoon"]["policy"]["sha256"] = S(info.policy_sha256);
  if (!info.mcp.tool.empty()) e["cocoon"]["mcp"] = McpFields(info.mcp);
  bool message_cut = false;
  e["message"] = Capped(std::string(cut ? "sandbox launched (command line truncated): " : "sandbox launched: ") +
                            ShellJoin(info.argv), message_cut);
  return Rendered(std::move(e));
}

json SyscallDeniedFields(const SyscallDeniedInfo& info) {
  bool logged_only = info.action == "log" || info.action == "trace";
  bool killed = info.action.rfind("kill", 0) == 0;
  json e = OcsfBase(OcsfClass::kKernelActivity, 4, logged_only ? 1 : (killed ? 4 : 3));
  e["kernel"] = {{"name", S(info.name)}, {"type_id", 2}, {"type", "System Call"}};
  e["actor"] = {{"process", SandboxedProcess(info.pid, "", info.run_id)}};
  // security_control profile (OCSF): the control's decision and its policy.
  e["metadata"]["profiles"] = {"host", "security_control"};
  e["action_id"] = logged_only ? 1 : 2;  // 1 Allowed, 2 Denied
  e["action"] = logged_only ? "Allowed" : "Denied";
  e["disposition_id"] = logged_only ? 17 : 2;  // 17 Logged, 2 Blocked
  e["disposition"] = logged_only ? "Logged" : "Blocked";
  e["policy"] = {{"name", S(info.policy_name.empty() ? std::string("unknown") : info.policy_name)}};
  EcsEvent(e, "event", {"process"}, {logged_only ? "info" : "denied"},
           logged_only ? "syscall-logged" : "syscall-denied", logged_only ? "success" : "failure");
  json args = json::array();
  for (size_t i = 0; i < info.args.size() && i < 6; ++i) args.push_back(Hex64(info.args[i]));
  e["cocoon"]["syscall"] = {{"name", S(info.name)}, {"nr", info.number}, {"args", args},
                            {"action", S(info.action)}, {"count", Safe53(info.count)}};
  RunFields(e, info.policy_name, info.run_id);
  e["message"] = H("syscall " + info.name + " " + (logged_only ? "logged" : "denied") + " (" + info.action +
                   ") x" + std::to_string(info.count));
  return e;
}

namespace {

// Writes a canonical object member by member. Keys must come in JCS order
// (ASCII, sorted): the unit test PrerenderedSyscallDeniedMatchesTheDomPath
// checks the result byte for byte against the DOM path.
class CanonicalText {
 public:
  explicit CanonicalText(RenderedEvent& r) : r_(r) {}
  CanonicalText& Open() { r_.body += '{'; first_ = true; return *this; }
  CanonicalText& Close() { r_.body += '}'; first_ = false; return *this; }
  CanonicalText& Key(std::string_view key) {
    if (!first_) r_.body += ',';
    first_ = false;
    r_.body += '"';
    r_.body += key;
    r_.body += "\":";
    return *this;
  }
  CanonicalText& Str(std::string_view key, std::string_view value) {  // value sanitised + escaped
    Key(key);
    AppendJcsString(SanitizeUtf8(value, kMaxStringBytes), r_.body);
    return *this;
  }
  CanonicalText& Int(std::string_view key, int64_t value) {
    Key(key);
    r_.body += std::to_string(value);
    return *this;
  }
  CanonicalText& Raw(std::string_view key, std::string_view canonical) {
    Key(key);
    r_.body += canonical;
    return *this;
  }
  CanonicalText& Cut(std::string_view key, Splice splice) {
    Key(key);
    r_.splices.push_back(SplicePoint{r_.body.size(), static_cast<int>(splice)});
    return *this;
  }
  CanonicalText& Object(std::string_view key) { Key(key); return Open(); }

 private:
  RenderedEvent& r_;
  bool first_ = true;
};

std::string JcsString(std::string_view text) {
  std::string out;
  AppendJcsString(SanitizeUtf8(text, kMaxStringBytes), out);
  return out;
}

}  // namespace

// The flood event (a tight loop of denials) is written as canonical text
// directly, with no DOM: same bytes as RenderEvent(SyscallDeniedFields(info)).
Event SyscallDenied(const SyscallDeniedInfo& info) {
  bool logged_only = info.action == "log" || info.action == "trace";
  bool killed = info.action.rfind("kill", 0) == 0;
  int severity = logged_only ? 1 : (killed ? 4 : 3);
  static const char* const kSeverity[] = {"Unknown", "Informational", "Low", "Medium", "High"};
  auto rendered = std::make_shared<RenderedEvent>();
  rendered->severity_id = severity;
  rendered->body.reserve(1200);
  CanonicalText t(*rendered);
  t.Open().Cut("@timestamp", Splice::kTimestamp);
  t.Str("action", logged_only ? "Allowed" : "Denied").Int("action_id", logged_only ? 1 : 2);
  t.Int("activity_id", 4).Str("activity_name", "Invoke");
  t.Object("actor").Object("process");
  if (info.pid > 0) t.Int("pid", info.pid);
  else t.Str("uid", info.run_id.empty() ? std::string("unknown") : info.run_id);
  t.Close().Close();
  t.Str("category_name", "System Activity").Int("category_uid", 1);
  t.Str("class_name", "Kernel Activity").Int("class_uid", 1003);
  t.Object("cocoon").Cut("integrity", Splice::kIntegrity);
  if (!info.policy_name.empty()) t.Object("policy").Str("name", info.policy_name).Close();
  if (!info.run_id.empty()) t.Str("run_id", info.run_id);
  std::string args = "[";
  for (size_t i = 0; i < info.args.size() && i < 6; ++i) args += (i ? ",\"" : "\"") + Hex64(info.args[i]) + "\"";
  args += "]";
  t.Object("syscall").Str("action", info.action).Raw("args", args).Int("count", static_cast<int64_t>(Safe53(info.count)));
  t.Str("name", info.name).Int("nr", info.number).Close().Close();
  t.Cut("device", Splice::kDevice);
  t.Str("disposition", logged_only ? "Logged" : "Blocked").Int("disposition_id", logged_only ? 17 : 2);
  t.Raw("ecs", "{\"version\":" + JcsString(kEcsVersion) + "}");
  t.Object("event").Str("action", logged_only ? "syscall-logged" : "syscall-denied").Raw("category", "[\"process\"]");
  t.Str("dataset", "cocoon.audit").Str("kind", "event").Str("module", "cocoon");
  t.Str("outcome", logged_only ? "success" : "failure").Cut("sequence", Splice::kSequence);
  t.Raw("type", logged_only ? "[\"info\"]" : "[\"denied\"]").Close();
  t.Object("kernel").Str("name", info.name).Str("type", "System Call").Int("type_id", 2).Close();
  t.Str("message", EscapeControlCharacters("syscall " + info.name + " " + (logged_only ? "logged" : "denied") + " (" +
                                               info.action + ") x" + std::to_string(info.count),
                                           Backslash::kEscaped));
  t.Object("metadata").Str("log_name", "cocoon-audit");
  t.Object("product").Str("name", "Cocoon").Str("vendor_name", "Cocoon").Str("version", ProductVersion()).Close();
  t.Raw("profiles", "[\"host\",\"security_control\"]").Cut("sequence", Splice::kSequence).Cut("uid", Splice::kUid);
  t.Str("version", kOcsfVersion).Close();
  t.Object("policy").Str("name", info.policy_name.empty() ? std::string("unknown") : info.policy_name).Close();
  t.Str("severity", kSeverity[severity]).Int("severity_id", severity);
  t.Cut("time", Splice::kTime).Str("type_name", "Kernel Activity: Invoke").Int("type_uid", 100304).Close();
  return Event{json(), std::move(rendered)};
}

Event LimitHit(const LimitHitInfo& info) {
  std::string kind(LimitKindName(info.kind));
  json e = OcsfBase(OcsfClass::kDetectionFinding, 1, 3);
  e["finding_info"] = {{"uid", S(info.run_id + ":limit:" + kind + (info.detail.empty() ? "" : ":" + info.detail))},
                       {"title", "Sandbox limit hit: " + kind},
                       {"types", {"resource-limit"}}};
  EcsEvent(e, "event", {"process"}, {"info"}, "limit-hit", "failure");
  e["cocoon"]["limit"] = {{"kind", kind}, {"limit", Safe53(info.limit)}, {"observed", Safe53(info.observed)},
                          {"unit", S(info.unit)}, {"detail", S(info.detail)}};
  RunFields(e, info.policy_name, info.run_id);
  e["message"] = H("limit hit: " + kind + (info.detail.empty() ? "" : " (" + info.detail + ")"));
  return Rendered(std::move(e));
}

Event BreakoutFinding(const BreakoutFindingInfo& info) {
  json e = OcsfBase(OcsfClass::kDetectionFinding, 1, 4);
  e["finding_info"] = {{"uid", H(info.run_id + ":breakout:" + info.path)},
                       {"title", H("Sandbox breakout artifact: " + info.kind)},
                       {"types", {"sandbox-breakout"}}};
  e["is_alert"] = true;
  EcsEvent(e, "alert", {"intrusion_detection"}, {"indicator"}, "breakout-finding", "unknown");
  e["cocoon"]["breakout"] = {{"path", H(info.path)}, {"kind", H(info.kind)}, {"target", H(info.target)}};
  RunFields(e, info.policy_name, info.run_id);
  e["message"] = H("breakout finding: " + info.kind + " at " + info.path +
                   (info.target.empty() ? "" : " -> " + info.target));
  return Rendered(std::move(e));
}

Event ToolCall(const ToolCallInfo& info) {
  json e = OcsfBase(OcsfClass::kProcessActivity, 99, info.refused ? 3 : 1);
  e["activity_name"] = "MCP tool call";
  e["type_name"] = "Process Activity: MCP tool call";  // as every other activity-99 event: class: activity_name
  e["status_id"] = info.refused ? 2 : 1;
  e["status"] = info.refused ? "Failure" : "Success";
  if (!info.detail.empty()) e["status_detail"] = H(info.detail);
  e["process"] = SandboxedProcess(info.server_pid, "cocoon mcp");
  EcsEvent(e, "event", {"process"}, {"info"}, info.refused ? "mcp-tool-call-refused" : "mcp-tool-call",
           info.refused ? "failure" : "success");
  e["cocoon"]["mcp"] = McpFields(info.call);
  e["cocoon"]["mcp"]["refused"] = info.refused;
  if (!info.kind.empty()) e["cocoon"]["mcp"]["kind"] = S(info.kind);
  const std::string tool = info.call.tool.empty() ? "(no tool named)" : info.call.tool;
  e["message"] = H("MCP tool call " + tool + (info.refused ? " refused: " : ": ") + info.detail);
  return Rendered(std::move(e));
}

Event ProcessExited(const ProcessExitedInfo& info) {
  bool clean = info.termination_reason == "exited";
  json e = OcsfBase(OcsfClass::kProcessActivity, 2, clean ? 1 : 3);
  json process = SandboxedProcess(info.pid, "", info.run_id);
  process["exit_code"] = info.exit_code;  // ECS process.exit_code
  e["process"] = process;
  e["exit_code"] = info.exit_code;        // OCSF 1007 exit_code
  EcsEvent(e, "event", {"process"}, {"end"}, "process-exited",
           clean && info.exit_code == 0 ? "success" : "failure");
  e["cocoon"]["exit"] = {{"signal", info.signal}, {"termination_reason", S(info.termination_reason)},
                         {"wall_ms", Safe53(info.wall_ms)}, {"user_cpu_ms", Safe53(info.user_cpu_ms)},
                         {"system_cpu_ms", Safe53(info.system_cpu_ms)}, {"peak_memory_kib", Safe53(info.peak_memory_kib)},
                         {"peak_memory_source", S(info.peak_memory_source)},
                         {"stdout_bytes", Safe53(info.stdout_bytes)}, {"stderr_bytes", Safe53(info.stderr_bytes)},
                         {"breakout_clean", info.breakout_clean}};
  if (!info.error.empty()) e["cocoon"]["exit"]["error"] = H(info.error);
  if (!info.cancelled_after_end.empty()) e["cocoon"]["exit"]["cancelled_after_end"] = H(info.cancelled_after_end);
  if (info.breakout_findings != 0) {
    e["cocoon"]["exit"]["breakout_findings"] = Safe53(info.breakout_findings);
    e["cocoon"]["exit"]["breakout_findings_logged"] = Safe53(info.breakout_findings_logged);
  }
  if (!info.work_mode.empty()) {
    e["cocoon"]["workdir"] = {{"mode", S(info.work_mode)}, {"verified", S(info.verified)}, {"committed", info.committed}};
    if (!info.verification_error.empty()) e["cocoon"]["workdir"]["error"] = H(info.verification_error);
    if (!info.commit_warning.empty()) e["cocoon"]["workdir"]["warning"] = H(info.commit_warning);
  }
  if (!info.writable_verified.empty()) {
    e["cocoon"]["writable_mounts"] = {{"verified", S(info.writable_verified)}};
    if (!info.writable_error.empty()) e["cocoon"]["writable_mounts"]["error"] = H(info.writable_error);
  }
  RunFields(e, info.policy_name, info.run_id);
  e["message"] = H("process exited: " + info.termination_reason + " code " + std::to_string(info.exit_code) +
                   (info.signal ? " signal " + std::to_string(info.signal) : ""));
  return Rendered(std::move(e));
}

}  // namespace cocoon::audit
