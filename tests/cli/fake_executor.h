// A fake Executor for the MCP protocol tests and the fuzzer: no sandbox, the
// "code" string scripts what happens. Recognised code:
//   "sleep"        wait until cancelled (or 10 s), then report kCancelled
//   "timeout"      report a timeout      "oom"  report an OOM kill
//   "kill"         report a policy kill  "fail" Execute returns a host error
//   "binary"       stdout holds invalid UTF-8
//   "hold:<ms>"    keep a slot busy for <ms> ms (concurrency tests)
//   "fill:<c>:<n>" stdout = <n> copies of byte <c> ("nul" for NUL), not streamed
//   anything else  exit 0, stdout = the code, streamed in two chunks
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cli/mcp/executor.h"

namespace cocoon::mcp::testing {

class FakeExecutor : public Executor {
 public:
  Result<ExecResult> Execute(const ExecRequest& request, const ExecHooks& hooks) override {
    int now = ++running_;
    int seen = max_running_.load();
    while (now > seen && !max_running_.compare_exchange_weak(seen, now)) {}
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(request);
    }
    auto result = Run(request, hooks);
    --running_;
    return result;
  }

  nlohmann::json InspectRuntimes() override {
    return {{"runtimes", {{{"name", "python"}, {"available", true}, {"path", "/usr/bin/python3"}, {"version", "3.11"}},
                          {{"name", "ruby"}, {"available", false}}}}};
  }
  std::vector<std::string> Languages() override { return {"python", "bash", "node"}; }
  std::vector<std::string> Policies() override { return {"strict", "build"}; }
  // Refusals are recorded (tool, request id, client, kind); "fail-audit" as
  // the client name makes the write fail, as a broken audit log would.
  Result<AuditRef> AuditRefusedCall(const CallIdentity& call, std::string_view kind, const Status&) override {
    if (call.client_name == "fail-audit") return Status(ErrorCode::kUnavailable, "disk full");
    ++refused_;
    std::lock_guard lock(mutex_);
    refusals_.push_back({std::string(call.tool), std::string(call.request_id), std::string(call.client_name),
                         std::string(kind)});
    return AuditRef{++sequence_, "refused-" + std::string(call.tool)};
  }

  struct Refusal {
    std::string tool, request_id, client_name, kind;
  };
  std::vector<Refusal> refusals() {
    std::lock_guard lock(mutex_);
    return refusals_;
  }

  std::vector<ExecRequest> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  int max_running() const { return max_running_.load(); }
  int refused() const { return refused_.load(); }
  bool saw_cancel() const { return saw_cancel_.load(); }

 private:
  Result<ExecResult> Run(const ExecRequest& request, const ExecHooks& hooks) {
    const std::string& code = request.kind == ExecKind::kCommand ? request.argv.back() : request.code;
    ExecResult result;
    result.audit_sequence = ++sequence_;
    result.audit_event_id = "event-" + std::to_string(result.audit_sequence);
    result.exit_code = 0;
    if (code == "fail") return Status(ErrorCode::kFailedPrecondition, "host cannot sandbox");
    if (code == "sleep") return Sleep(hooks, result);
    if (code.rfind("hold:", 0) == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::stoi(code.substr(5))));
    } else if (code == "timeout") {
      result.status = ExecStatus::kTimeout;
      result.exit_code = -1;
    } else if (code == "oom") {
      result.status = ExecStatus::kOomKilled;
    } else if (code == "kill") {
      result.status = ExecStatus::kPolicyKill;
    }
    if (code.rfind("fill:", 0) == 0) {
      const size_t colon = code.find(':', 5);
      const std::string byte = code.substr(5, colon - 5);
      std::string out(std::stoul(code.substr(colon + 1)), byte == "nul" ? '\0' : byte[0]);
      result.outcome = {{"exit_code", 0}, {"stdout", std::move(out)}, {"stderr", ""}, {"wall_ms", 1}};
      return result;
    }
    std::string out = code == "binary" ? std::string("\xff\xfe ok \xc3", 7) : code;
    if (hooks.on_output && !out.empty()) {
      hooks.on_output(OutputStream::kStdout, std::string_view(out).substr(0, out.size() / 2));
      hooks.on_output(OutputStream::kStdout, std::string_view(out).substr(out.size() / 2));
    }
    result.outcome = {{"exit_code", result.exit_code}, {"stdout", out}, {"stderr", ""}, {"wall_ms", 1}};
    return result;
  }

  Result<ExecResult> Sleep(const ExecHooks& hooks, ExecResult result) {
    std::mutex mutex;
    std::condition_variable cv;
    bool woken = false;
    hooks.cancel->OnCancel([&] {
      std::lock_guard lock(mutex);
      woken = true;
      saw_cancel_ = true;
      cv.notify_all();
    });
    {
      std::unique_lock lock(mutex);
      cv.wait_for(lock, std::chrono::seconds(10), [&] { return woken; });
    }
    hooks.cancel->OnCancel(nullptr);
    result.status = ExecStatus::kCancelled;
    return result;
  }

  std::mutex mutex_;
  std::vector<ExecRequest> requests_;
  std::vector<Refusal> refusals_;
  std::atomic<int> running_{0};
  std::atomic<int> max_running_{0};
  std::atomic<int> refused_{0};
  std::atomic<uint64_t> sequence_{0};
  std::atomic<bool> saw_cancel_{false};
};

}  // namespace cocoon::mcp::testing
