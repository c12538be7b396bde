#include "cli/mcp/server.h"

#include <poll.h>

#include <chrono>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <optional>
#include <system_error>
#include <thread>

#include "cli/mcp/server_internal.h"
#include "compiler/common/log.h"

namespace cocoon::mcp {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 4> kLegacyVersions = {"2024-11-05", "2025-03-26", "2025-06-18",
                                                             "2025-11-25"};
constexpr std::string_view kMetaVersion = "io.modelcontextprotocol/protocolVersion";
constexpr std::string_view kMetaCapabilities = "io.modelcontextprotocol/clientCapabilities";
constexpr std::string_view kMetaClientInfo = "io.modelcontextprotocol/clientInfo";
constexpr std::string_view kMetaLogLevel = "io.modelcontextprotocol/logLevel";
constexpr std::string_view kMetaServerInfo = "io.modelcontextprotocol/serverInfo";

constexpr std::array<std::string_view, 8> kLevelNames = {"debug", "info",     "notice", "warning",
                                                         "error", "critical", "alert",  "emergency"};

// clientInfo.name when the client sent a string there, else "". It is only
// recorded (audit events, logs), so a malformed one is not an error.
std::string ClientName(const json& client_info) {
  auto name = client_info.find("name");
  return name != client_info.end() && name->is_string() ? SanitizeUtf8(name->get<std::string>()) : std::string();
}

}  // namespace

std::optional<LogLevel> ParseLogLevel(std::string_view name) {
  for (size_t i = 0; i < kLevelNames.size(); ++i) {
    if (kLevelNames[i] == name) return static_cast<LogLevel>(i);
  }
  return std::nullopt;
}

// The responses to one JSON-RPC batch, sent as one array line once every
// element is done: "the Server should respond with an Array containing the
// corresponding Response objects" (JSON-RPC 2.0 section 6). Each element's
// RequestContext holds a reference, and tool calls run concurrently on their
// own threads, so the array goes out when the last reference is released:
// at the end of HandleLine, or when the slowest tool call of the batch has
// answered (RunToolCall releases it before the server may be torn down).
// Elements that get no response (notifications, cancelled calls) add
// nothing; a batch of those alone gets no line at all.
class Server::BatchReply {
 public:
  explicit BatchReply(Server& server) : server_(server) {}
  BatchReply(const BatchReply&) = delete;
  BatchReply& operator=(const BatchReply&) = delete;
  ~BatchReply() {
    if (responses_.empty()) return;
    try {
      size_t size = responses_.size() + 1;  // the brackets and commas
      for (const std::string& response : responses_) size += response.size();
      std::string line;
      line.reserve(size);
      line += '[';
      for (size_t i = 0; i < responses_.size(); ++i) {
        if (i != 0) line += ',';
        line += responses_[i];
        std::string().swap(responses_[i]);  // held once, in the line, not twice
      }
      line += ']';
      server_.Write(std::move(line));
    } catch (const std::exception& e) {  // bad_alloc: a destructor must not throw
      try {
        log::Error(std::string("mcp: could not send the answer to a batch: ") + e.what());
      } catch (...) {  // the message itself could not be built: nothing more to do
      }
    }
  }
  // One element's response, already serialised (ResultLine / ErrorLine).
  void Add(std::string response) {
    std::lock_guard lock(mutex_);
    responses_.push_back(std::move(response));
  }

 private:
  Server& server_;
  std::mutex mutex_;
  std::vector<std::string> responses_;
};

Server::Server(Executor& executor, LineWriter writer, ServerOptions options)
    : executor_(executor),
      options_(std::move(options)),
      out_(std::move(writer), options_.max_queued_notification_bytes) {
  tool_context_.languages = executor_.Languages();
  tool_context_.policies = executor_.Policies();
  tool_context_.limits = options_.tool_limits;
  if (options_.max_concurrent == 0) options_.max_concurrent = 1;
}

Server::~Server() {
  {
    std::lock_guard lock(mutex_);
    shutting_down_ = true;
  }
  CancelAll();
  WaitForCalls();  // what the client has not read by then is abandoned (~OutgoingLines)
}

void Server::Write(std::string line) { out_.Send(std::move(line)); }

bool Server::WriteIfRoom(std::string line) { return out_.SendIfRoom(std::move(line)); }

void Server::Respond(const RequestContext& context, std::string line) {
  if (context.batch) return context.batch->Add(std::move(line));
  Write(std::move(line));
}

void Server::SendError(const RequestContext& context, int code, std::string_view message, const json& data) {
  Respond(context, ErrorLine(context.id, code, message, data));
}

void Server::SendResult(const RequestContext& context, json result) {
  AddModernResultFields(context, result);
  Respond(context, ResultLine(context.id, result));
}

void Server::SendToolResult(const RequestContext& context, json result) {
  AddModernResultFields(context, result);
  if (context.batch) return context.batch->Add(ToolResultLine(context.id, result));
  // Written when its turn comes (OutgoingLines::SendDeferred): until then
  // the answer holds the run's output once, not the several times its line
  // takes, and one answer's line exists at a time.
  const size_t bytes = ToolResultLineSize(context.id, result);
  auto held = std::make_shared<const json>(std::move(result));
  out_.SendDeferred(bytes, [id = context.id, held]() -> std::string {
    try {
      return ToolResultLine(id, *held);
    } catch (const std::exception& e) {  // bad_alloc: the client still gets an answer
      return ErrorLine(id, kInternalError, std::string("the result could not be written: ") + e.what());
    }
  });
}

void Server::AddModernResultFields(const RequestContext& context, json& result) const {
  if (!context.modern) return;
  // 2026-07-28: every result names its type, and the server identifies
  // itself per result since there is no handshake to do it once.
  result["resultType"] = "complete";
  result["_meta"][std::string(kMetaServerInfo)] = ServerInfo();
}

void Server::HandleOversizedLine(const OversizedLine& line) {
  std::string why = "message of " + std::to_string(line.size()) + " bytes exceeds the limit of " +
                    std::to_string(options_.max_message_bytes) + " bytes";
  Message message = line.Refusal(why);
  RequestContext context;
  context.id = message.id;
  // A refused tools/call is audited and answered like any malformed call
  // (RefuseToolCallMessage), with the id the line showed so that the client
  // can match the refusal to its request; as a notification, only audited.
  if (message.method == "tools/call") return RefuseToolCallMessage(message, context, "bad_request", kInvalidRequest, why);
  // A notification or a response is never answered: the client learns
  // nothing from an error it cannot match to a request of its own.
  if (message.unanswerable) {
    std::string what = message.method.empty() ? "a response" : "notification " + EchoOfClientText(message.method);
    return log::Warn("mcp: " + what + " refused, unanswered: " + why);
  }
  SendError(context, kInvalidRequest, why);
}

void Server::HandleLine(std::string_view line) {
  if (line.size() > options_.max_message_bytes) {
    OversizedLine oversized;
    oversized.Feed(line);
    return HandleOversizedLine(oversized);
  }
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (line.find_first_not_of(" \t") == std::string_view::npos) return;
  std::string error;
  auto parsed = ParseLine(line, options_.parse, &error);
  if (!parsed) return SendError(RequestContext{}, kParseError, "Parse error: " + error);
  if (parsed->oversized_batch) {
    // Refused unread, in every session: neither parsed nor audited message
    // by message (a line of tools/calls would be as many audit events).
    std::string why = "Invalid Request: a JSON-RPC batch may hold at most " +
                      std::to_string(options_.parse.max_batch_elements) + " messages; this one holds more and none "
                      "of them was read";
    log::Warn("mcp: " + why);
    return SendError(RequestContext{}, kInvalidRequest, why);
  }
  if (parsed->batch) {
    if (std::string why = BatchRefusal(); !why.empty()) return RefuseBatch(*parsed, why);
  }
  // A batch the session's revision has is answered with one array (BatchReply).
  auto batch = parsed->batch ? std::make_shared<BatchReply>(*this) : nullptr;
  for (size_t i = 0; i < parsed->values.size(); ++i) {
    // A batch element's own size, counted without writing its text.
    const size_t bytes = batch ? DumpedSize(parsed->values[i]) : line.size();
    HandleValue(parsed->values[i], parsed->id_tokens[i], batch, bytes);
  }
}

// JSON-RPC batches belong to the revisions before 2025-06-18, which removed
// them ("Remove support for JSON-RPC batching", its changelog): 2024-11-05
// (plain JSON-RPC 2.0) and 2025-03-26 ("MUST support receiving JSON-RPC
// batches"). A session has a revision only once initialize has negotiated
// one, and no revision has a batch before that: initialization "MUST be the
// first interaction" and 2025-03-26's initialize "MUST NOT be part of a
// JSON-RPC batch"; nor does the 2026-07-28 per-request style ("Each message
// is a single JSON-RPC request, notification, or response").
std::string Server::BatchRefusal() {
  const std::string version = NegotiatedVersion();
  if (version.empty()) {
    return "JSON-RPC batch refused: batches are accepted only after initialize has negotiated protocol "
           "version 2024-11-05 or 2025-03-26";
  }
  if (version != "2024-11-05" && version != "2025-03-26") {
    return "JSON-RPC batch refused: protocol version " + version +
           " has no batching (removed in 2025-06-18)";
  }
  return "";
}

// The array is not a message of the session's revision: one Invalid Request
// with id null (JSON-RPC 2.0 section 5), whatever its elements, since none
// of them is read as a request (or a notification) of its own. Each
// tools/call in it is still audited as refused, unanswered on its own.
void Server::RefuseBatch(const ParsedLine& parsed, const std::string& why) {
  for (size_t i = 0; i < parsed.values.size(); ++i) {
    Message message = ParseMessage(parsed.values[i], parsed.id_tokens[i]);
    if (message.method != "tools/call") continue;
    message.kind = MessageKind::kInvalid;
    message.unanswerable = true;
    RefuseToolCallMessage(message, RequestContext{}, "bad_request", kInvalidRequest, why);
  }
  SendError(RequestContext{}, kInvalidRequest, why);
}

void Server::HandleValue(const json& value, std::string_view id_token, const std::shared_ptr<BatchReply>& batch,
                         size_t bytes) {
  Message message = ParseMessage(value, id_token);
  RequestContext reply_to;  // where errors about this message go
  reply_to.id = message.id;
  reply_to.batch = batch;
  // Every read of a client's params checks the type first; this catch is the
  // backstop that keeps one malformed message from ending the session (a
  // json::value() on a member of another type throws type_error).
  try {
    switch (message.kind) {
      case MessageKind::kInvalid:
        if (message.method == "tools/call") {  // a call nonetheless: audited (and answered unless unanswerable)
          return RefuseToolCallMessage(message, reply_to, "bad_request", message.error_code, message.error_message);
        }
        if (message.unanswerable) return;
        return SendError(reply_to, message.error_code, message.error_message);
      case MessageKind::kResponse:
        return;  // we never send requests, so there is nothing to match it to
      case MessageKind::kNotification:
        return HandleNotification(message);
      case MessageKind::kRequest:
        return HandleRequest(message, batch, bytes);
    }
  } catch (const json::exception& e) {
    log::Warn("mcp: malformed params in " + SanitizeUtf8(message.method) + ": " + e.what());
    if (message.kind == MessageKind::kRequest) {
      SendRequestError(message, reply_to, kInvalidParams, "Invalid params: " + SanitizeUtf8(e.what()));
    }
  }
}

void Server::HandleNotification(const Message& message) {
  if (message.method == "tools/call") {  // no id: never run, since it could not be answered; still audited
    return RefuseToolCallMessage(message, RequestContext{}, "notification", kInvalidRequest,
                                 "tools/call sent as a notification (no id): not run");
  }
  if (message.method != "notifications/cancelled") return;  // initialized, roots... need nothing
  const json& request_id = message.params.contains("requestId") ? message.params["requestId"] : json();
  if (!IsValidId(request_id)) return;  // malformed cancellations are ignored (spec)
  std::shared_ptr<Call> call;
  {
    std::lock_guard lock(mutex_);
    auto it = calls_.find(IdKey(request_id));
    if (it == calls_.end()) return;  // finished already, or never existed
    call = it->second;
  }
  log::Info("mcp: cancelling request " + IdKey(request_id));
  call->cancel.Cancel();  // kills the sandbox through the executor's callback
  std::lock_guard lock(mutex_);
  changed_.notify_all();  // a call waiting for a slot gives up
}

bool Server::ResolveEra(const Message& message, RequestContext* context) {
  context->id = message.id;
  const json* meta = nullptr;
  if (auto it = message.params.find("_meta"); it != message.params.end() && it->is_object()) meta = &*it;
  if (meta) {
    if (auto token = meta->find("progressToken"); token != meta->end() && IsValidId(*token)) {
      context->progress_token = *token;
    }
  }
  if (!meta || !meta->contains(kMetaVersion)) {
    std::lock_guard lock(mutex_);
    context->log_level = session_log_level_;
    context->client_name = client_name_;
    return true;
  }
  const json& version = (*meta)[std::string(kMetaVersion)];
  if (!version.is_string() || version != kModernVersion) {
    json data = {{"supported", {kModernVersion}}, {"requested", version.is_string() ? version : json("")}};
    SendRequestError(message, *context, kUnsupportedProtocolVersion, "Unsupported protocol version", data);
    return false;
  }
  auto caps = meta->find(kMetaCapabilities);
  if (caps == meta->end() || !caps->is_object()) {
    SendRequestError(message, *context, kInvalidParams,
                     "_meta lacks the required \"" + std::string(kMetaCapabilities) + "\"");
    return false;
  }
  context->modern = true;
  if (auto level = meta->find(kMetaLogLevel); level != meta->end()) {
    auto parsed = level->is_string() ? ParseLogLevel(level->get<std::string>()) : std::nullopt;
    if (!parsed) {
      SendRequestError(message, *context, kInvalidParams, "unknown log level in _meta");
      return false;
    }
    context->log_level = *parsed;
  }
  if (auto info = meta->find(kMetaClientInfo); info != meta->end() && info->is_object()) {
    context->client_name = ClientName(*info);
  }
  return true;
}

void Server::HandleRequest(const Message& message, const std::shared_ptr<BatchReply>& batch, size_t bytes) {
  RequestContext context;
  context.batch = batch;
  context.message_bytes = bytes;
  if (!ResolveEra(message, &context)) return;
  const std::string& method = message.method;
  if (method == "initialize") {
    // Initialization is the session's first interaction, once: a second
    // initialize neither renegotiates nor resets anything. -32600, as the
    // TypeScript SDK's HTTP transport answers it ("Invalid Request: Server
    // already initialized"). Only this thread (HandleLine's) sets the version.
    if (std::string version = NegotiatedVersion(); !version.empty()) {
      return SendError(context, kInvalidRequest,
                       "Invalid Request: the session is already initialized (protocol version " + version + ")");
    }
    // InitializeRequest's params.protocolVersion is a required string (every
    // revision's schema): a client without one has not said what it speaks.
    if (!message.params.contains("protocolVersion") || !message.params["protocolVersion"].is_string()) {
      return SendError(context, kInvalidParams, "initialize: params.protocolVersion (a string) is required");
    }
    return SendResult(context, Initialize(message.params));
  }
  if (method == "server/discover") return SendResult(context, Discover());
  if (method == "tools/list") {
    json result = {{"tools", ToolDescriptors(tool_context_)}};
    if (context.modern) {
      // CacheableResult (2026-07-28): the tool set is fixed for the life of the process.
      result["ttlMs"] = 3600000;
      result["cacheScope"] = "private";
    }
    return SendResult(context, std::move(result));
  }
  if (method == "tools/call") return StartToolCall(message, context);
  if (!context.modern && method == "ping") return SendResult(context, json::object());
  if (!context.modern && method == "logging/setLevel") {
    const json& level = message.params.contains("level") ? message.params["level"] : json();
    auto parsed = level.is_string() ? ParseLogLevel(level.get<std::string>()) : std::nullopt;
    if (!parsed) return SendError(context, kInvalidParams, "logging/setLevel needs a valid 'level'");
    {
      std::lock_guard lock(mutex_);
      session_log_level_ = *parsed;
    }
    return SendResult(context, json::object());
  }
  std::string why = context.modern && (method == "ping" || method == "logging/setLevel")
                        ? " (removed in " + std::string(kModernVersion) + ")"
                        : "";
  SendError(context, kMethodNotFound, "Method not found: " + EchoOfClientText(method) + why);
}

std::string Server::NegotiatedVersion() {
  std::lock_guard lock(mutex_);
  return negotiated_version_;
}

json Server::ServerInfo() const {
  return {{"name", "cocoon"}, {"title", "Cocoon sandbox"}, {"version", options_.server_version}};
}

json Server::Capabilities() const { return {{"tools", {{"listChanged", false}}}, {"logging", json::object()}}; }

json Server::Initialize(const json& params) {
  std::string requested = params.contains("protocolVersion") && params["protocolVersion"].is_string()
                              ? params["protocolVersion"].get<std::string>()
                              : "";
  bool known = std::find(kLegacyVersions.begin(), kLegacyVersions.end(), requested) != kLegacyVersions.end();
  std::string version = known ? requested : std::string(kLatestLegacyVersion);
  {
    std::lock_guard lock(mutex_);
    negotiated_version_ = version;
    if (params.contains("clientInfo") && params["clientInfo"].is_object()) {
      client_name_ = ClientName(params["clientInfo"]);
    }
  }
  json result = {{"protocolVersion", version}, {"capabilities", Capabilities()}, {"serverInfo", ServerInfo()}};
  if (!options_.instructions.empty()) result["instructions"] = options_.instructions;
  return result;
}

json Server::Discover() const {
  json result = {{"supportedVersions", {kModernVersion}}, {"capabilities", Capabilities()},
                 {"ttlMs", 3600000}, {"cacheScope", "private"}};
  if (!options_.instructions.empty()) result["instructions"] = options_.instructions;
  return result;
}

void Server::Log(const RequestContext& context, LogLevel level, const json& data) {
  LogLevel threshold = context.log_level;
  if (!context.modern) {
    std::lock_guard lock(mutex_);
    threshold = session_log_level_;  // logging/setLevel may have changed it since
  }
  if (threshold == LogLevel::kOff || level < threshold) return;
  WriteIfRoom(NotificationLine("notifications/message", {{"level", kLevelNames[static_cast<size_t>(level)]},
                                                   {"logger", "cocoon"}, {"data", data}}));
}

void Server::CancelAll() {
  std::vector<std::shared_ptr<Call>> calls;
  {
    std::lock_guard lock(mutex_);
    for (auto& [key, call] : calls_) calls.push_back(call);
  }
  for (auto& call : calls) call->cancel.Cancel();
  std::lock_guard lock(mutex_);
  changed_.notify_all();
}

void Server::WaitForCalls() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return in_flight_ == 0; });
}

void Server::WaitIdle() {
  WaitForCalls();
  out_.Drain();
}

void Server::WaitIdleUnlessStopped(int stop_fd) {
  if (stop_fd < 0) return WaitIdle();
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      if (changed_.wait_for(lock, std::chrono::milliseconds(50), [&] { return in_flight_ == 0; })) break;
    }
    pollfd p{stop_fd, POLLIN, 0};
    if (poll(&p, 1, 0) > 0) {
      {
        std::lock_guard lock(mutex_);
        shutting_down_ = true;
      }
      CancelAll();
      WaitForCalls();  // cancelled calls end at once: their answers only queue
      return;
    }
  }
  out_.Drain(stop_fd);
}

size_t Server::calls_in_flight() {
  std::lock_guard lock(mutex_);
  return in_flight_;
}

Status Server::Serve(int in_fd, int stop_fd) {
  std::string line;
  std::optional<OversizedLine> oversized;  // the line being discarded, if it is
  std::vector<char> chunk(64 * 1024);
  Status ended = Status::Ok();
  for (;;) {
    if (!out_.WaitForRoom(options_.max_queued_response_bytes, stop_fd)) {
      ended = Status(ErrorCode::kUnavailable, "stopped by a signal");
      std::lock_guard lock(mutex_);
      shutting_down_ = true;
      break;
    }
    pollfd fds[2] = {{in_fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
    int ready = poll(fds, stop_fd >= 0 ? 2 : 1, -1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) { ended = ErrnoError("poll"); break; }
    if (stop_fd >= 0 && (fds[1].revents & (POLLIN | POLLHUP))) {
      ended = Status(ErrorCode::kUnavailable, "stopped by a signal");
      std::lock_guard lock(mutex_);
      shutting_down_ = true;
      break;
    }
    ssize_t n = read(in_fd, chunk.data(), chunk.size());
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) { ended = ErrnoError("reading stdin"); break; }
    if (n == 0) break;  // EOF: the client is done (stdio shutdown)
    std::string_view data(chunk.data(), static_cast<size_t>(n));
    while (!data.empty()) {
      size_t newline = data.find('\n');
      std::string_view piece = data.substr(0, newline);
      // Bounded memory: a line beyond the limit is read through, not buffered.
      if (oversized) oversized->Feed(piece);
      else if (line.size() + piece.size() > options_.max_message_bytes) {
        oversized.emplace();
        oversized->Feed(line);
        oversized->Feed(piece);
        line.clear();
        line.shrink_to_fit();
      } else line.append(piece);
      if (newline == std::string_view::npos) break;
      if (oversized) HandleOversizedLine(*oversized);
      else HandleLine(line);
      oversized.reset();
      line.clear();
      data.remove_prefix(newline + 1);
    }
  }
  if (ended.ok() && !oversized && !line.empty()) HandleLine(line);
  if (!ended.ok()) {
    CancelAll();
    WaitForCalls();  // stopped: the client's unread answers are not waited for
  } else {
    // EOF: in-flight calls finish (bounded by their policy's wall time) and
    // are answered, unless a signal says to stop.
    WaitIdleUnlessStopped(stop_fd);
  }
  return ended;
}

void CancelToken::Cancel() {
  // The callback runs under the lock so that an executor unregistering it
  // (OnCancel(nullptr)) before freeing its sandbox waits for a kill in progress.
  std::lock_guard lock(mutex_);
  if (cancelled_.exchange(true, std::memory_order_acq_rel)) return;
  if (callback_) callback_();
  callback_ = nullptr;
}

void CancelToken::OnCancel(std::function<void()> callback) {
  std::lock_guard lock(mutex_);
  if (!cancelled()) {
    callback_ = std::move(callback);
  } else if (callback) {
    callback();
  }
}

}  // namespace cocoon::mcp
