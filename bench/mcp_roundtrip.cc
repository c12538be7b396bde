// mcp_roundtrip: what an MCP `execute_code` round trip costs a client, next
// to the `cocoon run` launch that does the same work (issue #6: the round
// trip may add at most 3 ms over `cocoon run -r python -c 'print(1)'`).
//
//   mcp_roundtrip --cocoon PATH [--iterations 100] [--warmup 5]
//                 [--language python] [--code 'print(1)']
//
// It starts `cocoon mcp` once as a child on a pair of pipes, does the
// `initialize` handshake, then, round by round (so that machine noise hits
// both alike), times
//  - "mcp-execute-code": from writing one `tools/call execute_code` line to
//    reading its response line (the client's view: JSON-RPC framing, the
//    server's parse, the sandbox, the result's JSON);
//  - "cocoon-run": fork() to waitpid() of `cocoon run -r LANG -c CODE`.
// A sample counts only when the run printed what `code` should print
// ("1"); anything else is a failure, reported, never timed.
// Prints one JSON object in launch_latency's shape (per case: median, p90,
// p99, min, max, mean in microseconds, failures) plus "difference": the MCP
// case minus the run case, at the median and at p99.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

using nlohmann::json;

struct Options {
  std::string cocoon;
  int iterations = 100;
  int warmup = 5;
  std::string language = "python";
  std::string code = "print(1)";
  std::string expect = "1\n";
  int timeout_ms = 30000;  // per response; a hung server fails the run, not the machine
};

struct Case {
  std::string name;
  std::string command;
  std::vector<double> samples_us;
  int failures = 0;
  std::string last_failure;
};

double NowUs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t index = static_cast<size_t>(p * (values.size() - 1) + 0.5);
  return values[std::min(index, values.size() - 1)];
}

// `cocoon mcp` on two pipes, with newline framing.
class McpChild {
 public:
  bool Start(const std::string& cocoon) {
    int to_child[2], from_child[2];
    if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0) return false;
    pid_ = fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      dup2(to_child[0], 0);
      dup2(from_child[1], 1);
      int devnull = open("/dev/null", O_WRONLY);
      dup2(devnull, 2);  // the server's logs; stdout carries only protocol
      execl(cocoon.c_str(), cocoon.c_str(), "mcp", static_cast<char*>(nullptr));
      _exit(127);
    }
    close(to_child[0]);
    close(from_child[1]);
    in_ = to_child[1];
    out_ = from_child[0];
    return true;
  }

  ~McpChild() {
    if (in_ >= 0) close(in_);  // EOF: the server finishes and exits
    if (pid_ > 0) {
      int status = 0;
      for (int i = 0; i < 200 && waitpid(pid_, &status, WNOHANG) == 0; ++i) usleep(10000);
      if (waitpid(pid_, &status, WNOHANG) == 0) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
      }
    }
    if (out_ >= 0) close(out_);
  }

  bool Send(const json& message) {
    std::string line = message.dump() + "\n";
    size_t done = 0;
    while (done < line.size()) {
      ssize_t n = write(in_, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  }

  // The next response whose id is `id` (notifications are skipped).
  std::optional<json> Await(int id, int timeout_ms) {
    double deadline = NowUs() + timeout_ms * 1000.0;
    for (;;) {
      size_t newline;
      while ((newline = buffer_.find('\n')) != std::string::npos) {
        std::string line = buffer_.substr(0, newline);
        buffer_.erase(0, newline + 1);
        json value = json::parse(line, nullptr, false);
        if (value.is_object() && value.contains("id") && value["id"] == id) return value;
      }
      int left = static_cast<int>((deadline - NowUs()) / 1000);
      if (left <= 0) return std::nullopt;
      pollfd fd{out_, POLLIN, 0};
      if (poll(&fd, 1, left) <= 0) continue;
      char chunk[65536];
      ssize_t n = read(out_, chunk, sizeof chunk);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return std::nullopt;  // the server died
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }

 private:
  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  std::string buffer_;
};

bool Initialize(McpChild& mcp, const Options& options) {
  json init = {{"jsonrpc", "2.0"}, {"id", 0}, {"method", "initialize"},
               {"params", {{"protocolVersion", "2025-11-25"}, {"capabilities", json::object()},
                           {"clientInfo", {{"name", "mcp_roundtrip"}, {"version", "1"}}}}}};
  if (!mcp.Send(init) || !mcp.Await(0, options.timeout_ms)) return false;
  return mcp.Send({{"jsonrpc", "2.0"}, {"method", "notifications/initialized"}});
}

// One execute_code round trip; returns microseconds, or -1 (and why).
double McpOnce(McpChild& mcp, const Options& options, int id, std::string& why) {
  json call = {{"jsonrpc", "2.0"}, {"id", id}, {"method", "tools/call"},
               {"params", {{"name", "execute_code"},
                           {"arguments", {{"language", options.language}, {"code", options.code}}}}}};
  double start = NowUs();
  if (!mcp.Send(call)) {
    why = "cannot write to the server";
    return -1;
  }
  std::optional<json> response = mcp.Await(id, options.timeout_ms);
  double elapsed = NowUs() - start;
  if (!response) {
    why = "no response within " + std::to_string(options.timeout_ms) + " ms";
    return -1;
  }
  const json& result = (*response)["result"];
  if (!result.is_object() || result.value("isError", true) || !result.contains("structuredContent") ||
      result["structuredContent"].value("stdout", "") != options.expect) {
    why = response->dump().substr(0, 600);
    return -1;
  }
  return elapsed;
}

// One `cocoon run -r LANG -c CODE`, stdout read back and compared.
double RunOnce(const Options& options, std::string& why) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return -1;
  double start = NowUs();
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDWR);
    dup2(devnull, 0);
    dup2(out[1], 1);
    dup2(devnull, 2);
    execl(options.cocoon.c_str(), options.cocoon.c_str(), "run", "-r", options.language.c_str(), "-c",
          options.code.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  std::string output;
  char chunk[4096];
  ssize_t n;
  while ((n = read(out[0], chunk, sizeof chunk)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    output.append(chunk, static_cast<size_t>(n));
  }
  close(out[0]);
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) < 0) return -1;
  double elapsed = NowUs() - start;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || output != options.expect) {
    why = "exit status " + std::to_string(status) + ", stdout '" + output.substr(0, 200) + "'";
    return -1;
  }
  return elapsed;
}

json Summary(const Case& c) {
  double sum = 0;
  for (double v : c.samples_us) sum += v;
  json out = {{"name", c.name},
              {"command", c.command},
              {"samples", c.samples_us.size()},
              {"failures", c.failures},
              {"median_us", Percentile(c.samples_us, 0.5)},
              {"p90_us", Percentile(c.samples_us, 0.9)},
              {"p99_us", Percentile(c.samples_us, 0.99)},
              {"min_us", Percentile(c.samples_us, 0.0)},
              {"max_us", Percentile(c.samples_us, 1.0)},
              {"mean_us", c.samples_us.empty() ? 0 : sum / c.samples_us.size()}};
  if (!c.last_failure.empty()) out["last_failure"] = c.last_failure;
  return out;
}

bool ParseArgs(int argc, char** argv, Options& options) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool has_value = i + 1 < argc;
    if (arg == "--cocoon" && has_value) options.cocoon = argv[++i];
    else if (arg == "--iterations" && has_value) options.iterations = std::atoi(argv[++i]);
    else if (arg == "--warmup" && has_value) options.warmup = std::atoi(argv[++i]);
    else if (arg == "--language" && has_value) options.language = argv[++i];
    else if (arg == "--code" && has_value) options.code = argv[++i];
    else if (arg == "--expect" && has_value) options.expect = argv[++i];
    else return false;
  }
  return !options.cocoon.empty() && options.iterations > 0 && options.warmup >= 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options options;
  if (!ParseArgs(argc, argv, options)) {
    std::fprintf(stderr,
                 "usage: mcp_roundtrip --cocoon PATH [--iterations N] [--warmup N] [--language L]"
                 " [--code CODE] [--expect STDOUT]\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);  // a dead server shows up as a failed write
  McpChild mcp;
  if (!mcp.Start(options.cocoon) || !Initialize(mcp, options)) {
    std::fprintf(stderr, "mcp_roundtrip: cannot start and initialize '%s mcp'\n", options.cocoon.c_str());
    return 1;
  }
  Case round_trip{"mcp-execute-code", "tools/call execute_code {language: " + options.language + ", code: " +
                                          options.code + "}", {}, 0, {}};
  Case run{"cocoon-run", options.cocoon + " run -r " + options.language + " -c " + options.code, {}, 0, {}};
  int id = 1;
  for (int round = 0; round < options.warmup + options.iterations; ++round) {
    std::string why;
    // Alternate which goes first, so neither always runs on a cache the other warmed.
    for (int k = 0; k < 2; ++k) {
      bool mcp_turn = (round + k) % 2 == 0;
      Case& c = mcp_turn ? round_trip : run;
      why.clear();
      double us = mcp_turn ? McpOnce(mcp, options, id++, why) : RunOnce(options, why);
      if (round < options.warmup) continue;
      if (us < 0) {
        ++c.failures;
        c.last_failure = why;
      } else {
        c.samples_us.push_back(us);
      }
    }
  }
  json out;
  out["iterations"] = options.iterations;
  out["cases"] = {Summary(run), Summary(round_trip)};
  out["difference"] = {
      {"median_us", Percentile(round_trip.samples_us, 0.5) - Percentile(run.samples_us, 0.5)},
      {"p99_us", Percentile(round_trip.samples_us, 0.99) - Percentile(run.samples_us, 0.99)},
      {"budget_us", 3000}};
  std::printf("%s\n", out.dump(2).c_str());
  return round_trip.samples_us.empty() || run.samples_us.empty() ? 1 : 0;
}
