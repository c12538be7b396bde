// `cocoon enforce POLICY [--profile NAME] [--work DIR] [--copy PATH]... [--json]
//                 [--audit-log FILE --audit-key KEY] -- CMD [ARG...]`
// Runs CMD inside the Linux sandbox the policy describes (issue 4).
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>

#include "cli/pass_through.h"
#include "cli/command_line.h"
#include "cli/command_registry.h"
#include "cli/launch_util.h"
#include "cli/run_output_util.h"
#include "compiler/common/json_fd_writer.h"
#include "enforcer/outcome.h"
#include "enforcer/started_child.h"

namespace cocoon::cli {
namespace {

struct EnforceOptions {
  std::string policy;
  std::string profile;
  std::string work_dir;
  std::vector<std::string> copies;
  bool json = false;
  std::string audit_log;
  std::string audit_key;
  std::vector<std::string> command;
};

int RunEnforce(const EnforceOptions& options) {
  IgnoreSigpipe();  // a closed stdout is reported, not the end of cocoon (run_output_util.h)
  // A refusal says why on stderr and, with --json, as the one JSON object
  // on stdout that a caller parsing it always gets (as `cocoon run` does).
  RunOutputOptions refusal_output;
  refusal_output.mode = options.json ? RunOutputMode::kJson : RunOutputMode::kPassThrough;
  refusal_output.command_name = "cocoon enforce";
  auto usage = [&](const std::string& why) {
    ReportRefusal(InvalidArgumentError(why), {}, refusal_output);
    // With --json the refusal is on stdout: 1, as every refusal there
    // (docs/agents.md); 2 means nothing was printed there.
    return options.json ? kExitRefused : kExitUsage;
  };
  if (options.command.empty()) {
    return usage("missing command; usage: cocoon enforce POLICY [options] -- CMD [ARG...]");
  }
  // The environment's audit trail, as `run`, `pipeline` and `mcp` take it: a
  // deployment that sets it must not get unaudited runs from `enforce`.
  const std::string audit_log = EnvOr(options.audit_log, "COCOON_AUDIT_LOG");
  const std::string audit_key = EnvOr(options.audit_key, "COCOON_AUDIT_KEY");
  if (audit_log.empty() != audit_key.empty()) return usage("--audit-log and --audit-key go together");
  if (!options.copies.empty() && options.work_dir.empty()) {
    return usage("--copy puts files into the work dir: give one with --work DIR");
  }
  enforcer::SignalGuard::HoldCancelSignalsUntilExit();  // before the child that starts while the plan is parsed
  LaunchRequest request;
  request.argv = options.command;
  request.work_dir = options.work_dir;
  request.copies = options.copies;
  request.stdin_mode = enforcer::StdinMode::kInherit;
  request.signals = enforcer::SignalHandling::kCancelOnSigintSigterm;
  request.audit = {audit_log, audit_key};
  // Pass the command's output through as it comes (up to the policy's cap),
  // never blocking the supervisor (pass_through.h).
  PassThroughWriter out(STDOUT_FILENO), err(STDERR_FILENO);
  if (!options.json) {
    request.output_mode = enforcer::OutputMode::kStreamOnly;
    request.on_output = [&out, &err](enforcer::OutputStream stream, std::string_view chunk) {
      (stream == enforcer::OutputStream::kStdout ? out : err).Write(chunk);
    };
  }
  // Passing the request lets the sandbox's first process start while the
  // plan is parsed (launch_util.h).
  auto artifacts = LoadPolicyArtifacts(options.policy, options.profile, &request);
  if (!artifacts.ok()) {
    ReportRefusal(artifacts.status(), {}, refusal_output);
    return kExitRefused;
  }
  auto outcome = LaunchSandboxed(*artifacts, std::move(request));
  // Recorded: from here a signal ends cocoon as usual. One that came while
  // the run was recorded is said in the Outcome (exit 130).
  const int late_cancel = enforcer::SignalGuard::ReleaseCancelSignals();
  if (outcome.ok()) enforcer::RecordCancelAfterTheRecord(late_cancel, *outcome);
  const bool out_written = out.Flush(), err_written = err.Flush();
  if (!outcome.ok()) {
    ReportRefusal(outcome.status(), {}, refusal_output);
    return RefusalExitCode(outcome.status());
  }
  if (options.json) {
    // Streamed, and the captured output moved rather than copied: the
    // supervisor's memory stays within the output cap (json_fd_writer.h).
    int status = enforcer::ShellExitStatus(*outcome);
    if (!WriteJsonLine(STDOUT_FILENO, enforcer::OutcomeToJson(std::move(*outcome)), 2)) {
      return ReportLostOutput("cocoon enforce", "the Outcome (--json) on stdout", errno);
    }
    return status;
  }
  PrintOutcomeNotes(*outcome, "cocoon enforce");
  // Output the caller never got: said on stderr and in the exit status.
  if (!out_written) return ReportLostOutput("cocoon enforce", "the command's stdout", out.error());
  if (!err_written) return ReportLostOutput("cocoon enforce", "the command's stderr", err.error());
  return enforcer::ShellExitStatus(*outcome);
}

void SetUpEnforceCommand(CLI::App& app, CommandResult& result) {
  auto options = std::make_shared<EnforceOptions>();
  CLI::App* cmd = app.add_subcommand("enforce", "Run a command inside the Linux sandbox a policy describes");
  cmd->footer(
      "POLICY is a .cocoon file (compiled on first use, then cached) or a directory\n"
      "written by `cocoon compile` (its manifest hashes are checked).\n\n"
      "Without --json the command's stdout/stderr pass through and cocoon exits\n"
      "with the command's status (128+N when killed by signal N, 124 on timeout).\n"
      "A refused run exits 1 (127/126 when the command is missing/not executable).\n"
      "A run cancelled before its command started (a signal while the policy\n"
      "loaded or the work dir was copied in) exits 130, and with --json prints\n"
      "`{\"refused\": true, \"cancelled\": true, \"error\": \"run cancelled before start\"}`.\n"
      "125: the command ran, but its work dir or a writable mount could not be\n"
      "verified (nothing committed; in direct mode or a writable mount, entries\n"
      "left uninspected), or cocoon's supervision of it failed (the sandbox was\n"
      "killed, then verified: supervisor_error); the Outcome says why. Also 125:\n"
      "the Outcome or the command's output could not be written in full (a full\n"
      "disk, a closed pipe); stderr says so. A work dir or writable mount that\n"
      "holds the policy or what it imports is refused (the next run would read\n"
      "what the sandbox left there); so is a --work or --copy that is or holds\n"
      "your home, a credential store (~/.ssh, ~/.aws...), Cocoon's state dir, or\n"
      "a path the policy hides.\n\n"
      "Examples:\n"
      "  cocoon enforce policies/strict.cocoon -- /bin/sh -c 'id; ls /'\n"
      "  cocoon enforce policies/strict.cocoon --work ./out --json -- python3 job.py");
  cmd->add_option("POLICY", options->policy, "Policy file or compiled directory")->required();
  cmd->add_option("COMMAND", options->command, "Command and arguments, after --");
  cmd->add_option("--profile", options->profile, "Profile to use when the file has several (a compiled directory: its own)")
      ->check(NonEmptyValue());
  cmd->add_option("--work", options->work_dir, "Host work dir (staged; verified results are committed back)")
      ->check(NonEmptyValue());
  cmd->add_option("--copy", options->copies, "Copy a host file into the work dir (repeatable; needs --work)")
      ->check(NonEmptyValue());
  cmd->add_flag("--json", options->json, "Print one JSON Outcome instead of passing output through");
  cmd->add_option("--audit-log", options->audit_log, "Append signed audit events to FILE (default: $COCOON_AUDIT_LOG)")
      ->check(NonEmptyValue());
  cmd->add_option("--audit-key", options->audit_key, "Ed25519 private key for the audit log (default: $COCOON_AUDIT_KEY)")
      ->check(NonEmptyValue());
  cmd->callback([options, &result] {
    // The command comes only after `--` (command_line.h): words before it
    // that are not options would be read with cocoon's options mixed in.
    if (!options->command.empty()) {
      std::fprintf(stderr, "cocoon enforce: put the command after `--`: cocoon enforce POLICY [OPTIONS] -- %s ...\n",
                   options->command.front().c_str());
      result.exit_code = 2;
      return;
    }
    if (const auto* command = CommandAfterDoubleDash()) options->command = *command;
    result.exit_code = RunEnforce(*options);
  });
}

}  // namespace

COCOON_REGISTER_COMMAND(enforce, SetUpEnforceCommand);

}  // namespace cocoon::cli
