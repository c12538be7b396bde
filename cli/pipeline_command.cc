// `cocoon pipeline -s "python:CODE" -s "bash:CODE" ... [--json] [--keep-going]`:
// steps run in order in one shared work dir (files one step writes are read
// by the next: each step's staged work dir is verified and committed before
// the next starts), each in its own fresh sandbox built the way `cocoon run`
// builds one. The run stops at the first failing step unless --keep-going.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/pass_through.h"
#include "cli/agent_run_util.h"
#include "cli/command_registry.h"
#include "cli/run_output_util.h"
#include "cli/runtime_util.h"
#include "compiler/common/json_fd_writer.h"
#include "enforcer/started_child.h"
#include "enforcer/workdir/scratch_dir.h"

namespace cocoon::cli {
namespace {

namespace fs = std::filesystem;

struct PipelineFlags {
  std::vector<std::string> steps;
  std::string policy, work, audit_log, audit_key, mem;
  double timeout_secs = 0;
  bool json = false, keep_going = false;
};

struct Step {
  std::string runtime;
  std::string code;
};

Result<std::vector<Step>> ParseSteps(const std::vector<std::string>& specs) {
  std::vector<Step> steps;
  for (const std::string& spec : specs) {
    size_t colon = spec.find(':');
    if (colon == std::string::npos || colon == 0) {
      return InvalidArgumentError("step '" + spec + "': expected RUNTIME:CODE, e.g. \"python:print(1)\"");
    }
    std::string runtime = spec.substr(0, colon);
    // Every name is checked before the first step runs: a typo in step 3
    // must not leave steps 1 and 2's files committed to --work.
    if (!RuntimePresetPath(runtime)) {
      std::string names;
      for (const auto& n : RuntimePresetNames()) names += (names.empty() ? "" : ", ") + n;
      return InvalidArgumentError("step " + std::to_string(steps.size() + 1) + ": unknown runtime '" + runtime +
                                  "'; presets: " + names);
    }
    steps.push_back({std::move(runtime), spec.substr(colon + 1)});
  }
  if (steps.empty()) return InvalidArgumentError("no steps: give -s RUNTIME:CODE at least once");
  return steps;
}

// The shared work dir: --work, or a private temporary one removed at the end
// (or, if cocoon is SIGKILLed, by a later run: scratch_dir.h).
class SharedWorkDir {
 public:
  static Result<std::unique_ptr<SharedWorkDir>> Open(const std::string& given) {
    if (!given.empty()) return std::unique_ptr<SharedWorkDir>(new SharedWorkDir(given, nullptr));
    COCOON_ASSIGN_OR_RETURN(std::string base, QuickDir());
    COCOON_ASSIGN_OR_RETURN(auto scratch, enforcer::ScratchDir::Create(base, "pipeline-"));
    std::string path = scratch->path();
    return std::unique_ptr<SharedWorkDir>(new SharedWorkDir(std::move(path), std::move(scratch)));
  }
  const std::string& path() const { return path_; }
  bool ours() const { return scratch_ != nullptr; }  // made here, inside the cache; removed at the end

 private:
  SharedWorkDir(std::string path, std::unique_ptr<enforcer::ScratchDir> scratch)
      : path_(std::move(path)), scratch_(std::move(scratch)) {}
  std::string path_;
  std::unique_ptr<enforcer::ScratchDir> scratch_;
};

// memory_bytes: --mem, parsed once by RunPipeline. *cancelled: cocoon
// itself was interrupted (SIGINT/SIGTERM) during the step; the pipeline then
// stops whatever --keep-going says.
// Every step's run is prepared (its runtime found, its policy built) before
// the first one starts: a runtime missing from this host in step 3 must not
// leave steps 1 and 2's files committed to --work.
Result<PreparedRun> PrepareStep(const PipelineFlags& flags, std::optional<uint64_t> memory_bytes, const Step& step) {
  RunSpec spec;
  spec.policy.policy_file = flags.policy;
  spec.policy.runtime = step.runtime;
  spec.policy.code = step.code;
  spec.policy.has_work_dir = true;
  if (flags.timeout_secs > 0) spec.policy.timeout_ms = static_cast<uint64_t>(flags.timeout_secs * 1000);
  spec.policy.memory_bytes = memory_bytes;
  return PrepareRun(std::move(spec));
}

// What a step handed on to the steps after it through the shared work dir.
struct HandedOn {
  bool committed = false;   // its work reached the shared dir (staged: committed; direct: written there)
  bool direct = false;      // the step wrote the shared dir itself (direct work mode)
  size_t left_out = 0;      // entries breakout verification kept out of it (direct: removed from it)
};

// How many of the step's entries the later steps do not get: staged, every
// finding in the work dir (each was left out of the commit); direct, only
// those removed from it. A direct step's set-id file whose bit was cleared,
// and an entry that could not be inspected or removed (the run is then
// unverified: 125), are still in the shared dir. A writable mount's
// findings are not in the shared dir at all.
size_t EntriesNotHandedOn(const enforcer::Outcome& outcome) {
  const bool direct = outcome.work_mode == "direct";
  size_t count = 0;
  for (const auto& finding : outcome.breakout_findings) {
    if (!finding.mount.empty()) continue;
    if (direct && (finding.left_in_place || enforcer::IsUninspected(finding) || finding.kind == "setuid" ||
                   finding.kind == "setgid")) {
      continue;
    }
    ++count;
  }
  return count;
}

// *output_lost is set when the step's output, passed through, could not be
// written in full (said on stderr).
nlohmann::json RunStep(const PipelineFlags& flags, PreparedRun prepared, const Step& step, size_t index,
                       const SharedWorkDir& work, int* exit_status, bool* cancelled, bool* output_lost,
                       HandedOn* handed_on) {
  nlohmann::json result = {{"step", index + 1}, {"runtime", step.runtime}};
  // A host dir the step writes back to, as `cocoon run --work` records it.
  if (!work.ours()) prepared.policy.overrides.push_back("workdir: " + ResolvedHostPath(work.path()) + " (--work, committed back)");
  LaunchRequest request;
  request.work_dir = work.path();
  request.work_dir_is_ours = work.ours();
  request.signals = enforcer::SignalHandling::kCancelOnSigintSigterm;
  request.audit = {EnvOr(flags.audit_log, "COCOON_AUDIT_LOG"), EnvOr(flags.audit_key, "COCOON_AUDIT_KEY")};
  PassThroughWriter out(STDOUT_FILENO), err(STDERR_FILENO);  // never blocks the supervisor
  if (!flags.json) {
    request.output_mode = enforcer::OutputMode::kStreamOnly;
    request.on_output = [&out, &err](enforcer::OutputStream stream, std::string_view chunk) {
      (stream == enforcer::OutputStream::kStdout ? out : err).Write(chunk);
    };
  }
  auto outcome = LaunchPrepared(prepared, std::move(request));
  const std::string name = "cocoon pipeline: step " + std::to_string(index + 1);
  if (!out.Flush()) {
    ReportLostOutput(name, "the step's stdout", out.error());
    *output_lost = true;
  }
  if (!err.Flush()) {
    ReportLostOutput(name, "the step's stderr", err.error());
    *output_lost = true;
  }
  if (!outcome.ok()) {
    *exit_status = RefusalExitCode(outcome.status());
    *cancelled = enforcer::IsRunCancelledBeforeStart(outcome.status());
    result["error"] = outcome.status().message();
    return result;
  }
  *exit_status = enforcer::ShellExitStatus(*outcome);
  *cancelled = outcome->termination_reason == enforcer::TerminationReason::kCancelled ||
               outcome->verification == "cancelled" || !outcome->cancelled_after_end.empty();
  // Without --json the step's notes (truncation, timeout, work dir entries
  // left out, an unverified work dir) go to stderr as `cocoon run` prints them.
  if (!flags.json) PrintOutcomeNotes(*outcome, name);
  handed_on->committed = outcome->committed || outcome->work_mode == "direct";
  handed_on->direct = outcome->work_mode == "direct";
  handed_on->left_out = EntriesNotHandedOn(*outcome);
  result["outcome"] = RunOutcomeJson(std::move(*outcome), prepared.policy);
  return result;
}

// Parses --steps and --mem and prepares every step's run, so that nothing
// runs unless every step can. Returns 0, or the exit status after saying why
// on stderr.
int PrepareSteps(const PipelineFlags& flags, std::vector<Step>* steps, std::vector<PreparedRun>* prepared) {
  if (!std::isfinite(flags.timeout_secs)) {  // NaN passes CLI11's range check
    std::cerr << "cocoon pipeline: --timeout must be a number of seconds\n";
    return kExitUsage;
  }
  auto parsed = ParseSteps(flags.steps);
  if (!parsed.ok()) {
    std::cerr << "cocoon pipeline: " << parsed.status().message() << "\n";
    return kExitUsage;
  }
  *steps = std::move(*parsed);
  std::optional<uint64_t> memory_bytes;
  if (!flags.mem.empty()) {
    auto mem = ParseMemoryFlag(flags.mem);
    if (!mem.ok()) {
      std::cerr << "cocoon pipeline: " << mem.status().message() << "\n";
      return kExitUsage;
    }
    memory_bytes = *mem;
  }
  for (size_t i = 0; i < steps->size(); ++i) {
    auto run = PrepareStep(flags, memory_bytes, (*steps)[i]);
    if (!run.ok()) {
      std::cerr << "cocoon pipeline: step " << i + 1 << " (" << (*steps)[i].runtime << "): " << run.status().message()
                << "\nno step was run\n";
      return run.status().code() == ErrorCode::kInvalidArgument ? kExitUsage : kExitRefused;
    }
    prepared->push_back(std::move(*run));
  }
  return 0;
}

// Records in `result` what step `index` handed on to the later steps and
// what it ran without (*inputs_missing: the earlier steps whose work did not
// all reach the shared dir, docs/agents.md "Pipelines"). A step whose
// command succeeded but whose files were left out is not a success:
// *status becomes kExitRefused.
void RecordHandOn(const PipelineFlags& flags, size_t index, const HandedOn& handed_on, nlohmann::json* inputs_missing,
                  nlohmann::json* result, int* status) {
  const std::string name = "cocoon pipeline: step " + std::to_string(index + 1);
  (*result)["inputs_complete"] = inputs_missing->empty();
  if (!inputs_missing->empty()) {
    (*result)["inputs_missing"] = *inputs_missing;
    if (!flags.json) std::cerr << name << ": ran without all of its inputs: " << inputs_missing->size()
                               << " earlier step(s) did not hand on all of their work (see above)\n";
  }
  (*result)["outputs_left_out"] = handed_on.left_out;
  if (handed_on.committed && handed_on.left_out != 0) {
    const std::string reason = std::to_string(handed_on.left_out) +
                               (handed_on.left_out == 1 ? " entry the step wrote was" : " entries the step wrote were") +
                               (handed_on.direct ? " removed from the shared work dir" : " left out of the shared work dir") +
                               " by breakout verification (outcome.breakout.findings lists them); later steps do not "
                               "get them";
    (*result)["reason"] = reason;
    if (*status == 0) *status = kExitRefused;
    if (!flags.json) std::cerr << name << ": failed: " << reason << "\n";
    inputs_missing->push_back({{"step", index + 1}, {"left_out", handed_on.left_out}});
  } else if (!handed_on.committed) {
    inputs_missing->push_back({{"step", index + 1}, {"committed", false}});
  }
}

// The steps' results so far, and what went wrong across them.
struct PipelineTally {
  nlohmann::json results = nlohmann::json::array();
  int first_failure = 0;
  size_t failed = 0;
  bool interrupted = false;
  bool output_lost = false;
};

// What the steps came to, as --json or a stderr line; returns the pipeline's
// exit status. What the caller did not get outranks the steps' statuses
// (docs/cli.md).
int ReportPipeline(const PipelineFlags& flags, size_t step_count, PipelineTally tally, int64_t wall_ms) {
  if (flags.json) {
    const size_t run = tally.results.size();
    nlohmann::json out = {{"steps", std::move(tally.results)},
                          {"total", {{"steps", step_count}, {"run", run}, {"failed", tally.failed},
                                     {"ok", tally.failed == 0 && run == step_count},
                                     {"cancelled", tally.interrupted}, {"exit_status", tally.first_failure},
                                     {"wall_ms", wall_ms}}}};
    if (!WriteJsonLine(STDOUT_FILENO, out, 2)) return ReportLostOutput("cocoon pipeline", "the result (--json) on stdout", errno);
  } else if (tally.failed > 0) {
    std::cerr << "cocoon pipeline: " << tally.failed << " step(s) failed" << (flags.keep_going ? "" : "; stopped") << "\n";
  }
  return tally.output_lost ? kExitOutputLost : tally.first_failure;
}

int RunPipeline(const PipelineFlags& flags) {
  IgnoreSigpipe();  // a closed stdout is reported, not the end of cocoon (run_output_util.h)
  std::vector<Step> steps;
  std::vector<PreparedRun> prepared;
  if (int refused = PrepareSteps(flags, &steps, &prepared); refused != 0) return refused;
  if (struct stat st{}; !flags.work.empty() && (stat(flags.work.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))) {
    std::cerr << "cocoon pipeline: work dir " << flags.work << " does not exist or is not a directory; no step was run\n";
    return kExitRefused;
  }
  auto work = SharedWorkDir::Open(flags.work);
  if (!work.ok()) {
    std::cerr << "cocoon pipeline: " << work.status().message() << "\n";
    return kExitRefused;
  }
  // From the first step to the last one's end, a cancelling signal is read by
  // the running step or cancels the next one (never the end of cocoon between
  // two steps, with the temporary work dir left behind).
  enforcer::SignalGuard::HoldCancelSignalsUntilExit();
  auto start = std::chrono::steady_clock::now();
  PipelineTally tally;
  nlohmann::json inputs_missing = nlohmann::json::array();
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& step = steps[i];
    if (!flags.json) std::cerr << "== step " << i + 1 << "/" << steps.size() << " (" << step.runtime << ")\n";
    int status = 0;
    bool cancelled = false;
    HandedOn handed_on;
    nlohmann::json result =
        RunStep(flags, std::move(prepared[i]), step, i, **work, &status, &cancelled, &tally.output_lost, &handed_on);
    RecordHandOn(flags, i, handed_on, &inputs_missing, &result, &status);
    result["exit_status"] = status;
    result["ok"] = status == 0;
    if (!flags.json && result.contains("error"))
      std::cerr << "cocoon pipeline: step " << i + 1 << ": " << result["error"].get<std::string>() << "\n";
    tally.results.push_back(std::move(result));
    if (status == 0) continue;
    ++tally.failed;
    if (tally.first_failure == 0) tally.first_failure = status;
    if (cancelled) {
      tally.interrupted = true;
      if (!flags.json) std::cerr << "cocoon pipeline: cancelled during step " << i + 1 << "; no further step runs\n";
      break;
    }
    if (!flags.keep_going) break;
  }
  auto wall_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count();
  enforcer::SignalGuard::ReleaseCancelSignals();  // every step recorded: from here a signal ends cocoon as usual
  return ReportPipeline(flags, steps.size(), std::move(tally), wall_ms);
}

void SetUpPipeline(CLI::App& app, CommandResult& result) {
  auto f = std::make_shared<PipelineFlags>();
  CLI::App* cmd = app.add_subcommand("pipeline", "Run RUNTIME:CODE steps in order, each in a fresh sandbox, sharing a work dir");
  cmd->add_option("-s,--step", f->steps, "A step RUNTIME:CODE, e.g. \"python:open('a','w').write('x')\" (repeatable, in order)")
      ->required();
  cmd->add_option("--policy", f->policy, "Base policy for every step (default: each runtime's preset, which extends strict)")
      ->check(NonEmptyValue());
  cmd->add_option("--work", f->work, "Shared host work dir (default: a temporary one, removed afterwards)")
      ->check(NonEmptyValue());
  cmd->add_option("--timeout", f->timeout_secs, "Per-step wall-clock limit in seconds")
      ->check(CLI::Range(0.001, 604800.0));  // 1 ms .. 7 days; NaN is refused in RunPipeline
  cmd->add_option("--mem", f->mem, "Per-step memory limit in MiB (or 1G, 512M)")
      ->check(NonEmptyValue());
  cmd->add_flag("--json", f->json, "Print each step's Outcome and a total as JSON");
  cmd->add_flag("--keep-going", f->keep_going, "Run the remaining steps after a failure");
  cmd->add_option("--audit-log", f->audit_log, "Append signed audit events to FILE (default: $COCOON_AUDIT_LOG)")
      ->check(NonEmptyValue());
  cmd->add_option("--audit-key", f->audit_key, "Ed25519 key for the audit log (default: $COCOON_AUDIT_KEY)")
      ->check(NonEmptyValue());
  cmd->footer(
      "Exit status: 0 when every step succeeded, else the first failing step's status;\n"
      "125 when a step's output or the --json result could not be written in full.\n"
      "A step whose files were left out of the shared work dir by breakout\n"
      "verification (an escaping link, a FIFO...) failed (ok false, status 1 if the\n"
      "command exited 0): the next step would not get them. With --keep-going a\n"
      "later step says inputs_complete false and which steps did not hand on all\n"
      "of their work (inputs_missing).\n"
      "A step that exits non-zero still has its verified files committed to the\n"
      "shared work dir (the next step, with --keep-going, and --work see them); a\n"
      "step killed by a limit or refused commits nothing. Every step's runtime is\n"
      "checked before the first step runs. SIGINT or SIGTERM cancels the running\n"
      "step and ends the pipeline, --keep-going or not (exit 130).\n\n"
      "Example:\n"
      "  cocoon pipeline -s \"python:open('n.txt','w').write('41')\" \\\n"
      "                  -s \"bash:echo \\$(( \\$(cat n.txt) + 1 ))\" --json");
  cmd->callback([f, &result] { result.exit_code = RunPipeline(*f); });
}

}  // namespace

COCOON_REGISTER_COMMAND(pipeline, SetUpPipeline);

}  // namespace cocoon::cli
