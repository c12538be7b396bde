// tools/call: admission (the concurrency cap and queue), the call's own
// thread, the executor, live progress, and the audit record of every call
// refused before it ran. Every tools/call message with a method leaves an
// audit event: the sandbox's launch and exit events when one ran, else a
// refused (or, for inspect_runtimes, a completed) tool-call event whose
// reference goes into the answer (the result's `audit`, or `error.data.audit`).
#include <algorithm>
#include <chrono>
#include <system_error>
#include <thread>

#include "cli/mcp/server.h"
#include "cli/mcp/server_internal.h"
#include "compiler/common/log.h"

namespace cocoon::mcp {
namespace {

using nlohmann::json;

// Bytes at the end of `data` that start a UTF-8 sequence the next chunk will
// finish; they are held back so that a character split across two reads is
// not turned into two replacement characters.
size_t IncompleteUtf8Tail(std::string_view data) {
  for (size_t back = 1; back <= std::min<size_t>(3, data.size()); ++back) {
    auto c = static_cast<unsigned char>(data[data.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: keep looking for the lead
    size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

// The tool a tools/call message names, when it names one as a string.
std::string_view ToolNamed(const Message& message) {
  auto name = message.params.is_object() ? message.params.find("name") : message.params.end();
  if (name == message.params.end() || !name->is_string()) return {};
  return name->get_ref<const std::string&>();
}

}  // namespace

json Server::AuditRefusal(const CallIdentity& call, std::string_view kind, const Status& why) {
  auto written = executor_.AuditRefusedCall(call, kind, why);
  if (!written.ok()) {
    log::Error("audit: the refused " + SanitizeUtf8(call.tool) + " call could not be recorded: " +
               written.status().ToString());
    return {{"sequence", 0}, {"event_id", ""},
            {"note", "this refusal could not be written to the audit log: " + SanitizeUtf8(written.status().message())}};
  }
  return AuditJson(*written);
}

void Server::RefuseToolCallMessage(const Message& message, const RequestContext& context, std::string_view kind,
                                   int code, const std::string& why, json data) {
  const std::string request_id = message.id.is_null() ? std::string() : message.id.text();
  std::string_view tool = ToolNamed(message);
  std::string client_name = context.client_name;
  if (client_name.empty()) {  // refused before its context was resolved: the session's client
    std::lock_guard lock(mutex_);
    client_name = client_name_;
  }
  // Only a tool this server has is recorded by name: the field is for the
  // SIEM to group on, and an unknown name is the client's text (in `detail`).
  json audit = AuditRefusal({IsKnownTool(tool) ? tool : std::string_view(), request_id, client_name}, kind,
                            Status(ErrorCode::kInvalidArgument, why));
  const bool answerable = message.kind == MessageKind::kRequest ||
                          (message.kind == MessageKind::kInvalid && !message.unanswerable);
  if (!answerable) return;  // a notification gets no answer, not even an error
  if (!data.is_object()) data = json::object();
  data["audit"] = std::move(audit);
  SendError(context, code, why, data);
}

void Server::SendRequestError(const Message& message, const RequestContext& context, int code, const std::string& why,
                              const json& data) {
  if (message.method == "tools/call") return RefuseToolCallMessage(message, context, "bad_request", code, why, data);
  SendError(context, code, why, data);
}

void Server::StartToolCall(const Message& message, const RequestContext& context) {
  const json& params = message.params;
  if (!params.contains("name") || !params["name"].is_string()) {
    return RefuseToolCallMessage(message, context, "bad_request", kInvalidParams, "tools/call needs a string 'name'");
  }
  std::string name = params["name"].get<std::string>();
  if (!IsKnownTool(name)) {
    return RefuseToolCallMessage(message, context, "unknown_tool", kInvalidParams,
                                 "Unknown tool: " + EchoOfClientText(name));
  }
  json arguments = params.contains("arguments") ? params["arguments"] : json::object();
  if (arguments.is_null()) arguments = json::object();
  if (!arguments.is_object()) {
    return RefuseToolCallMessage(message, context, "bad_request", kInvalidParams, "'arguments' must be an object");
  }

  auto call = std::make_shared<Call>();
  call->context = context;
  call->key = IdKey(message.id.value());
  call->tool = name;
  call->arguments = std::move(arguments);
  bool busy = false;
  std::string refused;  // why the call was not admitted, if it was not
  {
    std::lock_guard lock(mutex_);
    if (calls_.count(call->key)) {
      refused = "request id is already in use by a call in flight";
    } else if (shutting_down_) {
      refused = "the server is shutting down";
    } else {
      busy = in_flight_ >= options_.max_concurrent + options_.max_queued ||
             (in_flight_ > 0 && request_bytes_in_flight_ + context.message_bytes > options_.max_request_bytes_in_flight);
      if (!busy) {
        calls_[call->key] = call;
        ++in_flight_;
        request_bytes_in_flight_ += context.message_bytes;
      }
    }
  }
  if (!refused.empty()) {
    bool duplicate = refused.rfind("request id", 0) == 0;
    return RefuseToolCallMessage(message, context, duplicate ? "duplicate_id" : "shutting_down",
                                 duplicate ? kInvalidRequest : kInternalError, refused);
  }
  if (busy) {
    Status why = ResourceExhaustedError("server busy: " + std::to_string(options_.max_concurrent) +
                                        " sandboxes running and the queue is full (at most " +
                                        std::to_string(options_.max_queued) + " calls, or " +
                                        std::to_string(options_.max_request_bytes_in_flight) +
                                        " bytes of requests, in flight); retry later");
    return SendToolResult(context,
                          CallResultFromError(call->tool, "busy", why, AuditRefusal(IdentityOf(*call), "busy", why)));
  }
  if (options_.dispatch == Dispatch::kInline) return RunToolCall(call);
  try {
    std::thread([this, call] { RunToolCall(call); }).detach();
  } catch (const std::system_error& e) {  // EAGAIN: out of threads; the call was counted in flight
    {
      std::lock_guard lock(mutex_);
      calls_.erase(call->key);
      --in_flight_;
      request_bytes_in_flight_ -= call->context.message_bytes;
      changed_.notify_all();
    }
    RefuseToolCallMessage(message, context, "server_error", kInternalError,
                          std::string("could not start the call: ") + e.what());
  }
}

CallIdentity Server::IdentityOf(const Call& call) {
  return {call.tool, call.context.id.text(), call.context.client_name};
}

void Server::RunToolCall(const std::shared_ptr<Call>& call) {
  json result = ExecuteTool(*call);
  {
    std::lock_guard lock(mutex_);
    calls_.erase(call->key);  // before answering, so the client may reuse the id at once
  }
  // A cancelled request gets no response (MCP cancellation: the receiver
  // SHOULD NOT respond); its sandbox was killed through the CancelToken.
  if (!call->cancel.cancelled()) SendToolResult(call->context, std::move(result));
  // The last call of a batch sends the batch's array here, while the server
  // is certainly alive: it waits for in_flight_ to reach 0 before going away.
  call->context.batch.reset();
  std::lock_guard lock(mutex_);
  --in_flight_;
  request_bytes_in_flight_ -= call->context.message_bytes;
  changed_.notify_all();
}

bool Server::AcquireSlot(Call& call) {
  std::unique_lock lock(mutex_);
  // A sandbox starts only while the answers waiting for the client fit
  // max_queued_response_bytes, as the reader reads only then (Serve): each
  // answer counts as the size of its line (its run's output JSON-escaped
  // twice, structuredContent and its text copy: at most six times the
  // captured bytes, CallResultFromExec; it holds the output once until the
  // writer builds the line, SendToolResult), and calls already read
  // (up to max_concurrent + max_queued) would otherwise each add one while
  // the client reads nothing. The queue drains on the writer thread, which
  // does not notify changed_: hence the timed wait.
  for (;;) {
    if (call.cancel.cancelled() || shutting_down_) return false;
    if (running_ < options_.max_concurrent && out_.HasRoom(options_.max_queued_response_bytes)) break;
    changed_.wait_for(lock, std::chrono::milliseconds(50));
  }
  ++running_;
  return true;
}

void Server::ReleaseSlot() {
  std::lock_guard lock(mutex_);
  --running_;
  changed_.notify_all();
}

json Server::ExecuteTool(Call& call) {
  const CallIdentity identity = IdentityOf(call);
  if (call.tool == kInspectRuntimes) {
    if (!call.arguments.empty()) {
      Status why = InvalidArgumentError("inspect_runtimes takes no arguments");
      return CallResultFromError(call.tool, "bad_input", why, AuditRefusal(identity, "bad_input", why));
    }
    json runtimes = executor_.InspectRuntimes();
    size_t available = 0, total = 0;
    if (runtimes.contains("runtimes") && runtimes["runtimes"].is_array()) {
      for (const auto& r : runtimes["runtimes"]) {
        ++total;
        if (r.value("available", false)) ++available;
      }
    }
    auto audit = executor_.AuditToolCall(
        identity, std::to_string(total) + " runtimes, " + std::to_string(available) + " installed");
    if (!audit.ok()) {
      return CallResultFromError(call.tool, "audit_failed", audit.status(),
                                 {{"sequence", 0}, {"event_id", ""}, {"note", "the call's audit event could not be written"}});
    }
    return CallResultFromRuntimes(runtimes, *audit);
  }
  auto request = ParseToolArguments(call.tool, call.arguments, tool_context_);
  call.arguments = json();  // the request holds what the run needs: not twice while it waits and runs
  if (!request.ok()) {
    Log(call.context, LogLevel::kWarning, {{"tool", call.tool}, {"refused", request.status().message()}});
    return CallResultFromError(call.tool, "bad_input", request.status(), AuditRefusal(identity, "bad_input", request.status()));
  }
  request->request_id = call.context.id.text();
  request->client_name = call.context.client_name;
  if (!AcquireSlot(call)) {
    Status why(ErrorCode::kUnavailable, "cancelled before it started");
    return CallResultFromError(call.tool, "cancelled", why, AuditRefusal(identity, "cancelled", why));
  }
  ExecHooks hooks;
  hooks.cancel = &call.cancel;
  if (!call.context.progress_token.is_null()) {
    hooks.on_output = [this, &call](OutputStream stream, std::string_view data) { SendProgress(call, stream, data); };
  }
  auto result = executor_.Execute(*request, hooks);
  ReleaseSlot();
  if (!result.ok()) {
    bool bad_input = result.status().code() == ErrorCode::kInvalidArgument;
    const char* kind = bad_input ? "bad_input" : "launch_failed";
    Log(call.context, LogLevel::kError, {{"tool", call.tool}, {"failed", result.status().message()}});
    return CallResultFromError(call.tool, kind, result.status(), AuditRefusal(identity, kind, result.status()));
  }
  Log(call.context, IsErrorStatus(result->status) ? LogLevel::kWarning : LogLevel::kInfo,
      {{"tool", call.tool}, {"status", ExecStatusName(result->status)}, {"exit_code", result->exit_code},
       {"audit_event_id", result->audit_event_id}});
  return CallResultFromExec(std::move(*result));
}

void Server::SendProgress(Call& call, OutputStream stream, std::string_view data) {
  std::lock_guard lock(call.progress_mutex);
  if (call.cancel.cancelled() || call.progress_truncated) return;
  size_t index = stream == OutputStream::kStdout ? 0 : 1;
  std::string text = call.pending_utf8[index];
  size_t room = options_.max_progress_bytes - std::min(options_.max_progress_bytes, call.progress_bytes);
  bool truncated = data.size() > room;
  text.append(data.substr(0, room));
  call.progress_bytes += std::min(room, data.size());
  size_t tail = truncated ? 0 : IncompleteUtf8Tail(text);
  call.pending_utf8[index] = text.substr(text.size() - tail);
  text.resize(text.size() - tail);
  if (truncated) {
    call.progress_truncated = true;
    text += "\n[cocoon: live output truncated after " + std::to_string(options_.max_progress_bytes) +
            " bytes; the result has the captured output]";
  }
  if (text.empty()) return;
  json params = {{"progressToken", call.context.progress_token},
                 {"progress", ++call.progress_count},
                 {"message", SanitizeUtf8(text)},
                 {"_meta", {{"dev.cocoon/stream", index == 0 ? "stdout" : "stderr"}}}};
  // Dropped for a client that is not reading: the rest of this call's
  // progress goes too (no gaps in the middle); the result has the output.
  if (!WriteIfRoom(NotificationLine("notifications/progress", params))) call.progress_truncated = true;
}

}  // namespace cocoon::mcp
