// The server's per-request state, shared by server.cc (the protocol loop)
// and server_tool_calls.cc (tools/call: admission, execution, refusals).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/mcp/server.h"

namespace cocoon::mcp {

struct Server::RequestContext {
  RequestId id;
  std::shared_ptr<BatchReply> batch;  // null unless the request came in a batch
  bool modern = false;
  LogLevel log_level = LogLevel::kOff;  // modern: from _meta; legacy: read from the session
  nlohmann::json progress_token;        // null when the client asked for none
  std::string client_name;
  size_t message_bytes = 0;             // the request's size (a batch element's own)
};

struct Server::Call {
  RequestContext context;
  std::string key;
  std::string tool;
  nlohmann::json arguments;
  CancelToken cancel;
  std::mutex progress_mutex;
  uint64_t progress_count = 0;
  size_t progress_bytes = 0;
  bool progress_truncated = false;
  std::array<std::string, 2> pending_utf8;  // per stream
};

}  // namespace cocoon::mcp
