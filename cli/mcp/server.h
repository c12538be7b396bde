// The MCP server: newline-delimited JSON-RPC 2.0 over a pair of byte streams
// (stdio for `cocoon mcp`). Dual-era, as the 2026-07-28 revision's
// "Versioning and Compatibility" page describes:
//  - legacy clients open with `initialize` (2024-11-05, 2025-03-26,
//    2025-06-18, 2025-11-25; an unknown version is answered with 2025-11-25);
//  - modern clients (2026-07-28) send no handshake: every request carries
//    `_meta["io.modelcontextprotocol/protocolVersion"]` and
//    `clientCapabilities`, is served statelessly, and its result carries
//    `resultType` and the server's identity. `server/discover` is supported.
//
// tools/call runs on its own thread so that requests (ping, tools/list,
// notifications/cancelled) keep being served while sandboxes run; at most
// `max_concurrent` sandboxes run at once and later calls wait for a slot.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "cli/mcp/executor.h"
#include "cli/mcp/json_rpc.h"
#include "cli/mcp/outgoing_lines.h"
#include "cli/mcp/oversized_line.h"
#include "cli/mcp/tools.h"
#include "compiler/common/status.h"

namespace cocoon::mcp {

inline constexpr std::string_view kLatestLegacyVersion = "2025-11-25";
inline constexpr std::string_view kModernVersion = "2026-07-28";

enum class Dispatch {
  kThreaded,  // tools/call on its own thread (the server)
  kInline,    // tools/call on the caller's thread (the fuzzer, simple tests)
};

struct ServerOptions {
  size_t max_concurrent = 4;         // sandboxes running at once
  size_t max_queued = 64;            // calls waiting for a slot; beyond: refused as busy
  // The requests of the calls in flight (running or waiting), by the size
  // of their messages: beyond, a further call is refused as busy (one call
  // is always admitted, however large). Without it, 64 queued calls of
  // 8 MiB of stdin each held over a GiB.
  size_t max_request_bytes_in_flight = 64 << 20;
  size_t max_message_bytes = 8 << 20;
  size_t max_progress_bytes = 1 << 20;  // output streamed as progress, per call
  // Progress and log notifications waiting for a client that reads slowly:
  // past this many bytes queued they are dropped (outgoing_lines.h).
  size_t max_queued_notification_bytes = 1 << 20;
  // Answers waiting for a client that does not read them: past this many
  // bytes queued, stdin is not read until the client catches up.
  size_t max_queued_response_bytes = 64 << 20;
  Dispatch dispatch = Dispatch::kThreaded;
  std::string server_version = "0.0.0";
  std::string instructions;
  ToolLimits tool_limits;
  ParseOptions parse;
};

// Log levels of RFC 5424 as MCP names them, in increasing severity.
enum class LogLevel { kDebug, kInfo, kNotice, kWarning, kError, kCritical, kAlert, kEmergency, kOff };
std::optional<LogLevel> ParseLogLevel(std::string_view name);

class Server {
 public:
  using LineWriter = std::function<void(const std::string& line)>;  // without the newline

  Server(Executor& executor, LineWriter writer, ServerOptions options);
  ~Server();  // cancels every call in flight and waits for them
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // One line from the client (without its newline).
  void HandleLine(std::string_view line);
  // A line longer than max_message_bytes, read through (oversized_line.h)
  // and discarded: refused with the id it showed, unless it is a
  // notification or a response (never answered).
  void HandleOversizedLine(const OversizedLine& line);

  // Reads lines from `in_fd` until EOF or until `stop_fd` (if >= 0) becomes
  // readable, then waits for the calls in flight and for their answers to
  // be written; `stop_fd` becoming readable meanwhile cancels them and
  // stops waiting for the client. Returns what ended it.
  Status Serve(int in_fd, int stop_fd = -1);

  void CancelAll();
  // Waits for every call in flight to be answered and every line to be written.
  void WaitIdle();
  size_t calls_in_flight();

 private:
  struct Call;
  struct RequestContext;
  class BatchReply;

  // Why a batch is refused in this session ("" when it is not).
  std::string BatchRefusal();
  void RefuseBatch(const ParsedLine& parsed, const std::string& why);
  // `bytes`: the message's size, which a tools/call holds while in flight.
  void HandleValue(const nlohmann::json& value, std::string_view id_token, const std::shared_ptr<BatchReply>& batch,
                   size_t bytes);
  void HandleRequest(const Message& message, const std::shared_ptr<BatchReply>& batch, size_t bytes);
  void HandleNotification(const Message& message);
  bool ResolveEra(const Message& message, RequestContext* context);
  nlohmann::json Initialize(const nlohmann::json& params);
  std::string NegotiatedVersion();  // "" until initialize has succeeded
  nlohmann::json Discover() const;
  nlohmann::json ServerInfo() const;
  nlohmann::json Capabilities() const;
  void StartToolCall(const Message& message, const RequestContext& context);
  static CallIdentity IdentityOf(const Call& call);
  // Records a tools/call refused before it ran; returns the result's `audit`
  // object (the reference, or a note saying why there is none).
  nlohmann::json AuditRefusal(const CallIdentity& call, std::string_view kind, const Status& why);
  // A tools/call message refused at the protocol level: audited, then
  // answered with a JSON-RPC error whose data carries the audit reference
  // (a notification is only audited).
  void RefuseToolCallMessage(const Message& message, const RequestContext& context, std::string_view kind, int code,
                             const std::string& why, nlohmann::json data = nullptr);
  // A request's JSON-RPC error; for tools/call, RefuseToolCallMessage.
  void SendRequestError(const Message& message, const RequestContext& context, int code, const std::string& why,
                        const nlohmann::json& data = nullptr);
  void RunToolCall(const std::shared_ptr<Call>& call);
  nlohmann::json ExecuteTool(Call& call);
  bool AcquireSlot(Call& call);
  void ReleaseSlot();
  // The response to one request: its own line, or its place in the batch
  // it came in (RequestContext::batch).
  void SendResult(const RequestContext& context, nlohmann::json result);
  // A tools/call result (tools.h): its text copy is written with the line.
  void SendToolResult(const RequestContext& context, nlohmann::json result);
  void AddModernResultFields(const RequestContext& context, nlohmann::json& result) const;
  void SendError(const RequestContext& context, int code, std::string_view message,
                 const nlohmann::json& data = nullptr);
  void Respond(const RequestContext& context, std::string line);
  void SendProgress(Call& call, OutputStream stream, std::string_view data);
  void Log(const RequestContext& context, LogLevel level, const nlohmann::json& data);
  void Write(std::string line);
  // Progress and log notifications: false when dropped (a client not reading).
  bool WriteIfRoom(std::string line);
  void WaitForCalls();
  // After EOF: WaitIdle, unless `stop_fd` fires first: then cancel every
  // call, wait for them and leave what the client did not read.
  void WaitIdleUnlessStopped(int stop_fd);

  Executor& executor_;
  ServerOptions options_;
  ToolContext tool_context_;
  OutgoingLines out_;  // after options_: built from them

  std::mutex mutex_;  // guards everything below
  std::condition_variable changed_;
  std::map<std::string, std::shared_ptr<Call>> calls_;  // by IdKey, while in flight
  size_t running_ = 0;      // calls holding a sandbox slot
  size_t in_flight_ = 0;    // calls started and not yet answered
  size_t request_bytes_in_flight_ = 0;  // their messages' sizes
  std::string negotiated_version_;
  std::string client_name_;
  LogLevel session_log_level_ = LogLevel::kOff;  // legacy logging/setLevel
  bool shutting_down_ = false;
};

}  // namespace cocoon::mcp
