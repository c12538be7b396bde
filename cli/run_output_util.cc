#include "cli/run_output_util.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "cli/log_json_destination.h"
#include "cli/mcp/json_rpc.h"
#include "cli/pass_through.h"
#include "cli/terminal_text.h"
#include "compiler/common/json_fd_writer.h"
#include "enforcer/started_child.h"

namespace cocoon::cli {
namespace {

// Bytes at the end of `data` that begin a UTF-8 sequence the next chunk completes.
size_t IncompleteTail(std::string_view data) {
  for (size_t back = 1; back <= std::min<size_t>(3, data.size()); ++back) {
    auto c = static_cast<unsigned char>(data[data.size() - back]);
    if ((c & 0xC0) == 0x80) continue;
    size_t need = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

}  // namespace

void PrintOutcomeNotes(const enforcer::Outcome& o, const std::string& name) {
  if (!o.supervisor_error.empty()) {
    // The sandbox was killed and what it wrote verified (below); the
    // command's own status is unknown, so cocoon exits 125.
    std::cerr << name << ": " << EscapeForTerminal(o.supervisor_error) << "\n";
  }
  if (o.stdout_truncated || o.stderr_truncated) {
    std::cerr << name << ": output truncated at the policy's cap (" << o.stdout_bytes << " stdout / " << o.stderr_bytes
              << " stderr bytes written)\n";
  }
  if (o.limit_hit == "cpu_time") {
    std::cerr << name << ": killed at the CPU time limit (" << o.user_cpu_ms + o.system_cpu_ms << " ms of CPU)\n";
  } else if (o.timed_out) {
    std::cerr << name << ": timed out after " << o.wall_ms << " ms; sandbox killed\n";
  }
  for (const auto& reached : o.limits_reached) {
    if (reached.ended_the_run || reached.limit == "wall_time" || reached.limit == "cpu_time") continue;
    if (reached.limit == "memory") {
      std::cerr << name << ": " << reached.count << " process(es) of the sandbox, not the command itself, killed at the "
                << "memory limit (" << reached.observed_by << "); the command went on\n";
    } else if (reached.limit == "processes") {
      std::cerr << name << ": " << reached.count << " process/thread creation(s) refused at the process limit ("
                << reached.observed_by << ")\n";
    }
  }
  if (o.termination_reason == enforcer::TerminationReason::kOomKilled) std::cerr << name << ": killed at the memory limit\n";
  // A cancelled commit says so below; a run cancelled before it ends here.
  if (o.termination_reason == enforcer::TerminationReason::kCancelled && o.verification != "cancelled") {
    std::cerr << name << ": interrupted by a signal; sandbox killed"
              << (o.work_mode == "direct" ? "; the work dir keeps what the command wrote before (direct mode)\n"
                                           : "; nothing was committed\n");
  }
  if (o.termination_reason == enforcer::TerminationReason::kSeccompKill) {
    // A kill rule the supervisor answered is in denied_syscalls; a SIGSYS
    // death without one came from the filter itself (another architecture's
    // call, a trap rule the program did not handle) or from a filter the
    // program installed on itself: the kernel does not say which.
    bool rule_recorded = false;
    for (const auto& denied : o.denied_syscalls) rule_recorded |= denied.action == "kill";
    std::cerr << name
              << (rule_recorded ? ": killed by a seccomp kill rule\n"
                                : ": killed by SIGSYS from seccomp (a trap or kill in the filter, such as a call of "
                                  "another architecture, or a filter the program installed itself)\n");
  }
  bool direct = o.work_mode == "direct";
  // The names are the sandbox's: escaped, and not one line each without end
  // (the Outcome in --json lists them all).
  constexpr size_t kMaxFindingLines = 20;
  size_t printed = 0;
  for (const auto& f : o.breakout_findings) {
    if (++printed > kMaxFindingLines) {
      std::cerr << name << ": " << o.breakout_findings.size() - kMaxFindingLines
                << " more work dir entries like these (--json lists them all)\n";
      break;
    }
    // Staged: every finding stays out of the commit. Direct, and a
    // writable bind: the entry was already on the host, so it was removed
    // or defused, or (uninspected) left where it is.
    const bool after_the_fact = direct || !f.mount.empty();
    const char* what = !after_the_fact                                  ? "left out"
                       : f.left_in_place                                ? "NOT removed (removing it failed), left in place"
                       : enforcer::IsUninspected(f)                    ? "not inspected, left in place"
                       : f.kind == "setuid" || f.kind == "setgid"      ? "bit cleared"
                                                                       : "removed";
    const std::string where = f.mount.empty() ? "work dir" : "writable mount " + EscapeForTerminal(f.mount);
    const std::string path = f.path.empty() ? "." : EscapeForTerminal(f.path);
    std::cerr << name << ": " << where << " entry " << what << ": " << path << " (" << f.kind << ")\n";
  }
  if (!o.writable_error.empty()) {
    std::cerr << name << ": writable mounts NOT verified (" << o.writable_verification
              << "): " << EscapeForTerminal(o.writable_error) << "\n";
  }
  if (o.preexisting_entries != 0) {
    std::cerr << name << ": note: " << o.preexisting_entries
              << (o.preexisting_entries == 1 ? " entry the host already had" : " entries the host already had")
              << " (escaping links, special or set-id files; first: " << EscapeForTerminal(o.first_preexisting)
              << ") left as they were: the run did not create or change them\n";
  }
  if (!o.verification_error.empty()) {
    std::cerr << name << ": work dir NOT verified (" << o.verification
              << "): " << EscapeForTerminal(o.verification_error) << "\n";
  }
  if (o.verification == "cancelled") std::cerr << name << ": cancelled during the commit; the host work dir is unchanged\n";
  if (!o.cancelled_after_commit.empty()) {
    std::cerr << name << ": " << o.cancelled_after_commit << "\n";
  } else if (!o.cancelled_after_end.empty()) {
    std::cerr << name << ": " << o.cancelled_after_end << "\n";
  }
  if (!o.commit_warning.empty()) std::cerr << name << ": " << EscapeForTerminal(o.commit_warning) << "\n";
  if (!o.work_note.empty()) std::cerr << name << ": note: " << EscapeForTerminal(o.work_note) << "\n";
}

std::string EnvOr(const std::string& value, const char* name) {
  if (!value.empty()) return value;
  const char* env = std::getenv(name);
  return env ? env : "";
}

bool WriteAllFd(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      // A non-blocking fd (stdout inherited O_NONBLOCK through a shared open
      // file description) that is full: wait for room. Giving up here left
      // half a line written, and the next line glued to it (an MCP client's
      // framing broken).
      struct pollfd p {fd, POLLOUT, 0};
      if (poll(&p, 1, -1) < 0 && errno != EINTR) return false;
      if ((p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return false;
      continue;
    }
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

std::string Base64Encode(std::string_view bytes) {
  static const char* kTable = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    uint32_t v = (uint8_t(bytes[i]) << 16) | (uint8_t(bytes[i + 1]) << 8) | uint8_t(bytes[i + 2]);
    for (int s : {18, 12, 6, 0}) out += kTable[(v >> s) & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = uint8_t(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= uint8_t(bytes[i + 1]) << 8;
    out += kTable[(v >> 18) & 63];
    out += kTable[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kTable[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

void NdjsonStreamer::Emit(std::string_view stream, std::string_view data) {
  if (data.empty()) return;
  nlohmann::json line = {{"stream", stream}, {"seq", ++seq_}};
  if (mcp::IsValidUtf8(data)) {
    line["data"] = std::string(data);
  } else {
    line["encoding"] = "base64";
    line["data"] = Base64Encode(data);
  }
  writer_.Write(line.dump() + "\n");
}

void NdjsonStreamer::Flush() { writer_.Flush(); }

int ReportLostOutput(const std::string& command_name, const std::string& what, int error) {
  std::cerr << command_name << ": " << what << " could not be written in full"
            << (error != 0 ? std::string(" (") + std::strerror(error) + ")" : std::string()) << "; exit status "
            << kExitOutputLost << "\n";
  return kExitOutputLost;
}

void IgnoreSigpipe() {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, nullptr);
}

void NdjsonStreamer::Chunk(enforcer::OutputStream stream, std::string_view data) {
  int index = stream == enforcer::OutputStream::kStdout ? 0 : 1;
  std::string text = pending_[index];
  text.append(data);
  size_t tail = IncompleteTail(text);
  pending_[index] = text.substr(text.size() - tail);
  text.resize(text.size() - tail);
  Emit(index == 0 ? "stdout" : "stderr", text);
}

bool NdjsonStreamer::Finish(nlohmann::json outcome) {
  Emit("stdout", pending_[0]);
  Emit("stderr", pending_[1]);
  pending_[0].clear();
  pending_[1].clear();
  bool written = writer_.Flush();  // the sandbox is gone: the rest may block like any write
  int error = writer_.error();
  for (const char* stream : {"stdout", "stderr"}) {
    if (outcome.value(std::string(stream) + "_truncated", false)) {
      nlohmann::json marker = {{"stream", stream}, {"seq", ++seq_}, {"truncated", true},
                               {"total_bytes", outcome.value(std::string(stream) + "_bytes", 0)}};
      if (!WriteAllFd(fd_, marker.dump() + "\n") && written) {
        written = false;
        error = errno;
      }
    }
  }
  outcome["stream"] = "outcome";
  outcome["seq"] = ++seq_;
  if (!WriteJsonLine(fd_, outcome) && written) {
    written = false;
    error = errno;
  }
  errno = error;
  return written;
}

Result<enforcer::Outcome> LaunchPrepared(const PreparedRun& run, LaunchRequest request,
                                         const std::function<void()>& before_launch) {
  COCOON_ASSIGN_OR_RETURN(PolicyArtifacts artifacts, QuickPolicyArtifacts(run.policy, &request));
  if (before_launch) before_launch();
  request.argv = run.argv;
  request.overrides = run.policy.overrides;
  request.passed_values = run.policy.passed_values;
  return LaunchSandboxed(artifacts, std::move(request));
}

nlohmann::json RunOutcomeJson(enforcer::Outcome outcome, const QuickPolicy& policy) {
  nlohmann::json j = enforcer::OutcomeToJson(std::move(outcome));
  j["overrides"] = policy.overrides;
  j["notes"] = policy.notes;
  // Whose limits these are: a runtime preset's may be above strict's (go:
  // 1 GiB, 256 processes, 60 s) without any override.
  j["base_policy"] = {{"profile", policy.base_profile}, {"source", policy.base_source}};
  return j;
}

namespace {

// --json and --stream print the Outcome on stdout themselves.
bool StdoutCarriesOutcome(const RunOutputOptions& output) { return output.mode != RunOutputMode::kPassThrough; }

void WriteLogJson(const RunOutputOptions& output, const nlohmann::json& j) {
  if (output.log_json.empty()) return;
  Status written = output.log_json_destination ? output.log_json_destination->Write(j)
                                               : WriteLogJsonTo(output.log_json, StdoutCarriesOutcome(output), j);
  if (!written.ok()) std::cerr << output.command_name << ": " << written.message() << "\n";
}

}  // namespace

void ReportRefusal(const Status& why, const std::vector<std::string>& overrides, const RunOutputOptions& output) {
  std::cerr << output.command_name << ": " << why.message() << "\n";
  nlohmann::json refused = {{"refused", true}, {"error", why.message()}, {"overrides", overrides}};
  if (enforcer::IsRunCancelledBeforeStart(why)) refused["cancelled"] = true;  // a signal to cocoon: exit 130
  // stdout first, --log-json second: a FIFO's reader that stops reading
  // (it holds cocoon for up to its timeout) never costs the caller stdout.
  if (output.mode != RunOutputMode::kPassThrough) {
    nlohmann::json line = refused;
    // A refused stream is one line, the Outcome's, numbered like every line.
    if (output.mode == RunOutputMode::kStream) {
      line["stream"] = "outcome";
      line["seq"] = 1;
    }
    if (!WriteAllFd(STDOUT_FILENO, line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n")) {
      // Said, but the refusal's own status stands: nothing ran.
      std::cerr << output.command_name << ": the refusal (" << (output.mode == RunOutputMode::kStream ? "--stream" : "--json")
                << ") could not be written in full on stdout (" << std::strerror(errno) << ")\n";
    }
  }
  WriteLogJson(output, refused);
}

int LaunchAndReport(const PreparedRun& run, const std::string& work_dir, const std::vector<std::string>& copies,
                    enforcer::StdinMode stdin_mode, const AuditOptions& audit, const RunOutputOptions& requested) {
  enforcer::SignalGuard::HoldCancelSignalsUntilExit();
  RunOutputOptions output = requested;
  LaunchRequest request;
  request.work_dir = work_dir;
  request.copies = copies;
  request.stdin_mode = stdin_mode;
  request.signals = enforcer::SignalHandling::kCancelOnSigintSigterm;
  request.audit = audit;
  NdjsonStreamer streamer(STDOUT_FILENO);
  PassThroughWriter out(STDOUT_FILENO), err(STDERR_FILENO);  // never blocks the supervisor
  if (output.mode == RunOutputMode::kPassThrough) {
    request.output_mode = enforcer::OutputMode::kStreamOnly;
    request.on_output = [&out, &err](enforcer::OutputStream stream, std::string_view chunk) {
      (stream == enforcer::OutputStream::kStdout ? out : err).Write(chunk);
    };
  } else if (output.mode == RunOutputMode::kStream) {
    request.output_mode = enforcer::OutputMode::kStreamOnly;
    request.on_output = [&streamer](enforcer::OutputStream stream, std::string_view chunk) { streamer.Chunk(stream, chunk); };
  }
  // Refused before anything runs: a result nobody can read back is a lost run.
  if (!output.log_json.empty()) {
    auto destination = LogJsonDestination::Open(output.log_json, StdoutCarriesOutcome(output));
    if (!destination.ok()) {
      output.log_json.clear();
      ReportRefusal(destination.status(), run.policy.overrides, output);
      return 1;
    }
    output.log_json_destination = *std::move(destination);
  }
  // The JSON modes carry the notes (a clamped limit, a --ro dir the sandbox
  // user cannot read); in pass-through stderr is the only place a person
  // sees them: printed by the process that launches (LaunchPrepared).
  auto print_notes = [&] {
    if (output.mode != RunOutputMode::kPassThrough) return;
    for (const std::string& note : run.policy.notes) std::cerr << output.command_name << ": note: " << note << "\n";
  };
  auto outcome = LaunchPrepared(run, std::move(request), print_notes);
  // Recorded: from here a signal ends cocoon as usual. One that came while
  // the run was recorded is said in the Outcome (exit 130).
  const int late_cancel = enforcer::SignalGuard::ReleaseCancelSignals();
  if (outcome.ok()) enforcer::RecordCancelAfterTheRecord(late_cancel, *outcome);
  const bool out_written = out.Flush(), err_written = err.Flush();
  if (!outcome.ok()) {
    streamer.Flush();
    ReportRefusal(outcome.status(), run.policy.overrides, output);
    return RefusalExitCode(outcome.status());
  }
  int status = enforcer::ShellExitStatus(*outcome);
  // The command's output that did not reach the caller: said on stderr,
  // and the exit status says it too (docs/cli.md).
  if (output.mode == RunOutputMode::kPassThrough) {
    PrintOutcomeNotes(*outcome, output.command_name);
    if (!out_written) status = ReportLostOutput(output.command_name, "the command's stdout", out.error());
    if (!err_written) status = ReportLostOutput(output.command_name, "the command's stderr", err.error());
  }
  if (output.mode == RunOutputMode::kPassThrough && output.log_json.empty()) return status;
  // From here the Outcome is only serialised: its captured output is moved
  // into the JSON and streamed out (json_fd_writer.h), never copied whole.
  // stdout first, as for a refusal. A stream's Outcome carries no captured
  // output (it went out as chunks), so the copy kept for the log is small.
  nlohmann::json j = RunOutcomeJson(std::move(*outcome), run.policy);
  if (output.mode == RunOutputMode::kJson && !WriteJsonLine(STDOUT_FILENO, j, 2)) {
    status = ReportLostOutput(output.command_name, "the Outcome (--json) on stdout", errno);
  } else if (output.mode == RunOutputMode::kStream) {
    nlohmann::json streamed = output.log_json.empty() ? std::move(j) : j;
    if (!streamer.Finish(std::move(streamed))) {
      status = ReportLostOutput(output.command_name, "the stream (--stream) on stdout", errno);
    }
  }
  WriteLogJson(output, j);
  return status;
}

}  // namespace cocoon::cli
