// The MCP protocol layer against a fake executor: handshake for every
// supported revision, the 2026-07-28 per-request style, tools/list schemas,
// tools/call results, JSON-RPC errors, cancellation, concurrency, progress.
#include <gtest/gtest.h>

#include <regex>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "cli/mcp/server.h"
#include "tests/cli/fake_executor.h"

namespace cocoon::mcp {
namespace {

using nlohmann::json;
using testing::FakeExecutor;

class Collector {
 public:
  void Add(const std::string& line) {
    std::lock_guard lock(mutex_);
    lines_.push_back(line);
    cv_.notify_all();
  }
  std::vector<json> Messages() {
    std::lock_guard lock(mutex_);
    std::vector<json> out;
    for (const auto& line : lines_) out.push_back(json::parse(line));
    return out;
  }
  // Waits for the response to `id` (not a notification).
  json WaitFor(const json& id, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
    std::unique_lock lock(mutex_);
    json found;
    cv_.wait_for(lock, timeout, [&] {
      for (const auto& line : lines_) {
        json m = json::parse(line);
        if (m.contains("id") && m["id"] == id && !m.contains("method")) {
          found = m;
          return true;
        }
      }
      return false;
    });
    return found;
  }
  std::vector<std::string> Lines() {
    std::lock_guard lock(mutex_);
    return lines_;
  }
  void Clear() {
    std::lock_guard lock(mutex_);
    lines_.clear();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;
};

class McpServerTest : public ::testing::Test {
 protected:
  explicit McpServerTest(Dispatch dispatch = Dispatch::kInline) {
    options_.dispatch = dispatch;
    options_.server_version = "9.9.9";
    options_.max_concurrent = 2;
    options_.max_message_bytes = 4096;
    options_.max_progress_bytes = 64;
    server_ = std::make_unique<Server>(executor_, [this](const std::string& l) { out_.Add(l); }, options_);
  }
  // A fresh server (a session is initialized once), its lines only.
  void NewSession() {
    server_.reset();
    out_.Clear();
    server_ = std::make_unique<Server>(executor_, [this](const std::string& l) { out_.Add(l); }, options_);
  }
  json Call(const json& request) {
    server_->HandleLine(request.dump());
    return out_.WaitFor(request["id"]);
  }
  json Request(int id, const std::string& method, json params = json::object()) {
    return {{"jsonrpc", "2.0"}, {"id", id}, {"method", method}, {"params", std::move(params)}};
  }
  // A 2025-03-26 session, the last revision with JSON-RPC batches; its
  // answer is not kept, so that the test sees only its own lines.
  void InitializeForBatches() {
    ASSERT_EQ(Call(Request(0, "initialize", {{"protocolVersion", "2025-03-26"}}))["result"]["protocolVersion"],
              "2025-03-26");
    out_.Clear();
  }
  json ToolCall(int id, const std::string& tool, json args, json meta = nullptr) {
    json params = {{"name", tool}, {"arguments", std::move(args)}};
    if (!meta.is_null()) params["_meta"] = std::move(meta);
    return Request(id, "tools/call", std::move(params));
  }

  ServerOptions options_;
  FakeExecutor executor_;
  Collector out_;
  std::unique_ptr<Server> server_;
};

class McpThreadedTest : public McpServerTest {
 protected:
  McpThreadedTest() : McpServerTest(Dispatch::kThreaded) {}

  // Serve()s `input` written through a pipe in 1000-byte pieces (lines split
  // across reads), until EOF.
  void ServeThroughPipe(const std::string& input) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    std::thread writer([&] {
      for (size_t i = 0; i < input.size(); i += 1000) {
        EXPECT_GT(write(fds[1], input.data() + i, std::min<size_t>(1000, input.size() - i)), 0);
      }
      close(fds[1]);
    });
    EXPECT_TRUE(server_->Serve(fds[0]).ok());
    writer.join();
    close(fds[0]);
  }
};

TEST_F(McpServerTest, InitializeEchoesEverySupportedVersion) {
  for (const char* version : {"2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}) {
    // One session each: a session is initialized once.
    NewSession();
    json r = Call(Request(1, "initialize", {{"protocolVersion", version}, {"capabilities", json::object()},
                                            {"clientInfo", {{"name", "t"}, {"version", "1"}}}}));
    EXPECT_EQ(r["result"]["protocolVersion"], version);
    EXPECT_EQ(r["result"]["serverInfo"]["name"], "cocoon");
    EXPECT_EQ(r["result"]["serverInfo"]["version"], "9.9.9");
    EXPECT_TRUE(r["result"]["capabilities"].contains("tools"));
    EXPECT_FALSE(r["result"].contains("resultType"));
  }
}

// Initialization is the session's first interaction, once: a second
// initialize is an Invalid Request and changes nothing (the version, which
// decides batching, and the client recorded for the audit log).
TEST_F(McpServerTest, ASecondInitializeIsRefusedAndChangesNothing) {
  json first = Call(Request(1, "initialize", {{"protocolVersion", "2025-03-26"}, {"clientInfo", {{"name", "first"}}}}));
  EXPECT_EQ(first["result"]["protocolVersion"], "2025-03-26");
  server_->HandleLine(R"({"jsonrpc":"2.0","id":2,"method":"initialize",)"
                      R"("params":{"protocolVersion":"2025-11-25","clientInfo":{"name":"second"}}})");
  json second = out_.WaitFor(2);
  EXPECT_EQ(second["error"]["code"], -32600) << second.dump();
  EXPECT_FALSE(second.contains("result"));
  EXPECT_NE(second["error"]["message"].get<std::string>().find("already initialized (protocol version 2025-03-26)"),
            std::string::npos) << second.dump();
  EXPECT_EQ(Call(Request(3, "initialize"))["error"]["code"], -32600) << "refused before its params are read";

  out_.Clear();
  server_->HandleLine(R"([{"jsonrpc":"2.0","id":4,"method":"ping"}])");  // still a 2025-03-26 session
  server_->WaitIdle();
  ASSERT_EQ(out_.Lines().size(), 1u);
  EXPECT_EQ(out_.Lines()[0], R"([{"id":4,"jsonrpc":"2.0","result":{}}])");
  Call(ToolCall(5, "no_such_tool", json::object()));
  ASSERT_EQ(executor_.refusals().size(), 1u);
  EXPECT_EQ(executor_.refusals()[0].client_name, "first");
}

TEST_F(McpServerTest, InitializeWithUnknownVersionAnswersLatestLegacy) {
  json r = Call(Request(1, "initialize", {{"protocolVersion", "1999-01-01"}, {"capabilities", json::object()}}));
  EXPECT_EQ(r["result"]["protocolVersion"], "2025-11-25");
}

TEST_F(McpServerTest, InitializeWithoutAProtocolVersionIsInvalidParams) {
  EXPECT_EQ(Call(Request(1, "initialize", {{"capabilities", json::object()}}))["error"]["code"], -32602);
  EXPECT_EQ(Call(Request(2, "initialize", {{"protocolVersion", 123}}))["error"]["code"], -32602);
  EXPECT_EQ(Call(Request(3, "initialize", {{"protocolVersion", "2025-06-18"}}))["result"]["protocolVersion"], "2025-06-18");
}

TEST_F(McpServerTest, PingAndSetLevel) {
  EXPECT_EQ(Call(Request(1, "ping"))["result"], json::object());
  EXPECT_EQ(Call(Request(2, "logging/setLevel", {{"level", "info"}}))["result"], json::object());
  EXPECT_EQ(Call(Request(3, "logging/setLevel", {{"level", "loud"}}))["error"]["code"], -32602);
}

TEST_F(McpServerTest, ToolsListHasStrictInputAndOutputSchemas) {
  json r = Call(Request(1, "tools/list"));
  const json& tools = r["result"]["tools"];
  ASSERT_EQ(tools.size(), 4u);
  std::vector<std::string> names;
  for (const auto& tool : tools) {
    names.push_back(tool["name"]);
    EXPECT_EQ(tool["inputSchema"]["type"], "object");
    EXPECT_EQ(tool["inputSchema"]["additionalProperties"], false) << tool["name"];
    EXPECT_EQ(tool["outputSchema"]["type"], "object");
    EXPECT_TRUE(tool["annotations"].contains("readOnlyHint"));
    EXPECT_TRUE(tool.contains("description"));
  }
  EXPECT_EQ(names, (std::vector<std::string>{"execute_code", "execute_skill", "inspect_runtimes", "run_in_sandbox"}));
  EXPECT_EQ(tools[0]["inputSchema"]["properties"]["language"]["enum"], json({"python", "bash", "node"}));
  EXPECT_EQ(tools[2]["annotations"]["readOnlyHint"], true);
}

TEST_F(McpServerTest, ExecuteCodeCarriesStructuredContentAndSameText) {
  json r = Call(ToolCall(1, "execute_code", {{"language", "python"}, {"code", "print(1)"}}));
  const json& result = r["result"];
  EXPECT_EQ(result["isError"], false);
  EXPECT_EQ(result["structuredContent"]["stdout"], "print(1)");
  EXPECT_EQ(result["structuredContent"]["exit_code"], 0);
  EXPECT_EQ(result["structuredContent"]["audit"]["event_id"], "event-1");
  EXPECT_EQ(result["structuredContent"]["audit"]["sequence"], 1);
  ASSERT_EQ(result["content"].size(), 1u);
  EXPECT_EQ(result["content"][0]["type"], "text");
  EXPECT_EQ(json::parse(result["content"][0]["text"].get<std::string>()), result["structuredContent"]);
  ASSERT_EQ(executor_.requests().size(), 1u);
  EXPECT_EQ(executor_.requests()[0].language, "python");
  EXPECT_EQ(executor_.requests()[0].tool, "execute_code");
}

TEST_F(McpServerTest, IsErrorForTimeoutOomPolicyKillAndHostFailure) {
  int id = 1;
  for (const char* code : {"timeout", "oom", "kill", "fail"}) {
    json r = Call(ToolCall(id++, "execute_code", {{"language", "bash"}, {"code", code}}));
    EXPECT_EQ(r["result"]["isError"], true) << code;
    EXPECT_TRUE(r["result"].contains("structuredContent")) << code;
  }
  json r = Call(ToolCall(id++, "execute_code", {{"language", "bash"}, {"code", "timeout"}}));
  EXPECT_EQ(r["result"]["structuredContent"]["timed_out"], true);
  EXPECT_EQ(r["result"]["structuredContent"]["termination_reason"], "timeout");
}

TEST_F(McpServerTest, BadInputIsAnAuditedIsErrorResult) {
  struct Case {
    std::string tool;
    json args;
    std::string message;
  };
  std::vector<Case> cases = {
      {"execute_code", {{"code", "x"}}, "missing required 'language'"},
      {"execute_code", {{"language", "cobol"}, {"code", "x"}}, "unsupported language 'cobol'"},
      {"execute_code", {{"language", "python"}, {"code", "x"}, {"extra", 1}}, "unknown argument 'extra'"},
      {"execute_code", {{"language", "python"}, {"code", 5}}, "'code' must be a string"},
      {"execute_code", {{"language", "python"}, {"code", "x"}, {"timeout_ms", 0}}, "'timeout_ms' must be between"},
      {"execute_code", {{"language", "python"}, {"code", "x"}, {"files", {{"../etc/passwd", "x"}}}}, "must not have a '.' or '..' component"},
      {"execute_code", {{"language", "python"}, {"code", "x"}, {"files", {{"/abs", "x"}}}}, "must be relative to the work dir"},
      {"execute_code", {{"language", "python"}, {"code", "x"}, {"policy", "permissive"}}, "unknown policy"},
      {"execute_skill", {{"skill", "../x"}, {"code", "x"}}, "'skill' must be a name"},
      {"run_in_sandbox", {{"command", json::array()}}, "non-empty array"},
      {"run_in_sandbox", {{"command", {"ls", 3}}}, "items must be strings"},
      {"run_in_sandbox", {{"command", "ls"}, {"workdir", "../.."}}, "'workdir' '../..' must not have a '.' or '..' component"},
      // It would be the generated policy's cwd, which the front end refuses
      // at a line of a host file the client never sees.
      {"run_in_sandbox", {{"command", "ls"}, {"workdir", "a\u202Eb"}},
       "'workdir' must not contain U+202E RIGHT-TO-LEFT OVERRIDE"},
      // Characters past U+FFFF are found too (a tag hides text after it).
      {"run_in_sandbox", {{"command", "ls"}, {"workdir", "a\U000E0041b"}},
       "'workdir' must not contain U+E0041 a TAG character"},
      {"run_in_sandbox", {{"command", "ls"}, {"workdir", "a\u3164b"}}, "'workdir' must not contain U+3164 HANGUL FILLER"},
      {"run_in_sandbox", {{"command", "ls"}, {"memory_max", "12parsecs"}}, "unknown unit"},
      {"run_in_sandbox", {{"command", "ls"}, {"memory_max", "17179869185GiB"}}, "too large"},
      {"run_in_sandbox", {{"command", "ls"}, {"timeout", 1.9}}, "must be a whole number"},
      {"inspect_runtimes", {{"x", 1}}, "takes no arguments"},
  };
  std::map<std::string, json> output_schemas;
  const json listed = Call(Request(1000, "tools/list"));
  for (const auto& tool : listed["result"]["tools"]) {
    output_schemas[tool["name"].get<std::string>()] = tool["outputSchema"];
  }
  int id = 1;
  for (const auto& c : cases) {
    json r = Call(ToolCall(id++, c.tool, c.args));
    ASSERT_TRUE(r.contains("result")) << r.dump();
    EXPECT_EQ(r["result"]["isError"], true) << c.args.dump();
    // Clients validate an error result against the tool's outputSchema too
    // (the TypeScript SDK does), so it must carry the tool's required keys.
    for (const auto& key : output_schemas.at(c.tool)["required"]) {
      EXPECT_TRUE(r["result"]["structuredContent"].contains(key)) << c.tool << " lacks " << key;
    }
    std::string message = r["result"]["structuredContent"]["error"]["message"];
    EXPECT_NE(message.find(c.message), std::string::npos) << message;
    EXPECT_EQ(r["result"]["structuredContent"]["error"]["kind"], "bad_input");
    EXPECT_NE(r["result"]["structuredContent"]["audit"]["event_id"], "");
  }
  EXPECT_TRUE(executor_.requests().empty());
  EXPECT_EQ(executor_.refused(), static_cast<int>(cases.size()));
}

TEST_F(McpServerTest, RunInSandboxAcceptsStringArrayMemoryAndWorkdir) {
  Call(ToolCall(1, "run_in_sandbox", {{"command", "echo hi | wc -c"}, {"timeout", 3}, {"memory_max", "256MiB"}}));
  Call(ToolCall(2, "run_in_sandbox", {{"command", {"ls", "-l"}}, {"memory_max", 1048576}, {"workdir", "sub/dir"}}));
  auto requests = executor_.requests();
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].argv, (std::vector<std::string>{"/bin/sh", "-c", "echo hi | wc -c"}));
  EXPECT_EQ(requests[0].timeout_ms, 3000u);
  EXPECT_EQ(requests[0].memory_bytes, 256u << 20);
  EXPECT_EQ(requests[1].argv, (std::vector<std::string>{"ls", "-l"}));
  EXPECT_EQ(requests[1].memory_bytes, 1048576u);
  EXPECT_EQ(requests[1].workdir, "sub/dir");
}

TEST_F(McpServerTest, InspectRuntimes) {
  json r = Call(ToolCall(1, "inspect_runtimes", json::object()));
  EXPECT_EQ(r["result"]["isError"], false);
  EXPECT_EQ(r["result"]["structuredContent"]["runtimes"][1]["available"], false);
}

// A name the client sent is quoted back cut short: a request with a
// megabyte-long method or tool name does not get a megabyte-long answer.
// The reader waits for room before it reads the next request: a client that
// writes requests but does not read the answers stops being read from,
// instead of growing the queue of answers without bound. A stop signal
// still ends the wait.
// A tool's answer is written when its turn comes, on the writer thread:
// built when queued, every answer waiting for a slow client held its whole
// line (several times the output it carries) at once. It counts as waiting
// bytes all the same, and keeps its place among the other lines.
TEST(OutgoingLinesTest, ADeferredLineIsBuiltOnlyWhenItsTurnComes) {
  std::mutex mutex;
  std::condition_variable changed;
  bool client_reads = false;
  std::vector<std::string> written;
  OutgoingLines out(
      [&](const std::string& line) {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return client_reads; });
        written.push_back(line);
      },
      1 << 20);
  std::atomic<int> built{0};
  out.Send("first");
  out.SendDeferred(5000, [&] {
    ++built;
    return std::string("second");
  });
  out.Send("third");
  EXPECT_FALSE(out.HasRoom(4000)) << "the deferred line's bytes count as waiting";
  EXPECT_EQ(built.load(), 0) << "built while the line before it was still being written";
  {
    std::lock_guard lock(mutex);
    client_reads = true;
  }
  changed.notify_all();
  EXPECT_TRUE(out.Drain());
  EXPECT_EQ(built.load(), 1);
  std::lock_guard lock(mutex);
  EXPECT_EQ(written, (std::vector<std::string>{"first", "second", "third"}));
}

TEST(OutgoingLinesTest, WaitForRoomHoldsTheReaderWhileTheClientDoesNotRead) {
  std::mutex mutex;
  std::condition_variable changed;
  bool client_reads = false;
  OutgoingLines out(
      [&](const std::string&) {
        std::unique_lock lock(mutex);
        changed.wait(lock, [&] { return client_reads; });
      },
      1 << 20);
  for (int i = 0; i < 4; ++i) out.Send(std::string(1000, 'x'));
  int stop[2];
  ASSERT_EQ(pipe(stop), 0);
  ASSERT_EQ(write(stop[1], "s", 1), 1);
  EXPECT_FALSE(out.WaitForRoom(1500, stop[0])) << "a stop signal ends the wait";
  std::atomic<bool> returned{false};
  std::thread reader([&] {
    out.WaitForRoom(1500);
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  EXPECT_FALSE(returned.load()) << "the reader went on while 3-4 KB of answers waited";
  {
    std::lock_guard lock(mutex);
    client_reads = true;
  }
  changed.notify_all();
  reader.join();
  EXPECT_TRUE(returned.load());
  EXPECT_TRUE(out.Drain());
  close(stop[0]);
  close(stop[1]);
}

TEST_F(McpServerTest, ClientTextQuotedInErrorsIsCutShort) {
  const std::string long_name(3000, 'a');
  json method = Call(Request(1, long_name));
  ASSERT_EQ(method["error"]["code"], -32601);
  EXPECT_LT(method["error"]["message"].get<std::string>().size(), 400u);
  json tool = Call(ToolCall(2, long_name, json::object()));
  ASSERT_EQ(tool["error"]["code"], -32602);
  EXPECT_LT(tool["error"]["message"].get<std::string>().size(), 400u);
  EXPECT_NE(tool["error"]["message"].get<std::string>().find("(3000 bytes)"), std::string::npos);
}

TEST_F(McpServerTest, JsonRpcErrorsKeepTheServerServing) {
  server_->HandleLine("{not json");
  server_->HandleLine(R"({"jsonrpc":"1.0","id":7,"method":"ping"})");
  server_->HandleLine(R"({"jsonrpc":"2.0","id":null,"method":"ping"})");
  server_->HandleLine(R"({"jsonrpc":"2.0","id":8,"method":"ping","params":[1]})");
  server_->HandleLine(R"([1])");
  server_->HandleLine(std::string(5000, ' ') + "{}");
  server_->HandleLine(std::string(100, '[') + std::string(100, ']'));
  // nlohmann reads NUL as the end of input: the garbage after it must not pass.
  server_->HandleLine(std::string(R"({"jsonrpc":"2.0","id":"nul","method":"ping"})") + '\0' + "garbage");
  server_->WaitIdle();  // the answers are written by the server's writer thread
  auto messages = out_.Messages();
  ASSERT_EQ(messages.size(), 8u);
  EXPECT_EQ(messages[7]["error"]["code"], -32700);
  EXPECT_EQ(messages[0]["error"]["code"], -32700);
  EXPECT_TRUE(messages[0]["id"].is_null());
  EXPECT_EQ(messages[1]["error"]["code"], -32600);
  EXPECT_EQ(messages[1]["id"], 7);
  EXPECT_EQ(messages[2]["error"]["code"], -32600);
  EXPECT_EQ(messages[3]["error"]["code"], -32602);
  EXPECT_EQ(messages[4]["error"]["code"], -32600);  // a batch before initialize (ABatchIsRefused...)
  EXPECT_TRUE(messages[4]["id"].is_null());
  EXPECT_EQ(messages[5]["error"]["code"], -32600);  // oversized
  EXPECT_EQ(messages[6]["error"]["code"], -32700);  // too deep
  EXPECT_EQ(Call(Request(9, "ping"))["result"], json::object());
}

// A key twice in one object, at any depth, is read by nlohmann as its last
// value and by other readers (a proxy, a log) as its first: the reviewer's
// `{"method":"ping","method":"tools/call",...}` ran a sandbox. Every such
// line is refused as a parse error, and nothing runs.
TEST_F(McpServerTest, DuplicateKeysAtAnyDepthAreRefusedAndNothingRuns) {
  const std::string call_params =
      R"("params":{"name":"run_in_sandbox","arguments":{"command":["/bin/echo","hi"]}})";
  server_->HandleLine(R"({"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/call",)" + call_params + "}");
  server_->HandleLine(
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_in_sandbox","arguments":)"
      R"({"command":["/bin/true"],"command":["/bin/echo","evil"]}}})");
  server_->HandleLine(R"({"jsonrpc":"2.0","id":3,"id":4,"method":"ping"})");
  server_->WaitIdle();
  auto messages = out_.Messages();
  ASSERT_EQ(messages.size(), 3u);
  const char* keys[] = {"method", "command", "id"};
  for (size_t i = 0; i < messages.size(); ++i) {
    EXPECT_EQ(messages[i]["error"]["code"], -32700) << messages[i].dump();
    EXPECT_TRUE(messages[i]["id"].is_null()) << messages[i].dump();
    EXPECT_NE(messages[i]["error"]["message"].get<std::string>().find(std::string("duplicate key \"") + keys[i] +
                                                                      "\" in one JSON object"),
              std::string::npos)
        << messages[i].dump();
  }
  EXPECT_TRUE(executor_.requests().empty()) << "a sandbox ran for a request with a duplicate key";
  // The same keys in different objects are fine.
  json ok = Call(ToolCall(5, "run_in_sandbox", {{"command", {"/bin/echo", "id"}}}));
  EXPECT_EQ(ok["result"]["isError"], false) << ok.dump();
  EXPECT_EQ(executor_.requests().size(), 1u);
}

// A key holding U+0000 is cut to the text before it by a reader that keeps
// keys as C strings: `{"method":"ping","method\u0000":"tools/call"}` was
// answered as ping here and could be a tools/call there. Refused as a parse
// error, at any depth, and nothing runs.
TEST_F(McpServerTest, KeysHoldingANulAreRefusedAndNothingRuns) {
  const std::string call_params =
      R"("params":{"name":"run_in_sandbox","arguments":{"command":["/bin/echo","hi"]}})";
  server_->HandleLine(R"({"jsonrpc":"2.0","id":1,"method":"ping","method\u0000":"tools/call",)" + call_params + "}");
  server_->HandleLine(
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run_in_sandbox","arguments":)"
      R"({"command":["/bin/true"],"command\u0000x":["/bin/echo","evil"]}}})");
  server_->WaitIdle();
  auto messages = out_.Messages();
  ASSERT_EQ(messages.size(), 2u);
  const char* keys[] = {"method\\u0000", "command\\u0000x"};
  for (size_t i = 0; i < messages.size(); ++i) {
    EXPECT_EQ(messages[i]["error"]["code"], -32700) << messages[i].dump();
    EXPECT_NE(messages[i]["error"]["message"].get<std::string>().find(std::string("object key \"") + keys[i] +
                                                                      "\" holds U+0000"),
              std::string::npos)
        << messages[i].dump();
  }
  EXPECT_TRUE(executor_.requests().empty()) << "a sandbox ran for a request with a NUL in a key";
}

// MCP's RequestId is `string | number`; JSON-RPC 2.0 allows any number.
// The response carries the id in the client's own digits: nlohmann reads
// 1e2, 2^64 and 0.1000 as doubles and would write 100.0,
// 1.8446744073709552e+19 and 0.1, and reads -0 as the integer 0. A number
// is one request by value (1.0 cancels 1).
TEST_F(McpServerTest, ANumberIdIsEchoedAsTheClientWroteIt) {
  InitializeForBatches();
  const std::vector<std::string> ids = {"1.0", "18446744073709551616", "-18446744073709551617", "1e2", "0.1000",
                                        "-2.5E-3", "123456789012345678901234567890", "-0.0", "-0", "0"};
  for (const std::string& id : ids) {
    server_->HandleLine(R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":"ping"})");
  }
  server_->HandleLine(R"({"jsonrpc":"2.0","id":7.5,"method":"no/such/method"})");
  server_->HandleLine(R"([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1E+1,"method":"ping"}])");
  // -0 in a batch, after an element with strings, nesting and commas in it;
  // an escaped key. (A repeated key refuses the whole line: readers disagree
  // on which one counts; DuplicateKeysAtAnyDepthAreRefusedAndNothingRuns.)
  server_->HandleLine(R"([{"jsonrpc":"2.0","id":"a,\"}","method":"ping","params":{"id":[1,-0]}},)"
                      R"({"jsonrpc":"2.0","id":-0,"method":"ping"},{"jsonrpc":"2.0","i\u0064":-0,"method":"ping"}])");
  server_->HandleLine(R"([{"jsonrpc":"2.0","id":-0,"method":"ping"},{"jsonrpc":"2.0","id":-0,"i\u0064":2,"method":"ping"}])");
  server_->HandleLine(R"({"id":3.0,"jsonrpc":"2.0","method":"tools/call","params":{"name":"execute_code",)"
                      R"("arguments":{"language":"python","code":"1"}}})");
  server_->WaitIdle();
  std::vector<std::string> lines = out_.Lines();
  ASSERT_EQ(lines.size(), ids.size() + 5);
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(lines[i], R"({"id":)" + ids[i] + R"(,"jsonrpc":"2.0","result":{}})");
  }
  EXPECT_EQ(lines[ids.size()].find(R"({"error":{"code":-32601,)"), 0u) << lines[ids.size()];
  EXPECT_NE(lines[ids.size()].find(R"(,"id":7.5,"jsonrpc":"2.0"})"), std::string::npos) << lines[ids.size()];
  EXPECT_EQ(lines[ids.size() + 1], R"([{"id":1,"jsonrpc":"2.0","result":{}},{"id":1E+1,"jsonrpc":"2.0","result":{}}])");
  EXPECT_EQ(lines[ids.size() + 2], R"([{"id":"a,\"}","jsonrpc":"2.0","result":{}},{"id":-0,"jsonrpc":"2.0","result":{}},)"
                                   R"({"id":-0,"jsonrpc":"2.0","result":{}}])");
  EXPECT_EQ(lines[ids.size() + 3].find(R"({"error":{"code":-32700,"message":"Parse error: duplicate key \"id\")"), 0u)
      << lines[ids.size() + 3];
  EXPECT_EQ(lines[ids.size() + 4].find(R"({"id":3.0,"jsonrpc":"2.0","result":{)"), 0u) << lines[ids.size() + 4];
  ASSERT_EQ(executor_.requests().size(), 1u);
  EXPECT_EQ(executor_.requests()[0].request_id, "3.0");  // audited as sent

  EXPECT_EQ(IdKey(json::parse("1.0")), IdKey(json(1)));
  EXPECT_EQ(IdKey(json::parse("-0.0")), IdKey(json(0)));
  EXPECT_NE(IdKey(json::parse("1.5")), IdKey(json(1)));
  EXPECT_NE(IdKey(json("1")), IdKey(json(1)));
}

// Not a string or a number: -32600 with id null (the id cannot be used).
TEST_F(McpServerTest, AnIdThatIsNotAStringOrANumberIsAnInvalidRequest) {
  for (const char* id : {"null", "true", "{}", "[1]"}) {
    server_->HandleLine(std::string(R"({"jsonrpc":"2.0","id":)") + id + R"(,"method":"ping"})");
  }
  server_->WaitIdle();
  auto messages = out_.Messages();
  ASSERT_EQ(messages.size(), 4u);
  for (const auto& m : messages) {
    EXPECT_TRUE(m["id"].is_null()) << m.dump();
    EXPECT_EQ(m["error"]["code"], -32600) << m.dump();
    EXPECT_EQ(m["error"]["message"], "\"id\" must be a string or a number (not null)") << m.dump();
  }
}

TEST_F(McpServerTest, UnknownMethodAndUnknownTool) {
  EXPECT_EQ(Call(Request(1, "resources/list"))["error"]["code"], -32601);
  json r = Call(ToolCall(2, "rm_rf", json::object()));
  EXPECT_EQ(r["error"]["code"], -32602);
  EXPECT_NE(r["error"]["message"].get<std::string>().find("rm_rf"), std::string::npos);
  EXPECT_EQ(Call(Request(3, "tools/call", {{"arguments", json::object()}}))["error"]["code"], -32602);
}

// "Every call is audited": a tools/call refused at the protocol level (no
// such tool, no name, arguments not an object, malformed params, an
// unsupported per-request version, sent as a notification) leaves a refusal
// event naming the tool (when it is one), the request id, the client and the
// class; the JSON-RPC error carries the event's reference in data.audit.
TEST_F(McpServerTest, ProtocolLevelRefusalsOfAToolCallAreAudited) {
  Call(Request(1, "initialize", {{"protocolVersion", "2025-11-25"}, {"clientInfo", {{"name", "agent-x"}}}}));
  json unknown = Call(ToolCall(2, "rm_rf", json::object()));
  EXPECT_EQ(unknown["error"]["code"], -32602);
  EXPECT_EQ(unknown["error"]["data"]["audit"]["event_id"], "refused-");
  json nameless = Call(Request(3, "tools/call", {{"arguments", json::object()}}));
  EXPECT_EQ(nameless["error"]["data"]["audit"]["event_id"], "refused-") << nameless.dump();
  json bad_args = Call(Request(4, "tools/call", {{"name", "execute_code"}, {"arguments", 7}}));
  EXPECT_EQ(bad_args["error"]["data"]["audit"]["event_id"], "refused-execute_code") << bad_args.dump();
  server_->HandleLine(R"({"jsonrpc":"2.0","id":5,"method":"tools/call","params":[1]})");
  EXPECT_EQ(out_.WaitFor(5)["error"]["data"]["audit"]["event_id"], "refused-");
  json meta = {{"io.modelcontextprotocol/protocolVersion", "1999-01-01"}};
  json era = Call(ToolCall(6, "execute_code", {{"language", "python"}, {"code", "1"}}, meta));
  EXPECT_EQ(era["error"]["data"]["audit"]["event_id"], "refused-execute_code") << era.dump();
  EXPECT_EQ(era["error"]["data"]["supported"][0], "2026-07-28");  // the era's own data is kept
  server_->HandleLine(R"({"jsonrpc":"2.0","method":"tools/call","params":{"name":"execute_code"}})");
  server_->WaitIdle();

  std::vector<FakeExecutor::Refusal> refusals = executor_.refusals();
  ASSERT_EQ(refusals.size(), 6u);
  const std::vector<std::pair<std::string, std::string>> want = {
      {"", "unknown_tool"},      {"", "bad_request"},           {"execute_code", "bad_request"},
      {"", "bad_request"},       {"execute_code", "bad_request"}, {"execute_code", "notification"}};
  const std::vector<std::string> ids = {"2", "3", "4", "5", "6", ""};
  for (size_t i = 0; i < refusals.size(); ++i) {
    EXPECT_EQ(refusals[i].tool, want[i].first) << i;
    EXPECT_EQ(refusals[i].kind, want[i].second) << i;
    EXPECT_EQ(refusals[i].request_id, ids[i]) << i;
    EXPECT_EQ(refusals[i].client_name, "agent-x") << i;
  }
  EXPECT_TRUE(executor_.requests().empty());
}

// A refusal the audit log could not record is still refused, and the result
// says it went unaudited (not the "no audit log configured" of a server
// without one).
TEST_F(McpServerTest, ARefusalThatCouldNotBeAuditedSaysSo) {
  Call(Request(1, "initialize", {{"protocolVersion", "2025-11-25"}, {"clientInfo", {{"name", "fail-audit"}}}}));
  json r = Call(ToolCall(2, "execute_code", {{"code", "x"}}));
  ASSERT_TRUE(r.contains("result")) << r.dump();
  EXPECT_EQ(r["result"]["isError"], true);
  const json& audit = r["result"]["structuredContent"]["audit"];
  EXPECT_EQ(audit["event_id"], "");
  EXPECT_NE(audit["note"].get<std::string>().find("could not be written to the audit log: disk full"),
            std::string::npos) << audit.dump();
  json unknown = Call(ToolCall(3, "rm_rf", json::object()));
  EXPECT_NE(unknown["error"]["data"]["audit"]["note"].get<std::string>().find("disk full"), std::string::npos);
}

TEST_F(McpServerTest, NotificationsAndResponsesGetNoAnswer) {
  server_->HandleLine(R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
  server_->HandleLine(R"({"jsonrpc":"2.0","method":"notifications/whatever","params":{}})");
  server_->HandleLine(R"({"jsonrpc":"2.0","id":4,"result":{}})");
  server_->HandleLine(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}})");
  // Invalid, but a notification all the same: never answered (JSON-RPC 2.0 section 4.1).
  server_->HandleLine(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":[1]})");
  server_->WaitIdle();
  EXPECT_TRUE(out_.Lines().empty());
}

// JSON-RPC 2.0 section 6, in a 2025-03-26 session: a batch gets one array
// of the responses; its notifications get none; a batch of notifications
// alone gets nothing; an empty array is one invalid request, not a batch.
TEST_F(McpServerTest, ABatchIsAnsweredWithOneArray) {
  InitializeForBatches();
  server_->HandleLine(R"([{"jsonrpc":"2.0","id":1,"method":"ping"},)"
                      R"({"jsonrpc":"2.0","method":"notifications/initialized"},)"
                      R"({"jsonrpc":"2.0","id":2,"method":"nope"},7])");
  server_->WaitIdle();  // the answers are written by the server's writer thread
  auto messages = out_.Messages();
  ASSERT_EQ(messages.size(), 1u);
  ASSERT_TRUE(messages[0].is_array()) << messages[0].dump();
  ASSERT_EQ(messages[0].size(), 3u) << messages[0].dump();
  EXPECT_EQ(messages[0][0]["id"], 1);
  EXPECT_EQ(messages[0][0]["result"], json::object());
  EXPECT_EQ(messages[0][1]["id"], 2);
  EXPECT_EQ(messages[0][1]["error"]["code"], -32601);
  EXPECT_TRUE(messages[0][2]["id"].is_null());
  EXPECT_EQ(messages[0][2]["error"]["code"], -32600);
}

TEST_F(McpServerTest, ABatchOfNotificationsGetsNoAnswerAndAnEmptyArrayIsOneError) {
  InitializeForBatches();
  server_->HandleLine(R"([{"jsonrpc":"2.0","method":"notifications/initialized"}])");
  server_->WaitIdle();
  EXPECT_TRUE(out_.Lines().empty());
  server_->HandleLine("[]");
  server_->WaitIdle();  // the answers are written by the server's writer thread
  auto messages = out_.Messages();
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_TRUE(messages[0].is_object()) << messages[0].dump();
  EXPECT_EQ(messages[0]["error"]["code"], -32600);
}

TEST_F(McpServerTest, AOneElementBatchIsStillAnArray) {
  InitializeForBatches();
  server_->HandleLine(R"([{"jsonrpc":"2.0","id":"a","method":"ping"}])");
  server_->WaitIdle();  // the answers are written by the server's writer thread
  auto messages = out_.Messages();
  ASSERT_EQ(messages.size(), 1u);
  ASSERT_TRUE(messages[0].is_array()) << messages[0].dump();
  EXPECT_EQ(messages[0][0]["id"], "a");
}

// A batch holds at most 64 messages (ParseOptions::max_batch_elements): one
// 8 MiB line of `{},` is 2.8 million messages, whose DOM and answers took
// the server past 1 GiB. A larger batch is refused unread, with one error
// naming the limit, in any session; its tools/calls are neither run nor
// audited one by one. A line that is not JSON is still a parse error.
TEST(McpBatches, ABatchOfMoreThan64MessagesIsRefusedUnreadWithOneError) {
  auto batch_of = [](size_t n, const std::string& element) {
    std::string line = "[";
    for (size_t i = 0; i < n; ++i) line += (i ? "," : "") + element;
    return line + "]";
  };
  const std::string ping = R"({"jsonrpc":"2.0","id":1,"method":"ping"})";
  const std::string call = R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_code",)"
                           R"("arguments":{"language":"python","code":"1"}}})";
  for (const char* version : {"2025-03-26", "2025-06-18"}) {
    SCOPED_TRACE(version);
    FakeExecutor executor;
    Collector out;
    ServerOptions options;
    options.dispatch = Dispatch::kInline;
    Server server(executor, [&](const std::string& l) { out.Add(l); }, options);
    server.HandleLine(json{{"jsonrpc", "2.0"}, {"id", 0}, {"method", "initialize"},
                           {"params", {{"protocolVersion", version}}}}.dump());
    server.WaitIdle();
    for (const std::string& line : {batch_of(65, ping), batch_of(65, call), batch_of(300000, "{}")}) {
      out.Clear();
      server.HandleLine(line);
      server.WaitIdle();
      std::vector<std::string> lines = out.Lines();
      ASSERT_EQ(lines.size(), 1u);
      EXPECT_LT(lines[0].size(), 1024u) << "the answer to a " << line.size() << "-byte batch";
      json answer = json::parse(lines[0]);
      ASSERT_TRUE(answer.is_object()) << lines[0].substr(0, 300);
      EXPECT_TRUE(answer["id"].is_null());
      EXPECT_EQ(answer["error"]["code"], -32600);
      EXPECT_NE(answer["error"]["message"].get<std::string>().find("at most 64 messages"), std::string::npos)
          << answer.dump();
    }
    EXPECT_TRUE(executor.requests().empty());
    EXPECT_TRUE(executor.refusals().empty());
    out.Clear();
    server.HandleLine(batch_of(65, ping).substr(1));  // not JSON: `{...},{...}]`
    server.HandleLine(batch_of(65, ping) + ",");
    server.WaitIdle();
    for (const json& answer : out.Messages()) EXPECT_EQ(answer["error"]["code"], -32700) << answer.dump();
    EXPECT_EQ(out.Lines().size(), 2u);
  }
  // 64 is a batch still, answered with one array of 64.
  FakeExecutor executor;
  Collector out;
  ServerOptions options;
  options.dispatch = Dispatch::kInline;
  Server server(executor, [&](const std::string& l) { out.Add(l); }, options);
  server.HandleLine(R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26"}})");
  server.WaitIdle();
  out.Clear();
  server.HandleLine(batch_of(64, ping));
  server.WaitIdle();
  auto messages = out.Messages();
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].size(), 64u);
}

// Calls in flight hold their requests: past max_request_bytes_in_flight of
// them a further call is refused as busy (64 queued calls of 8 MiB of stdin
// each held over a GiB), and admitted again once the others are answered.
TEST_F(McpThreadedTest, CallsInFlightHoldABoundedSizeOfRequests) {
  options_.max_request_bytes_in_flight = 1000;
  NewSession();
  auto call = [&](int id, const std::string& code) {
    return ToolCall(id, "execute_code", {{"language", "python"}, {"code", code}, {"stdin", std::string(300, 'x')}});
  };
  for (int id = 1; id <= 3; ++id) server_->HandleLine(call(id, "hold:300").dump());
  EXPECT_EQ(out_.WaitFor(3)["result"]["structuredContent"]["error"]["kind"], "busy");
  EXPECT_EQ(out_.WaitFor(1)["result"]["isError"], false);
  EXPECT_EQ(out_.WaitFor(2)["result"]["isError"], false);
  server_->WaitIdle();
  EXPECT_EQ(Call(call(4, "again"))["result"]["isError"], false);
  // One call is admitted whatever its size.
  options_.max_request_bytes_in_flight = 10;
  NewSession();
  EXPECT_EQ(Call(call(5, "alone"))["result"]["isError"], false);
}

// 2025-06-18 removed JSON-RPC batching; only a session that negotiated
// 2024-11-05 or 2025-03-26 may batch, and no revision batches before
// initialize. A refused batch is one Invalid Request with id null: none of
// its elements runs or is answered, and its tools/call is audited.
TEST(McpBatches, OnlyA2024Or2025_03_26SessionMayBatch) {
  const std::string batch = R"([{"jsonrpc":"2.0","id":1,"method":"ping"},)"
                            R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_code",)"
                            R"("arguments":{"language":"python","code":"1"}}},)"
                            R"({"jsonrpc":"2.0","method":"notifications/initialized"}])";
  for (const char* version : {"", "2025-06-18", "2025-11-25", "1999-01-01", "2024-11-05", "2025-03-26"}) {
    SCOPED_TRACE(std::string("session: ") + (*version ? version : "not initialized"));
    FakeExecutor executor;
    Collector out;
    ServerOptions options;
    options.dispatch = Dispatch::kInline;
    Server server(executor, [&](const std::string& l) { out.Add(l); }, options);
    if (*version) {
      server.HandleLine(json{{"jsonrpc", "2.0"}, {"id", 0}, {"method", "initialize"},
                             {"params", {{"protocolVersion", version}}}}.dump());
      server.WaitIdle();
      out.Clear();
    }
    server.HandleLine(batch);
    server.WaitIdle();
    auto messages = out.Messages();
    ASSERT_EQ(messages.size(), 1u);
    const bool batches = std::string_view(version) == "2024-11-05" || std::string_view(version) == "2025-03-26";
    if (batches) {
      ASSERT_TRUE(messages[0].is_array()) << messages[0].dump();
      EXPECT_EQ(messages[0].size(), 2u) << messages[0].dump();
      EXPECT_EQ(executor.requests().size(), 1u);
      continue;
    }
    ASSERT_TRUE(messages[0].is_object()) << messages[0].dump();
    EXPECT_TRUE(messages[0]["id"].is_null());
    EXPECT_EQ(messages[0]["error"]["code"], -32600);
    EXPECT_NE(messages[0]["error"]["message"].get<std::string>().find("batch refused"), std::string::npos);
    EXPECT_TRUE(executor.requests().empty());
    auto refusals = executor.refusals();
    ASSERT_EQ(refusals.size(), 1u);
    EXPECT_EQ(refusals[0].request_id, "2");
    EXPECT_EQ(refusals[0].kind, "bad_request");
    EXPECT_EQ(refusals[0].tool, "execute_code");
  }
}

TEST_F(McpServerTest, InvalidUtf8OutputIsSanitised) {
  json r = Call(ToolCall(1, "execute_code", {{"language", "python"}, {"code", "binary"}}));
  std::string out = r["result"]["structuredContent"]["stdout"];
  EXPECT_NE(out.find(" ok "), std::string::npos);
  EXPECT_TRUE(IsValidUtf8(out));
}

// A captured stream is in the answer twice, escaped each time: NULs (six
// bytes each as "\u0000", seven in the text copy) made a 1 MiB capture a
// 13 MiB line. Such a stream is cut where its escaped form reaches twice its
// size plus 64 KiB, and marked truncated with a note; text that at most
// doubles when escaped ('"', '\\', newlines) is never cut.
TEST_F(McpServerTest, OutputThatEscapingWouldMultiplyIsCutAndTheAnswerStaysBounded) {
  constexpr size_t kCaptured = 1 << 20;
  Call(ToolCall(1, "execute_code", {{"language", "python"}, {"code", "fill:nul:" + std::to_string(kCaptured)}}));
  std::vector<std::string> lines = out_.Lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_LT(lines[0].size(), 6 * kCaptured) << "the answer to 1 MiB of NULs";
  json result = json::parse(lines[0])["result"];
  const json& structured = result["structuredContent"];
  EXPECT_EQ(structured["stdout"].get<std::string>().size(), (2 * kCaptured + 64 * 1024) / 6);
  EXPECT_EQ(structured["stdout"].get<std::string>().find_first_not_of('\0'), std::string::npos);
  EXPECT_EQ(structured["stdout_truncated"], true);
  ASSERT_TRUE(structured["notes"].is_array()) << structured.dump().substr(0, 500);
  EXPECT_NE(structured["notes"].dump().find("stdout cut from 1048576 to"), std::string::npos) << structured["notes"];
  EXPECT_EQ(json::parse(result["content"][0]["text"].get<std::string>()), structured);
  for (const char* fill : {"fill:\":", "fill:\\:", "fill:a:"}) {
    out_.Clear();
    Call(ToolCall(2, "execute_code", {{"language", "python"}, {"code", fill + std::to_string(kCaptured)}}));
    lines = out_.Lines();
    ASSERT_EQ(lines.size(), 1u);
    const json whole = json::parse(lines[0])["result"]["structuredContent"];
    EXPECT_EQ(whole["stdout"].get<std::string>().size(), kCaptured) << fill;
    EXPECT_FALSE(whole.contains("stdout_truncated")) << fill;
    EXPECT_FALSE(whole.contains("notes")) << fill;
  }
}

TEST_F(McpServerTest, ProgressNotificationsStreamOutputWithinTheCap) {
  json r = Call(ToolCall(1, "execute_code", {{"language", "python"}, {"code", "hello world"}},
                         {{"progressToken", "tok"}}));
  server_->WaitIdle();  // the answers are written by the server's writer thread
  auto messages = out_.Messages();
  std::string streamed;
  int last = 0;
  for (const auto& m : messages) {
    if (m.value("method", "") != "notifications/progress") continue;
    EXPECT_EQ(m["params"]["progressToken"], "tok");
    EXPECT_GT(m["params"]["progress"].get<int>(), last);
    last = m["params"]["progress"];
    streamed += m["params"]["message"].get<std::string>();
  }
  EXPECT_EQ(streamed, "hello world");
  EXPECT_EQ(messages.back()["id"], 1);  // the response comes after its progress
  std::string big(200, 'x');
  Call(ToolCall(2, "execute_code", {{"language", "python"}, {"code", big}}, {{"progressToken", 5}}));
  size_t bytes = 0;
  bool marked = false;
  for (const auto& m : out_.Messages()) {
    if (m.value("method", "") != "notifications/progress" || m["params"]["progressToken"] != 5) continue;
    std::string text = m["params"]["message"];
    marked |= text.find("truncated") != std::string::npos;
    bytes += std::count(text.begin(), text.end(), 'x');
  }
  EXPECT_EQ(bytes, 64u);
  EXPECT_TRUE(marked);
}

TEST_F(McpServerTest, LoggingNotificationsFollowSetLevel) {
  Call(ToolCall(1, "execute_code", {{"language", "python"}, {"code", "a"}}));
  for (const auto& m : out_.Messages()) EXPECT_NE(m.value("method", ""), "notifications/message");
  Call(Request(2, "logging/setLevel", {{"level", "debug"}}));
  Call(ToolCall(3, "execute_code", {{"language", "python"}, {"code", "a"}}));
  int logs = 0;
  for (const auto& m : out_.Messages()) {
    if (m.value("method", "") == "notifications/message") {
      ++logs;
      EXPECT_EQ(m["params"]["level"], "info");
      EXPECT_EQ(m["params"]["data"]["tool"], "execute_code");
    }
  }
  EXPECT_EQ(logs, 1);
}

json ModernMeta(const std::string& version = "2026-07-28") {
  return {{"io.modelcontextprotocol/protocolVersion", version},
          {"io.modelcontextprotocol/clientCapabilities", json::object()},
          {"io.modelcontextprotocol/clientInfo", {{"name", "modern"}, {"version", "1"}}}};
}

TEST_F(McpServerTest, ModernPerRequestStyle) {
  json d = Call(Request(1, "server/discover", {{"_meta", ModernMeta()}}));
  EXPECT_EQ(d["result"]["supportedVersions"], json({"2026-07-28"}));
  EXPECT_EQ(d["result"]["resultType"], "complete");
  EXPECT_EQ(d["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "cocoon");
  json list = Call(Request(2, "tools/list", {{"_meta", ModernMeta()}}));
  EXPECT_EQ(list["result"]["resultType"], "complete");
  EXPECT_EQ(list["result"]["tools"].size(), 4u);
  EXPECT_TRUE(list["result"].contains("ttlMs"));
  EXPECT_TRUE(list["result"].contains("cacheScope"));
  json call = Call(ToolCall(3, "execute_code", {{"language", "python"}, {"code", "x"}}, ModernMeta()));
  EXPECT_EQ(call["result"]["resultType"], "complete");
  EXPECT_EQ(call["result"]["isError"], false);
  EXPECT_EQ(executor_.requests().back().client_name, "modern");
}

// A clientInfo.name that is not a string used to end the server: json::value()
// threw type_error out of initialize (and out of a modern request's _meta).
// It is only recorded, so the request succeeds with no client name.
TEST_F(McpServerTest, MalformedClientInfoDoesNotEndTheSession) {
  for (json name : {json(5), json::array({1}), json::object(), json(nullptr)}) {
    json init = Call(Request(1, "initialize", {{"protocolVersion", "2025-06-18"}, {"clientInfo", {{"name", name}}}}));
    EXPECT_EQ(init["result"]["protocolVersion"], "2025-06-18") << name;
    json meta = ModernMeta();
    meta["io.modelcontextprotocol/clientInfo"]["name"] = name;
    json call = Call(ToolCall(2, "execute_code", {{"language", "python"}, {"code", "x"}}, meta));
    EXPECT_EQ(call["result"]["isError"], false) << name;
    EXPECT_EQ(executor_.requests().back().client_name, "") << name;
  }
  EXPECT_EQ(Call(Request(3, "ping"))["result"], json::object());
}

TEST_F(McpServerTest, ModernErrors) {
  json r = Call(Request(1, "tools/list", {{"_meta", ModernMeta("2099-01-01")}}));
  EXPECT_EQ(r["error"]["code"], -32022);
  EXPECT_EQ(r["error"]["data"]["supported"], json({"2026-07-28"}));
  EXPECT_EQ(r["error"]["data"]["requested"], "2099-01-01");
  json meta = ModernMeta();
  meta.erase("io.modelcontextprotocol/clientCapabilities");
  EXPECT_EQ(Call(Request(2, "tools/list", {{"_meta", meta}}))["error"]["code"], -32602);
  meta = ModernMeta();
  meta["io.modelcontextprotocol/logLevel"] = "chatty";
  EXPECT_EQ(Call(Request(3, "tools/list", {{"_meta", meta}}))["error"]["code"], -32602);
  EXPECT_EQ(Call(Request(4, "ping", {{"_meta", ModernMeta()}}))["error"]["code"], -32601);
}

TEST_F(McpServerTest, ModernLogLevelIsPerRequest) {
  json meta = ModernMeta();
  meta["io.modelcontextprotocol/logLevel"] = "info";
  Call(ToolCall(1, "execute_code", {{"language", "python"}, {"code", "a"}}, meta));
  Call(ToolCall(2, "execute_code", {{"language", "python"}, {"code", "a"}}, ModernMeta()));
  int logs = 0;
  for (const auto& m : out_.Messages()) logs += m.value("method", "") == "notifications/message";
  EXPECT_EQ(logs, 1);
}

TEST_F(McpThreadedTest, CancelKillsTheRunAndSuppressesTheResponse) {
  server_->HandleLine(ToolCall(1, "execute_code", {{"language", "python"}, {"code", "sleep"}}).dump());
  EXPECT_EQ(Call(Request(2, "ping"))["result"], json::object());  // served while the tool runs
  for (int i = 0; i < 200 && executor_.requests().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server_->HandleLine(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"user"}})");
  server_->WaitIdle();
  EXPECT_TRUE(executor_.saw_cancel());
  for (const auto& m : out_.Messages()) EXPECT_NE(m.value("id", json()), 1) << m.dump();
}

TEST_F(McpThreadedTest, ACancellationMatchesItsRequestByValue) {
  server_->HandleLine(R"({"jsonrpc":"2.0","id":1e0,"method":"tools/call","params":{"name":"execute_code",)"
                      R"("arguments":{"language":"python","code":"sleep"}}})");
  for (int i = 0; i < 200 && executor_.requests().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server_->HandleLine(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1.0}})");
  server_->WaitIdle();
  EXPECT_TRUE(executor_.saw_cancel());
  EXPECT_TRUE(out_.Lines().empty()) << out_.Lines().front();
}

TEST_F(McpThreadedTest, ConcurrentCallsRespectTheCap) {
  for (int id = 1; id <= 5; ++id) {
    server_->HandleLine(ToolCall(id, "execute_code", {{"language", "python"}, {"code", "hold:150"}}).dump());
  }
  for (int id = 1; id <= 5; ++id) EXPECT_EQ(out_.WaitFor(id)["result"]["isError"], false) << id;
  EXPECT_EQ(executor_.max_running(), 2);
}

// A client that sends calls but reads no answers: once the answers waiting
// for it pass max_queued_response_bytes, no further sandbox starts (each
// answer holds a run's output; calls already read would otherwise pile them
// up in the server's memory). The calls run once the client reads again.
TEST(McpBackpressure, NoSandboxStartsWhileTheAnswersWaitingPassTheLimit) {
  FakeExecutor executor;
  std::mutex mutex;
  std::condition_variable changed;
  bool client_reads = false;
  Collector written;
  ServerOptions options;
  options.dispatch = Dispatch::kThreaded;
  options.max_concurrent = 4;
  options.max_queued_response_bytes = 4096;
  Server server(executor,
                [&](const std::string& line) {
                  std::unique_lock lock(mutex);
                  changed.wait(lock, [&] { return client_reads; });
                  written.Add(line);
                },
                options);
  const std::string output(6000, 'o');  // each answer is over the limit
  auto call = [&](int id) {
    json request = {{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"},
                    {"params", {{"name", "execute_code"}, {"arguments", {{"language", "python"}, {"code", output}}}}}};
    server.HandleLine(request.dump());
  };
  call(1);  // its answer is taken by the writer, which blocks: not counted as waiting
  for (int i = 0; i < 400 && executor.requests().size() < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  call(2);  // its answer waits: 12 KB > 4 KB
  for (int i = 0; i < 400 && executor.requests().size() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  call(3);
  call(4);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(executor.requests().size(), 2u) << "a sandbox started while 12 KB of answers waited for a 4 KB limit";
  {
    std::lock_guard lock(mutex);
    client_reads = true;
  }
  changed.notify_all();
  for (int id = 1; id <= 4; ++id) EXPECT_EQ(written.WaitFor(id)["result"]["isError"], false) << id;
  EXPECT_EQ(executor.requests().size(), 4u);
  server.WaitIdle();
}

// Tool calls of one batch run concurrently; the array waits for the slowest,
// and a cancelled call simply has no element in it.
TEST_F(McpThreadedTest, ABatchOfToolCallsIsAnsweredOnceAllHaveFinished) {
  InitializeForBatches();
  json batch = json::array({ToolCall(1, "execute_code", {{"language", "python"}, {"code", "hold:200"}}),
                            ToolCall(2, "execute_code", {{"language", "python"}, {"code", "quick"}}),
                            ToolCall(3, "execute_code", {{"language", "python"}, {"code", "sleep"}}),
                            Request(4, "ping")});
  server_->HandleLine(batch.dump());
  // Cancel only once all three calls have started: whichever order they
  // ran in, two of them then overlapped (call 3 runs until cancelled, call
  // 1 holds its slot 200 ms), so max_running below does not depend on timing.
  for (int i = 0; i < 400 && executor_.requests().size() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_TRUE(out_.Lines().empty()) << "the batch was answered before its calls finished: " << out_.Lines().front();
  server_->HandleLine(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}})");
  server_->WaitIdle();
  std::vector<json> arrays;
  for (const auto& m : out_.Messages()) {
    if (m.is_array()) arrays.push_back(m);
    else EXPECT_TRUE(m.contains("method")) << "a response outside the batch's array: " << m.dump();
  }
  ASSERT_EQ(arrays.size(), 1u);
  std::set<int> ids;
  for (const auto& response : arrays[0]) {
    ids.insert(response["id"].get<int>());
    EXPECT_TRUE(response.contains("result")) << response.dump();
  }
  EXPECT_EQ(ids, (std::set<int>{1, 2, 4}));
  EXPECT_EQ(executor_.max_running(), 2);
}

TEST_F(McpThreadedTest, DuplicateIdInFlightIsRejected) {
  server_->HandleLine(ToolCall(1, "execute_code", {{"language", "python"}, {"code", "hold:300"}}).dump());
  for (int i = 0; i < 200 && executor_.requests().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  server_->HandleLine(ToolCall(1, "execute_code", {{"language", "python"}, {"code", "x"}}).dump());
  server_->WaitIdle();
  int errors = 0, results = 0;
  for (const auto& m : out_.Messages()) {
    errors += m.contains("error") && m["error"]["code"] == -32600;
    results += m.contains("result");
  }
  EXPECT_EQ(errors, 1);
  EXPECT_EQ(results, 1);
}

TEST_F(McpThreadedTest, ServeReadsLinesSkipsOversizedAndFinishesCallsAtEof) {
  ServeThroughPipe(ToolCall(1, "execute_code", {{"language", "python"}, {"code", "hold:50"}}).dump() + "\n" +
                   std::string(10000, 'x') + "\n" + Request(2, "ping").dump() + "\r\n" +
                   Request(3, "ping").dump());  // last line without a newline
  EXPECT_EQ(out_.WaitFor(1)["result"]["isError"], false);
  EXPECT_EQ(out_.WaitFor(2)["result"], json::object());
  EXPECT_EQ(out_.WaitFor(3)["result"], json::object());
  int oversized = 0;
  for (const auto& m : out_.Messages()) oversized += m.contains("error") && m["error"]["code"] == -32600;
  EXPECT_EQ(oversized, 1);
}

// A line over the message limit is refused with the id its start shows
// (arguments inside the per-argument caps can still make one, 8 MiB of
// stdin): an error with id null matches no request, and the client's call
// waited for its own timeout. A refused tools/call is also audited.
TEST_F(McpThreadedTest, AnOversizedRequestIsRefusedWithItsOwnId) {
  json call_request = ToolCall(0, "execute_code", {{"language", "python"}, {"code", "print(1)"},
                                                  {"stdin", std::string(10000, 'a')}});
  call_request["id"] = "big-1";  // a string id, as SDKs send
  std::string huge_call = call_request.dump();
  std::string huge_ping = R"({"jsonrpc":"2.0","id":77,"method":"ping","params":{"pad":")" + std::string(10000, 'b') +
                          R"("}})";
  ServeThroughPipe(huge_call + "\n" + huge_ping + "\n" + Request(3, "ping").dump() + "\n");
  json call = out_.WaitFor("big-1");
  EXPECT_EQ(call["error"]["code"], -32600) << call.dump();
  EXPECT_NE(call["error"]["message"].get<std::string>().find("exceeds the limit"), std::string::npos) << call.dump();
  EXPECT_TRUE(call["error"]["data"].contains("audit")) << "a refused tools/call is audited: " << call.dump();
  EXPECT_EQ(out_.WaitFor(77)["error"]["code"], -32600);
  EXPECT_EQ(out_.WaitFor(3)["result"], json::object());
  for (const auto& m : out_.Messages()) EXPECT_FALSE(m.contains("id") && m["id"].is_null()) << m.dump();
}

// JSON-RPC 2.0 section 4.1: a notification is never answered, also when it
// is too long (it is logged instead); a request is refused with its id even
// when the id comes after the params that made it too long (the TypeScript
// SDK's order), well past the first 64 KiB.
TEST_F(McpThreadedTest, AnOversizedNotificationIsNotAnsweredAndARequestIsWhereverItsIdIs) {
  const std::string pad = std::string(100000, 'p');
  const std::string notification =
      R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"pad":")" + pad + R"("}})";
  const std::string call = R"({"jsonrpc":"2.0","method":"tools/call","params":{"name":"execute_code","arguments":{)"
                           R"("language":"python","code":")" + pad + R"("}}})";
  const std::string request_id_last =
      R"({"method":"ping","params":{"pad":")" + pad + R"("},"jsonrpc":"2.0","id":"last"})";
  ServeThroughPipe(notification + "\n" + call + "\n" + request_id_last + "\n" + Request(3, "ping").dump() + "\n");
  EXPECT_EQ(out_.WaitFor("last")["error"]["code"], -32600);
  EXPECT_EQ(out_.WaitFor(3)["result"], json::object());
  auto messages = out_.Messages();
  EXPECT_EQ(messages.size(), 2u);
  for (const auto& m : messages) EXPECT_FALSE(m["id"].is_null()) << m.dump();
  auto refusals = executor_.refusals();
  ASSERT_EQ(refusals.size(), 1u) << "the tools/call notification is still audited";
  EXPECT_EQ(refusals[0].request_id, "");
  EXPECT_EQ(refusals[0].kind, "bad_request");
}

// An oversized line is read through a piece at a time (as Serve reads it):
// its top-level "id", "method" and "jsonrpc", wherever they are, and
// whether it is a whole notification or response.
TEST(McpOversizedLine, ReadsTheTopLevelMembersOfTheWholeLine) {
  struct Case {
    std::string line;
    std::string id;  // the id's text; "null" when none could be read
    std::string method;
    bool unanswerable;
  };
  const std::string pad = R"("params":{"id":5,"method":"x","s":"\"id\":9,\\","a":[{"id":6}]})";
  const std::vector<Case> cases = {
      {R"({"method":"tools/call",)" + pad + R"(,"jsonrpc":"2.0","id":"a"})", R"("a")", "tools/call", false},
      {R"({"jsonrpc":"2.0","id":1.50,"method":"ping",)" + pad + "}", "1.50", "ping", false},
      {R"( { "id" : 18446744073709551616 , "method" : "ping" , )" + pad + " }\r", "18446744073709551616", "ping",
       false},
      {R"({"\u0069d":7,"method":"p\u0069ng","jsonrpc":"2.0"})", "7", "ping", false},
      {R"({"id":1,"id":2,"jsonrpc":"2.0","method":"ping"})", "2", "ping", false},  // the last one counts
      {R"({"jsonrpc":"2.0","method":"notifications/progress",)" + pad + "}", "null", "notifications/progress", true},
      {R"({"jsonrpc":"2.0","id":3,"result":{"x":[1]}})", "3", "", true},
      {R"({"jsonrpc":"2.0","error":{"code":1}})", "null", "", true},
      {R"({"method":"notifications/x",)" + pad + "}", "null", "notifications/x", false},  // no "jsonrpc"
      {R"({"jsonrpc":"1.0","method":"notifications/x"})", "null", "notifications/x", false},
      {R"({"jsonrpc":"2.0","method":7})", "null", "", false},
      {R"({"jsonrpc":"2.0","method":"notifications/x","params":{"a":1)", "null", "notifications/x", false},  // cut
      {R"({"jsonrpc":"2.0","method":"notifications/x"} {})", "null", "notifications/x", false},  // two values
      {R"({"jsonrpc":"2.0","id":true,"method":"ping"})", "null", "ping", false},
      {R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})", "null", "ping", false},
      {R"({"jsonrpc":"2.0","id":")" + std::string(2000, 'i') + R"(","method":"ping"})", "null", "ping", false},
      {R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])", "null", "", false},
      {"x", "null", "", false},
      {"{}", "null", "", false},
      // nlohmann's parser stops at a NUL: the id's token must still be
      // echoed as the number alone, never with the bytes after it (they made
      // the answer invalid JSON, an ANSI escape included).
      {std::string(R"({"jsonrpc":"2.0","method":"ping","id":1)") + std::string(1, '\0') +
           "]]{\"injected\":\"yes\"\x07\x1b[2J}",
       "1", "ping", false},
  };
  for (const Case& c : cases) {
    OversizedLine whole;
    whole.Feed(c.line);
    Message m = whole.Refusal("too big");
    EXPECT_EQ(m.kind, MessageKind::kInvalid) << c.line;
    EXPECT_EQ(m.error_code, -32600) << c.line;
    EXPECT_EQ(m.error_message, "too big") << c.line;
    EXPECT_EQ(m.id.text(), c.id) << c.line;
    EXPECT_EQ(m.method, c.method) << c.line;
    EXPECT_EQ(m.unanswerable, c.unanswerable) << c.line;
    EXPECT_EQ(whole.size(), c.line.size());
    for (size_t split = 1; split < c.line.size(); ++split) {  // as the pieces of a pipe's reads
      OversizedLine pieces;
      pieces.Feed(std::string_view(c.line).substr(0, split));
      pieces.Feed(std::string_view(c.line).substr(split));
      Message p = pieces.Refusal("too big");
      EXPECT_EQ(p.id.text(), c.id) << c.line << " split at " << split;
      EXPECT_EQ(p.unanswerable, c.unanswerable) << c.line << " split at " << split;
    }
  }
}

TEST(McpPaths, SafeRelativePath) {
  for (const char* ok : {"a", "a/b.txt", "dir/sub/file", ".hidden", "a..b", "...", "caf\xc3\xa9"}) {
    EXPECT_TRUE(IsSafeRelativePath(ok)) << ok;
  }
  for (const char* bad : {"", "/abs", "..", "../x", "a/../b", "a//b", "a/", "./a", "a/.", "a\nb", "a\tb", "a\rb", "a\x7f"}) {
    EXPECT_FALSE(IsSafeRelativePath(bad)) << bad;
  }
  EXPECT_FALSE(IsSafeRelativePath(std::string("a\0b", 3)));
  EXPECT_NE(RelativePathProblem("a//b").find("empty component"), std::string::npos) << "not the '..' message";
  EXPECT_NE(RelativePathProblem("a\nb").find("control characters"), std::string::npos);
}

// The input schemas' path pattern (ECMA-262, as JSON Schema's) accepts
// exactly what the server does: a client that checks the schema first is
// not refused afterwards, nor the other way round.
TEST(McpPaths, TheSchemasPathPatternAgreesWithTheServer) {
  // std::regex matches bytes (signed char): the C1 range, two bytes in
  // UTF-8, is left to the byte check below.
  std::string ecma = kRelativePathPattern;
  ecma.replace(ecma.find("\\x7F-\\x9F"), 9, "\\x7F");
  // and knows no [\s\S] (JavaScript's way to match any character, U+2028
  // included): '.' does here, the paths with a line break fail the class.
  for (size_t at; (at = ecma.find("[\\s\\S]")) != std::string::npos;) ecma.replace(at, 6, ".");
  const std::regex pattern(ecma, std::regex::ECMAScript);
  std::string deep;
  for (int i = 0; i < 65; ++i) deep += (i ? "/d" : "d");
  for (const std::string& path : std::vector<std::string>{"a", "a/b.txt", "dir/sub/file", ".hidden", "a..b", "...", "x/.y", "", "/abs", "..",
                                 "../x", "a/../b", "a/..", "a//b", "a/", "./a", "a/.", "a\nb", "a\tb", "a\x7f",
                                 deep, deep.substr(2)}) {
    EXPECT_EQ(std::regex_search(path, pattern), IsSafeRelativePath(path)) << "'" << path << "'";
  }
  // C1 controls (U+0080..U+009F): two bytes in UTF-8, one character to the
  // schema; std::regex sees bytes, so only the server is checked here.
  EXPECT_FALSE(IsSafeRelativePath("a\xc2\x9b" "31mred"));
  EXPECT_TRUE(IsSafeRelativePath("caf\xc3\xa9"));
}

TEST_F(McpServerTest, ANulInACommandStringOrInCodeIsRefused) {
  // sh -c and python -c end their argument at a NUL: "echo SAFE" would run
  // while the audit log recorded the whole text.
  json command = Call(ToolCall(1, "run_in_sandbox", {{"command", std::string("echo SAFE\0; echo HIDDEN", 23)}}));
  EXPECT_EQ(command["result"]["isError"], true);
  EXPECT_NE(command["result"]["structuredContent"]["error"]["message"].get<std::string>().find("NUL"), std::string::npos);
  json code = Call(ToolCall(2, "execute_code", {{"language", "bash"}, {"code", std::string("echo X\0; echo Y", 16)}}));
  EXPECT_EQ(code["result"]["isError"], true);
  json workdir = Call(ToolCall(3, "run_in_sandbox", {{"command", "pwd"}, {"workdir", "a\nb"}}));
  EXPECT_NE(workdir["result"]["structuredContent"]["error"]["message"].get<std::string>().find("control characters"),
            std::string::npos);
  EXPECT_TRUE(executor_.requests().empty());
}

TEST(McpJsonRpc, Utf8) {
  EXPECT_TRUE(IsValidUtf8("h\xc3\xa9llo \xf0\x9f\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // > U+10FFFF
  EXPECT_EQ(SanitizeUtf8("a\xff" "b"), "a\xEF\xBF\xBD" "b");
}

}  // namespace
}  // namespace cocoon::mcp
