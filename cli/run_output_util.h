// Launching a PreparedRun (agent_run_util.h) and reporting it the three ways
// `cocoon run` and `cocoon pipeline` can: passing output through, one JSON
// Outcome, or live NDJSON chunks (--stream) followed by the Outcome line.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/pass_through.h"
#include "cli/agent_run_util.h"
#include "cli/launch_util.h"
#include "cli/log_json_destination.h"
#include "enforcer/outcome.h"

namespace cocoon::cli {

enum class RunOutputMode { kPassThrough, kJson, kStream };

struct RunOutputOptions {
  RunOutputMode mode = RunOutputMode::kPassThrough;
  std::string log_json;        // also write the JSON Outcome here
  // log_json opened before the run (LaunchAndReport); unset: opened when
  // written (a refusal before the launch).
  std::shared_ptr<const LogJsonDestination> log_json_destination;
  std::string command_name;    // "cocoon run", for messages
};

// What a pass-through run says on stderr after the command's own output:
// truncation, timeout, OOM, seccomp kill, each work dir finding and what was
// done with it, and a verification that failed. `name` prefixes each line.
void PrintOutcomeNotes(const enforcer::Outcome& outcome, const std::string& name);

// `value` if not empty, else $name (or "").
std::string EnvOr(const std::string& value, const char* name);

// The quick policy's artifacts, then LaunchSandboxed: the same path as
// `cocoon enforce`. The request's argv and overrides are filled in here.
// `before_launch` runs once the artifacts are in hand, in the process that
// launches: a cache miss hands the whole command over to cocoon-full
// (policy_compile.h), and what was printed before that was printed twice.
Result<enforcer::Outcome> LaunchPrepared(const PreparedRun& run, LaunchRequest request,
                                         const std::function<void()>& before_launch = {});

// OutcomeToJson plus what the flags did: {"overrides": [...], "notes": [...]},
// and the profile they started from: {"base_policy": {"profile", "source"}}.
// Takes the Outcome by value: callers move it in at its last use, so the
// captured output (up to the cap) is moved into the JSON, not copied.
nlohmann::json RunOutcomeJson(enforcer::Outcome outcome, const QuickPolicy& policy);

// A run refused before or at launch: the reason on stderr and, with --json
// or --stream, a {"refused": true, "error", "overrides"} object on stdout
// (the stream's final line), so that callers parsing stdout always get one.
void ReportRefusal(const Status& why, const std::vector<std::string>& overrides, const RunOutputOptions& output);

// Launch + report; returns the process exit status. `stdin_mode`: what the
// command reads on stdin (kInherit: the caller's, never a terminal).
int LaunchAndReport(const PreparedRun& run, const std::string& work_dir, const std::vector<std::string>& copies,
                    enforcer::StdinMode stdin_mode, const AuditOptions& audit, const RunOutputOptions& output);

// --stream: one NDJSON line per chunk, written as it arrives:
//   {"stream":"stdout","seq":3,"data":"..."}
//   {"stream":"stderr","seq":4,"encoding":"base64","data":"..."}   (not UTF-8)
// a character split across two chunks is held back and sent whole; the last
// line is the Outcome with "stream":"outcome". Memory stays bounded: nothing
// is kept beyond the current chunk (the enforcer stops delivering at the
// policy's output cap and the Outcome says the stream was truncated).
// The exit status of a run whose output did not all reach the caller: the
// Outcome (--json, --stream) or the command's output passed through could
// not be written in full to cocoon's stdout or stderr (a full disk, a reader
// gone). The same 125 as an unverified work dir (enforcer/outcome.h): the
// command ran, but what it did cannot be known from what was printed.
inline constexpr int kExitOutputLost = 125;

// Says on stderr that `what` could not be written in full (errno `error`,
// 0 if unknown) and returns kExitOutputLost.
int ReportLostOutput(const std::string& command_name, const std::string& what, int error);

// For the commands that run sandboxes (enforce, run, pipeline, mcp): a
// reader of cocoon's stdout that went away (`cocoon run --json | head -c1`)
// makes a write fail with EPIPE, which is reported (ReportLostOutput, exit
// 125), instead of SIGPIPE ending cocoon with no word after the run: before,
// the Outcome, --log-json's copy and the note were all lost (exit 141).
// The sandbox's first process resets every signal before its execve
// (child_main.cc, ResetSignals), so the command still gets SIGPIPE's
// default.
void IgnoreSigpipe();

class NdjsonStreamer {
 public:
  explicit NdjsonStreamer(int fd) : fd_(fd), writer_(fd) {}
  // While the sandbox runs: never blocks (pass_through.h).
  void Chunk(enforcer::OutputStream stream, std::string_view data);
  // Writes what Chunk kept (blocking).
  void Flush();
  // The last lines and the Outcome; false when any line of the stream could
  // not be written in full (errno set).
  bool Finish(nlohmann::json outcome);

 private:
  void Emit(std::string_view stream, std::string_view data);
  int fd_;
  PassThroughWriter writer_;
  uint64_t seq_ = 0;
  std::string pending_[2];
};

std::string Base64Encode(std::string_view bytes);
bool WriteAllFd(int fd, std::string_view data);

}  // namespace cocoon::cli
