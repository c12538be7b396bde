// `cocoon mcp [--policy FILE] [--max-concurrent N]`: the MCP server on stdio.
// stdout carries only protocol messages; logs go to stderr (main() already
// points the log there: compiler/common/log.h). The protocol lives in cli/mcp/; this
// file supplies the real Executor, which runs every tool call through
// agent_run_util.h + launch_util.h: the path `cocoon run` uses, with the
// server's policy as a ceiling the caller can only tighten.
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>


#include "audit/events.h"
#include "audit/keys.h"
#include "cli/agent_run_util.h"
#include "cli/audit_log_util.h"
#include "cli/command_registry.h"
#include "cli/mcp/server.h"
#include "cli/run_output_util.h"
#include "cli/runtime_util.h"
#include "cocoon_version.h"
#include "compiler/common/log.h"
#include "compiler/frontend/frontend.h"
#include "enforcer/spare_child.h"
#include "enforcer/workdir/scratch_dir.h"

namespace cocoon::cli {
namespace {

namespace fs = std::filesystem;

struct McpFlags {
  std::string policy;
  std::string skills_dir;
  std::string audit_log, audit_key;
  size_t max_concurrent = 4;
  size_t max_message_bytes = 8 << 20;
};

mcp::ExecStatus StatusOf(const enforcer::Outcome& o) {
  using enforcer::TerminationReason;
  switch (o.termination_reason) {
    case TerminationReason::kTimeout: return mcp::ExecStatus::kTimeout;
    case TerminationReason::kOomKilled: return mcp::ExecStatus::kOomKilled;
    case TerminationReason::kSeccompKill: return mcp::ExecStatus::kPolicyKill;
    case TerminationReason::kSignaled: return mcp::ExecStatus::kSignaled;
    case TerminationReason::kCancelled: return mcp::ExecStatus::kCancelled;
    case TerminationReason::kFailed: return mcp::ExecStatus::kFailed;
    case TerminationReason::kExited: break;
  }
  if (o.timed_out) return mcp::ExecStatus::kTimeout;
  // The command exited on its own, and the memory cgroup counted an OOM
  // kill: a child's (the command's own is kOomKilled above). It used to be
  // reported as the command's.
  if (o.oom_killed) return mcp::ExecStatus::kChildOomKilled;
  // Links or devices left in the work dir are a policy violation even when
  // the command itself exited cleanly (and whatever happened to the commit).
  if (!o.breakout_findings.empty()) return mcp::ExecStatus::kPolicyKill;
  // The scan or the commit failed (breakout.error says why): the command's
  // files were not delivered.
  if (!o.verification_error.empty()) return mcp::ExecStatus::kWorkDirUnverified;
  if (o.verification == "cancelled") return mcp::ExecStatus::kCancelled;
  if (!o.breakout_clean) return mcp::ExecStatus::kPolicyKill;
  return mcp::ExecStatus::kCompleted;
}

// A per-call host work dir (staged into the sandbox, removed afterwards;
// one a SIGKILLed server left is swept by a later call, scratch_dir.h).
Result<std::unique_ptr<enforcer::ScratchDir>> MakeCallWorkDir() {
  COCOON_ASSIGN_OR_RETURN(std::string base, QuickDir());
  return enforcer::ScratchDir::Create(base, "mcp-work-");
}

class SandboxExecutor : public mcp::Executor {
 public:
  explicit SandboxExecutor(McpFlags flags) : flags_(std::move(flags)) {
    // The first call's likely shape: network off (strict and every shipped
    // runtime), a work dir, no stdin or signals of its own. A call of
    // another shape does not use it (and it goes after a minute unused).
    if (auto options = enforcer::StartedChild::OptionsBeforePlan(ir::NetworkMode::kOff, enforcer::StdinMode::kNull,
                                                                 enforcer::SignalHandling::kNone, true)) {
      spare_children_.Expect(*options);
    }
  }

  Result<mcp::ExecResult> Execute(const mcp::ExecRequest& request, const mcp::ExecHooks& hooks) override {
    COCOON_ASSIGN_OR_RETURN(auto work, MakeCallWorkDir());
    COCOON_ASSIGN_OR_RETURN(RunSpec spec, SpecFor(request, work->path()));
    COCOON_ASSIGN_OR_RETURN(PreparedRun run, PrepareRun(std::move(spec)));
    LaunchRequest launch;
    launch.work_dir = work->path();
    // The dir is removed after the call: its results are verified (a
    // breakout still makes the call an error), not copied back to be deleted.
    launch.discard_work_dir = true;
    launch.work_dir_is_ours = true;
    if (!request.stdin_data.empty()) {
      // Through a pipe from memory: never a file in the host's cache.
      launch.stdin_mode = enforcer::StdinMode::kData;
      launch.stdin_data = request.stdin_data;
    }
    launch.output_mode = enforcer::OutputMode::kCapture;
    launch.signals = enforcer::SignalHandling::kNone;  // the server owns SIGINT/SIGTERM
    launch.audit = {flags_.audit_log, flags_.audit_key};
    launch.spare_children = &spare_children_;
    launch.mcp_call = McpCallInfoOf({request.tool, request.request_id, request.client_name});
    if (hooks.on_output) {
      launch.on_output = [&hooks](enforcer::OutputStream stream, std::string_view chunk) {
        hooks.on_output(stream == enforcer::OutputStream::kStdout ? mcp::OutputStream::kStdout
                                                                  : mcp::OutputStream::kStderr,
                        chunk);
      };
    }
    auto cancel = std::make_shared<enforcer::CancelHandle>();
    launch.cancel = cancel;
    if (hooks.cancel) hooks.cancel->OnCancel([cancel] { cancel->Cancel(); });
    auto audit_reference = std::make_shared<AuditReference>();
    launch.audit_reference = audit_reference;
    auto outcome = LaunchPrepared(run, std::move(launch));
    work.reset();  // removed first, so that the spare below does not compete with its removal
    // The next call's sandbox starts its namespaces now, between calls.
    spare_children_.Replenish();
    if (hooks.cancel) hooks.cancel->OnCancel(nullptr);
    if (!outcome.ok()) return outcome.status();
    mcp::ExecResult result;
    result.status = StatusOf(*outcome);
    result.exit_code = outcome->exit_code;
    if (!outcome->audit_error.empty()) {
      result.audit_note = "the run's events after its launch could not be written: " + outcome->audit_error;
    }
    result.outcome = RunOutcomeJson(std::move(*outcome), run.policy);
    // LaunchSandboxed wrote the launch event before the sandbox started (and
    // the exit events after); the reference ties this result to that line.
    result.audit_sequence = audit_reference->sequence;
    result.audit_event_id = audit_reference->event_id;
    if (flags_.audit_log.empty()) {
      result.audit_note = "no audit log configured (cocoon mcp --audit-log FILE --audit-key KEY)";
    }
    return result;
  }

  nlohmann::json InspectRuntimes() override { return RuntimesToJson(cli::InspectRuntimes(true)); }

  Result<mcp::AuditRef> AuditRefusedCall(const mcp::CallIdentity& call, std::string_view kind,
                                         const Status& why) override {
    return AppendToolCall(call, true, kind, why.message());
  }

  Result<mcp::AuditRef> AuditToolCall(const mcp::CallIdentity& call, std::string_view detail) override {
    return AppendToolCall(call, false, "", detail);
  }

  std::vector<std::string> Languages() override {
    std::vector<std::string> names;
    for (const auto& name : RuntimePresetNames()) {
      if (name != "python-skill") names.push_back(name);  // execute_skill's preset
    }
    return names;
  }

  std::vector<std::string> Policies() override {
    if (flags_.policy.empty()) return {};
    Diagnostics diagnostics;
    return frontend::ListProfiles(flags_.policy, {}, diagnostics);
  }

 private:
  // One signed event in the configured log (none configured: an empty
  // reference, as for runs). The log is opened per event, like a launch's:
  // appends from concurrent calls and processes are serialised by the log.
  Result<mcp::AuditRef> AppendToolCall(const mcp::CallIdentity& call, bool refused, std::string_view kind,
                                       std::string_view detail) {
    if (flags_.audit_log.empty()) return mcp::AuditRef{};
    auto log = OpenRequiredAuditLog({flags_.audit_log, flags_.audit_key});
    if (!log.ok()) return log.status().WithContext("audit log (required)");
    audit::ToolCallInfo info;
    info.call = McpCallInfoOf(call);
    info.refused = refused;
    info.kind = std::string(kind);
    info.detail = std::string(detail);
    info.server_pid = static_cast<int>(getpid());
    auto written = (*log)->Append(audit::ToolCall(info));
    Status closed = (*log)->Close();
    if (!written.ok()) return written.status().WithContext("writing the tool call's audit event");
    // The event is on disk, signed (Append); a failed close loses at most the
    // seal, which `audit verify` reports. The reference stays true.
    if (!closed.ok()) log::Error("audit: closing the log after a tool call's event: " + closed.ToString());
    return mcp::AuditRef{written->sequence, written->event_id};
  }

  static audit::McpCallInfo McpCallInfoOf(const mcp::CallIdentity& call) {
    return {std::string(call.tool), std::string(call.request_id), std::string(call.client_name)};
  }

  Result<RunSpec> SpecFor(const mcp::ExecRequest& request, const std::string& work) {
    RunSpec spec;
    QuickPolicyOptions& p = spec.policy;
    p.policy_file = flags_.policy;
    p.profile = request.policy;
    p.openings = OpeningPolicy::kClampToBase;  // the server's policy is the ceiling
    p.cwd_mount = CwdMount::kNone;
    p.has_work_dir = true;
    p.timeout_ms = request.timeout_ms;
    p.memory_bytes = request.memory_bytes;
    for (const auto& [path, content] : request.files) {
      fs::path target = fs::path(work) / path;
      std::error_code ec;
      fs::create_directories(target.parent_path(), ec);
      if (ec) return InvalidArgumentError("staging '" + path + "': " + ec.message() + " (do two of the files' paths clash?)");
      std::ofstream out(target, std::ios::binary);
      out << content;
      // Closed before it is checked: a small file sits in the stream's buffer
      // until then, and a full disk would otherwise go unnoticed, the sandbox
      // running on a truncated file.
      out.close();
      if (!out) return ErrnoError("staging " + path);
    }
    if (!request.workdir.empty()) {
      std::error_code ec;
      fs::create_directories(fs::path(work) / request.workdir, ec);
      p.cwd_inside = "/work/" + request.workdir;
    }
    switch (request.kind) {
      case mcp::ExecKind::kCode:
        p.runtime = request.language;
        p.code = request.code;
        break;
      case mcp::ExecKind::kSkill:
        p.runtime = "python-skill";
        p.code = request.code;
        COCOON_RETURN_IF_ERROR(BindSkill(request.skill, p));
        break;
      case mcp::ExecKind::kCommand:
        spec.command = request.argv;
        break;
    }
    return spec;
  }

  // A skill is a directory inside --skills-dir, bound read-only at /skill.
  // Its real path must stay inside the skills dir: a symlink there to
  // /proc or /etc would otherwise bind that (and the checks --ro gets apply).
  Status BindSkill(const std::string& skill, QuickPolicyOptions& p) {
    if (flags_.skills_dir.empty()) return Status::Ok();  // the name is only recorded
    COCOON_ASSIGN_OR_RETURN(std::string root, CanonicalHostPath(flags_.skills_dir, "--skills-dir"));
    auto dir = CanonicalHostPath((fs::path(root) / skill).string(), "skill");
    if (!dir.ok()) {
      if (dir.status().code() == ErrorCode::kNotFound) {
        return InvalidArgumentError("unknown skill '" + skill + "' (no directory " + root + "/" + skill + ")");
      }
      return dir.status();
    }
    if (dir->rfind(root + "/", 0) != 0) {
      return InvalidArgumentError("skill '" + skill + "' leads to " + *dir + ", outside the skills dir " + root +
                                  "; a skill must be a directory inside it");
    }
    std::error_code ec;
    if (!fs::is_directory(*dir, ec)) return InvalidArgumentError("skill '" + skill + "' is not a directory");
    p.readonly_binds.emplace_back(*dir, "/skill");
    return Status::Ok();
  }

  McpFlags flags_;
  // Every call's sandbox is the same shape but for its policy's network
  // mode: its first process is started ahead of the call (spare_child.h).
  // Outlives every call: the server answers them all before it returns.
  enforcer::SpareChildKeeper spare_children_;
};

// SIGINT/SIGTERM/SIGHUP are blocked in every thread and collected here, so a
// signal cancels the sandboxes in flight instead of killing the server
// halfway through a response.
int StartSignalThread() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, sig);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  int stop = eventfd(0, EFD_CLOEXEC);
  std::thread([set, stop] {
    int sig = 0;
    sigwait(&set, &sig);
    log::Warn("cocoon mcp: signal " + std::to_string(sig) + ": cancelling calls in flight and exiting");
    uint64_t one = 1;
    if (write(stop, &one, sizeof(one)) < 0) _exit(1);
    // A second signal while the first is being handled: exit now (the
    // sandboxes die with us: their init has a parent-death signal).
    sigwait(&set, &sig);
    log::Warn("cocoon mcp: signal " + std::to_string(sig) + " again: exiting without waiting");
    _exit(128 + sig);
  }).detach();
  return stop;
}

int RunMcp(const McpFlags& flags) {
  // A client that goes away mid-response must not kill us with SIGPIPE.
  IgnoreSigpipe();
  if (flags.audit_log == "-") {
    // stdout carries the protocol: audit lines there would corrupt it (and
    // tear against the responses the writer thread sends).
    std::cerr << "cocoon mcp: --audit-log - would write audit events into the protocol stream on stdout; "
                 "give a file (or a FIFO a log shipper reads)\n";
    return 2;
  }
  // A required audit trail that cannot be written refuses every call: say
  // so when the server starts, not at the first call an agent makes.
  if (flags.audit_log.empty() != flags.audit_key.empty()) {
    std::cerr << "cocoon mcp: --audit-log and --audit-key go together\n";
    return 2;
  }
  if (!flags.audit_key.empty()) {
    auto key = audit::SigningKey::LoadPem(flags.audit_key);
    if (!key.ok()) {
      std::cerr << "cocoon mcp: audit key " << flags.audit_key << ": " << key.status().message()
                << " (create one with `cocoon audit keygen --out FILE`)\n";
      return 1;
    }
  }
  if (!flags.policy.empty()) {
    QuickPolicyOptions probe;
    probe.policy_file = flags.policy;
    auto base = BuildQuickPolicy(probe);
    if (!base.ok()) {
      std::cerr << "cocoon mcp: " << base.status().message() << "\n";
      return 1;
    }
  }
  int stop = StartSignalThread();
  SandboxExecutor executor(flags);
  mcp::ServerOptions options;
  options.max_concurrent = flags.max_concurrent;
  options.max_message_bytes = flags.max_message_bytes;
  options.server_version = COCOON_VERSION_STRING;
  options.instructions =
      "Runs code and commands in Cocoon sandboxes (no network, read-only system, time and memory limits"
      " set by the server's policy). Each call gets a fresh sandbox and an empty work dir; pass input files"
      " with `files`. Results are the run's Outcome, with an audit reference.";
  // The line, then its newline: `line + "\n"` would copy an answer of
  // megabytes once more. This writer is the only one (outgoing_lines.h).
  // A write that fails (the client closed its end of stdout) means no
  // answer can reach the client any more: the server stops as for a
  // signal (the calls in flight are cancelled, their sandboxes killed and
  // verified, nothing committed), and exits 125 saying so. Before, it went
  // on running every call it read, answering nobody, and exited 0.
  auto lost_errno = std::make_shared<std::atomic<int>>(-1);
  mcp::Server server(executor, [lost_errno, stop](const std::string& line) {
    if (lost_errno->load() >= 0) return;
    if (WriteAllFd(STDOUT_FILENO, line) && WriteAllFd(STDOUT_FILENO, "\n")) return;
    lost_errno->store(errno);
    uint64_t one = 1;
    if (write(stop, &one, sizeof(one)) < 0) _exit(kExitOutputLost);
  }, options);
  log::Info("cocoon mcp: serving on stdio (policy: " + (flags.policy.empty() ? std::string("strict") : flags.policy) + ")");
  Status ended = server.Serve(STDIN_FILENO, stop);
  if (lost_errno->load() >= 0) {
    return ReportLostOutput("cocoon mcp", "an answer to the client on stdout (the calls in flight were cancelled)",
                            lost_errno->load());
  }
  if (!ended.ok() && ended.code() != ErrorCode::kUnavailable) {
    std::cerr << "cocoon mcp: " << ended.message() << "\n";
    return 1;
  }
  return 0;
}

void SetUpMcp(CLI::App& app, CommandResult& result) {
  auto flags = std::make_shared<McpFlags>();
  CLI::App* cmd = app.add_subcommand("mcp", "Serve the Model Context Protocol on stdio (tools run in sandboxes)");
  cmd->add_option("--policy", flags->policy,
                  "Policy file whose profile is the ceiling for every call (default: strict for run_in_sandbox, "
                  "the runtime's preset for execute_code and execute_skill; see below)");
  cmd->add_option("--max-concurrent", flags->max_concurrent, "Sandboxes running at once; later calls wait")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--skills-dir", flags->skills_dir, "Directory of skills; execute_skill mounts <dir>/<skill> at /skill");
  cmd->add_option("--max-message-bytes", flags->max_message_bytes, "Largest JSON-RPC message accepted");
  cmd->add_option("--audit-log", flags->audit_log, "Append signed audit events for every call to FILE");
  cmd->add_option("--audit-key", flags->audit_key, "Ed25519 key for the audit log");
  // What each preset raises is in policies/runtimes/*.cocoon; the figures
  // here are checked against them (tests/cli, CocoonMcp.*Ceiling*).
  cmd->footer(
      "Without --policy, execute_code and execute_skill run under their runtime's\n"
      "preset (policies/runtimes/NAME.cocoon), which extends strict with what its\n"
      "toolchain needs: go and rust 1 GiB, 256 processes, 60 s; java and pwsh\n"
      "1 GiB, 256 processes, 30 s; python-skill, bun and deno 512 MiB, 64 processes,\n"
      "30 s; the others strict's 128 MiB, 32 processes, 5 s. With --policy, its\n"
      "limits apply to every runtime. Each result's base_policy names the profile.\n"
      "Tools: execute_code, execute_skill, inspect_runtimes, run_in_sandbox.\n"
      "Protocol: 2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25 (initialize) and\n"
      "2026-07-28 (per-request _meta, server/discover). See docs/agents.md.");
  cmd->callback([flags, &result] {
    McpFlags resolved = *flags;
    resolved.audit_log = EnvOr(resolved.audit_log, "COCOON_AUDIT_LOG");
    resolved.audit_key = EnvOr(resolved.audit_key, "COCOON_AUDIT_KEY");
    result.exit_code = RunMcp(resolved);
  });
}

}  // namespace

COCOON_REGISTER_COMMAND(mcp, SetUpMcp);

}  // namespace cocoon::cli
