// `cocoon run`: quick flags for agents and people. Builds an in-memory policy
// that extends strict (or a runtime preset, or --policy FILE), compiles it
// through the normal front end and runs it with the same launch path as
// `cocoon enforce` (cli/agent_run_util.h, cli/launch_util.h).
//
//   cocoon run -r python -c 'print(1)'
//   cocoon run -r python script.py arg            # script read-only in place
//   echo 'console.log(1)' | cocoon run -r node    # code from stdin
//   cocoon run --timeout 30 --mem 512 -- make test
//   cocoon run --json -r python -c '...'          # one JSON Outcome
//   cocoon run --stream -r python -c '...'        # NDJSON chunks, then the Outcome
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/agent_run_util.h"
#include "cli/command_line.h"
#include "cli/command_registry.h"
#include "cli/run_output_util.h"
#include "cli/runtime_util.h"
#include "cli/policy_compile.h"

namespace cocoon::cli {
namespace {

struct RunFlags {
  std::string policy, profile, runtime, code, work, log_json, audit_log, audit_key;
  bool has_code = false;
  std::vector<std::string> ro, copies, env, args;
  double timeout_secs = 0;
  std::string mem, disk;
  uint64_t max_procs = 0;
  bool allow_network = false, no_gpu = false, json = false, stream = false, explain = false, list_runtimes = false;
};

Result<RunSpec> SpecFromFlags(const RunFlags& f) {
  RunSpec spec;
  QuickPolicyOptions& p = spec.policy;
  p.policy_file = f.policy;
  p.profile = f.profile;
  p.runtime = f.runtime;
  p.readonly_paths = f.ro;
  p.cwd_mount = CwdMount::kReadOnly;  // the current dir, read-only, when no --ro is given
  p.has_work_dir = !f.work.empty();
  // NaN passes CLI11's range check (every comparison with it is false).
  if (!std::isfinite(f.timeout_secs)) return InvalidArgumentError("--timeout must be a number of seconds");
  if (f.timeout_secs > 0) p.timeout_ms = static_cast<uint64_t>(f.timeout_secs * 1000);
  if (!f.profile.empty() && f.policy.empty()) {
    return InvalidArgumentError("--profile " + f.profile + " selects a profile of --policy FILE: give --policy too");
  }
  if (!f.mem.empty()) { COCOON_ASSIGN_OR_RETURN(p.memory_bytes, ParseMemoryFlag(f.mem)); }
  if (!f.disk.empty()) { COCOON_ASSIGN_OR_RETURN(p.disk_bytes, ParseMegabytes(f.disk)); }
  if (f.max_procs > 0) p.processes = f.max_procs;
  p.network = f.allow_network ? NetworkFlag::kAllow : NetworkFlag::kAsPolicy;
  p.gpu = f.no_gpu ? GpuFlag::kDeny : GpuFlag::kAsPolicy;
  for (const std::string& kv : f.env) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos) return InvalidArgumentError("--env " + kv + ": expected K=V");
    std::string name = kv.substr(0, eq);
    for (const auto& [given, value] : p.env) {
      if (given == name) return InvalidArgumentError("--env " + name + " is given twice");
    }
    p.env.emplace_back(std::move(name), kv.substr(eq + 1));
  }
  if (f.runtime.empty()) {
    if (f.has_code) return InvalidArgumentError("-c needs a runtime: -r NAME");
    spec.command = f.args;
    return spec;
  }
  if (f.has_code) {
    p.code = f.code;
    if (!f.args.empty()) return InvalidArgumentError("give either -c CODE or a script file, not both");
  } else if (!f.args.empty()) {
    spec.script_path = f.args[0];
    spec.script_args.assign(f.args.begin() + 1, f.args.end());
  } else if (!f.explain || !isatty(STDIN_FILENO)) {
    // --explain reads piped code too: code over 64 KiB is staged as a file
    // and bound at /cocoon/main<ext>, and the explanation must show (and
    // hash) the policy the run would get.
    if (isatty(STDIN_FILENO)) return InvalidArgumentError("no code: pass -c CODE, a script file, or pipe code on stdin");
    // Bounded: code, not data (a stream of data belongs in --work or --copy).
    constexpr size_t kMaxStdinCodeBytes = 16 << 20;
    std::string code;
    char buffer[64 * 1024];
    while (std::cin.read(buffer, sizeof(buffer)) || std::cin.gcount() > 0) {
      code.append(buffer, static_cast<size_t>(std::cin.gcount()));
      if (code.size() > kMaxStdinCodeBytes) {
        return InvalidArgumentError("the code on stdin is larger than 16 MiB: pass a script file instead");
      }
    }
    RememberConsumedStdin(code);
    p.code = std::move(code);
    spec.code_from_stdin = true;
  } else {
    p.code = "";  // --explain at a terminal: no code to wait for
  }
  return spec;
}

int ListRuntimes(bool json) {
  auto runtimes = InspectRuntimes(false);
  if (json) {
    std::printf("%s\n", RuntimesToJson(runtimes).dump(2).c_str());
    return 0;
  }
  for (const auto& r : runtimes) {
    std::printf("%-13s %s\n", r.name.c_str(),
                r.available ? (r.path + "  " + r.version).c_str() : "missing (not installed)");
  }
  return 0;
}

// `--explain --json`: the same facts as one object, for an agent to read
// before it decides to run (the text form is for people).
void PrintExplanationJson(const PreparedRun& run, const ir::Policy& policy, const std::string& explanation) {
  nlohmann::json out{{"profile", policy.name},
                     {"base_profile", run.policy.base_profile},
                     {"policy_sha256", policy.source_sha256},
                     {"command", run.argv},
                     {"cwd", run.policy.cwd},
                     {"overrides", run.policy.overrides},
                     {"notes", run.policy.notes},
                     {"explanation", explanation},
                     {"generated_policy", run.policy.text}};
  std::printf("%s\n", out.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

// The generated policy passes each --env name (its value goes beside the
// policy text, QuickPolicy::passed_values), so the compiled policy's
// explanation says "pass NAME from the caller"; the sandbox gets the flag's
// value, which this line says instead (the value is not shown: often a
// token). The origin column stays where Writer (explain.cc) puts it.
std::string NameEnvFlagValues(std::string explanation, const std::map<std::string, std::string>& passed) {
  constexpr size_t kOriginColumn = 58;
  for (const auto& [name, value] : passed) {
    const std::string old_text = "\n  pass " + name + " from the caller";
    size_t at = explanation.find(old_text);
    if (at == std::string::npos) continue;
    const size_t begin = at + 1;
    size_t end = explanation.find('\n', begin);
    if (end == std::string::npos) end = explanation.size();
    const std::string rest = explanation.substr(at + old_text.size(), end - at - old_text.size());
    if (!rest.empty() && rest[0] != ' ') continue;  // another line that starts alike
    std::string line = "  set  " + name + " by --env (its value is not shown)";
    const size_t origin = rest.find_first_not_of(' ');
    if (origin != std::string::npos) {
      line += std::string(line.size() < kOriginColumn ? kOriginColumn - line.size() : 1, ' ') + rest.substr(origin);
    }
    explanation.replace(begin, end - begin, line);
  }
  return explanation;
}

int Explain(const PreparedRun& run, const RunOutputOptions& output) {
  std::string warnings;
  auto policy = CompileQuickPolicy(run.policy, &warnings);
  if (!policy.ok()) {
    ReportRefusal(policy.status(), {}, output);
    return kExitRefused;
  }
  auto explained = ExplainCheckedPolicy(*policy);
  if (!explained.ok()) {
    ReportRefusal(explained.status(), {}, output);
    return kExitRefused;
  }
  *explained = NameEnvFlagValues(std::move(*explained), run.policy.passed_values);
  if (output.mode == RunOutputMode::kJson) {
    PrintExplanationJson(run, *policy, *explained);
    return 0;
  }
  std::printf("%s\n", explained->c_str());
  std::printf("Command:\n ");
  for (const auto& a : run.argv) std::printf(" %s", nlohmann::json(a).dump().c_str());
  std::printf("\n  cwd: %s\n", run.policy.cwd.c_str());
  std::printf("\nOverrides (opened beyond %s, recorded in the audit log):\n", run.policy.base_profile.c_str());
  if (run.policy.overrides.empty()) std::printf("  none\n");
  for (const auto& o : run.policy.overrides) std::printf("  %s\n", o.c_str());
  for (const auto& n : run.policy.notes) std::printf("note: %s\n", n.c_str());
  std::printf("\nGenerated policy:\n%s", run.policy.text.c_str());
  return 0;
}

int RunRun(const RunFlags& flags) {
  IgnoreSigpipe();  // a closed stdout is reported, not the end of cocoon (run_output_util.h)
  if (flags.list_runtimes) return ListRuntimes(flags.json);
  if (flags.json && flags.stream) {
    std::cerr << "cocoon run: --json and --stream are exclusive (--stream ends with the Outcome line)\n";
    return kExitUsage;
  }
  if (!flags.copies.empty() && flags.work.empty()) {
    std::cerr << "cocoon run: --copy puts files into the work dir: give one with --work DIR\n";
    return kExitUsage;
  }
  RunOutputOptions output;
  output.mode = flags.stream ? RunOutputMode::kStream : flags.json ? RunOutputMode::kJson : RunOutputMode::kPassThrough;
  output.log_json = flags.log_json;
  output.command_name = "cocoon run";
  // With --json (and --stream, as its final line) a refusal is a JSON
  // object on stdout (refused: true) and exits 1; 2 is left to what the flag
  // parser rejects, with nothing on stdout (docs/agents.md), so a caller can
  // tell the two apart.
  const bool json_refusal = output.mode != RunOutputMode::kPassThrough;
  auto spec = SpecFromFlags(flags);
  if (!spec.ok()) {
    ReportRefusal(spec.status(), {}, output);
    return json_refusal ? kExitRefused : kExitUsage;
  }
  // The command reads the caller's stdin (`cocoon run -- ./solution <
  // input.txt`), as under `cocoon enforce`, unless that was its code.
  const enforcer::StdinMode stdin_mode = spec->code_from_stdin ? enforcer::StdinMode::kNull : enforcer::StdinMode::kInherit;
  auto prepared = PrepareRun(std::move(*spec));
  if (!prepared.ok()) {
    ReportRefusal(prepared.status(), {}, output);
    return !json_refusal && prepared.status().code() == ErrorCode::kInvalidArgument ? kExitUsage : kExitRefused;
  }
  // Not policy, but host paths the run reads from or writes back to: the
  // launch event and the Outcome name them with the overrides.
  // Resolved, so that the record names the real host path whatever the
  // caller's current directory and symlinks were.
  if (!flags.work.empty()) {
    prepared->policy.overrides.push_back("workdir: " + ResolvedHostPath(flags.work) + " (--work, committed back)");
  }
  for (const std::string& copy : flags.copies) prepared->policy.overrides.push_back("copy: " + ResolvedHostPath(copy) + " (--copy)");
  if (flags.explain) return Explain(*prepared, output);
  AuditOptions audit{EnvOr(flags.audit_log, "COCOON_AUDIT_LOG"), EnvOr(flags.audit_key, "COCOON_AUDIT_KEY")};
  return LaunchAndReport(*prepared, flags.work, flags.copies, stdin_mode, audit, output);
}

void SetUpRun(CLI::App& app, CommandResult& result) {
  auto f = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand("run", "Run code or a command in a sandbox from quick flags (extends strict)");
  cmd->add_option("--policy", f->policy, "Base policy file instead of strict / the runtime preset")
      ->check(NonEmptyValue());
  cmd->add_option("--profile", f->profile, "Profile of --policy when it defines several")
      ->check(NonEmptyValue());
  cmd->add_option("-r,--runtime", f->runtime, "Runtime preset: python, node, bash, ruby, go... (--list-runtimes)")
      ->check(NonEmptyValue());
  cmd->add_option_function<std::string>("-c,--code", [f](const std::string& c) { f->code = c; f->has_code = true; },
                                         "Code to run with the runtime");
  cmd->add_option("--ro", f->ro, "Host path to bind read-only at the same path (repeatable; default: the current dir)")
      ->check(NonEmptyValue());
  cmd->add_option("--work", f->work, "Host work dir, mounted at /work (staged: verified, then committed)")
      ->check(NonEmptyValue());
  cmd->add_option("--copy", f->copies, "Copy a host file into the work dir (repeatable; needs --work)")
      ->check(NonEmptyValue());
  cmd->add_option("--timeout", f->timeout_secs, "Wall-clock (and CPU) limit in seconds")
      ->check(CLI::Range(0.001, 604800.0));  // 1 ms .. 7 days: the policy's time range
  cmd->add_option("--mem", f->mem, "Memory limit in MiB (or 1G, 512M); clamped to 95% of the host")
      ->check(NonEmptyValue());
  cmd->add_option("--disk", f->disk, "Disk (work dir) limit in MiB")
      ->check(NonEmptyValue());
  cmd->add_option("--max-procs", f->max_procs, "Maximum processes/threads")
      ->check(CLI::Range(uint64_t{1}, uint64_t{4194304}));  // at most the kernel's pid_max ceiling
  cmd->add_flag("--allow-network", f->allow_network, "Open the network (recorded as an override)");
  cmd->add_flag("--no-gpu", f->no_gpu, "Deny GPU devices even if the base policy allows them");
  cmd->add_option("--env", f->env, "Set K=V in the sandbox environment (repeatable)")
      ->check(NonEmptyValue());
  cmd->add_flag("--json", f->json, "Print one JSON Outcome (with overrides and notes)");
  cmd->add_option("--log-json", f->log_json, "Also write the JSON Outcome to FILE")
      ->check(NonEmptyValue());
  cmd->add_flag("--stream", f->stream, "NDJSON output chunks as they come, then the Outcome line");
  cmd->add_flag("--explain", f->explain, "Show the effective policy and command without running (--json: one object)");
  cmd->add_flag("--list-runtimes", f->list_runtimes, "List runtime presets and whether each is installed");
  cmd->add_option("--audit-log", f->audit_log, "Append signed audit events to FILE (default: $COCOON_AUDIT_LOG)")
      ->check(NonEmptyValue());
  cmd->add_option("--audit-key", f->audit_key, "Ed25519 key for the audit log (default: $COCOON_AUDIT_KEY)")
      ->check(NonEmptyValue());
  cmd->add_option("ARGS", f->args, "Script [args] with -r, else the command after --");
  cmd->footer(
      "Flags may tighten the base policy freely; flags that open it (--allow-network,\n"
      "a larger --mem/--timeout/--disk/--max-procs, --ro, the default read-only cwd,\n"
      "--env, by name only) are recorded as overrides in the audit launch event.\n"
      "The command reads cocoon's stdin unless its code came from there. Exit\n"
      "status: the command's (124 on timeout, 128+N on signal N), 1 when refused,\n"
      "2 on usage, 125 when the work dir could not be verified (nothing was\n"
      "committed), cocoon's supervision of the command failed (the sandbox was\n"
      "killed, then verified), or the output could not be written in full\n"
      "(stderr says so).\n"
      "--ro refuses /, /etc, /tmp, /var/tmp, /boot, /root themselves, /proc, /sys,\n"
      "/dev, /run, /var/run and below, unix sockets (read-only does not stop a\n"
      "connect), and a path the base policy hides or one inside it (a script\n"
      "there too: a flag does not undo a `hide`); --work refuses system trees and\n"
      "any dir holding the artifact cache, the audit log or key (also under\n"
      "another name: a bind mount), the --policy file and what it imports (its\n"
      "contents are committed back), or a dir of the policy search path\n"
      "($COCOON_POLICY_PATH, else the shipped policies/), or one inside it.\n"
      "--work and --copy refuse your home or a dir above it, your credential\n"
      "stores (~/.ssh, ~/.gnupg, ~/.aws, ~/.netrc...), Cocoon's state dir, and a\n"
      "path the policy hides, one inside it or one holding it. An audit key or\n"
      "log with a second hard link is refused.\n\n"
      "Examples:\n"
      "  cocoon run -r python -c 'print(1)'\n"
      "  cocoon run --json -r node -c 'console.log(process.version)'\n"
      "  cocoon run --work . --timeout 60 --mem 1G -- make -j2   (runs in /work)\n"
      "  cocoon run --explain --allow-network -r python script.py");
  // A script's own arguments are never cocoon's: after the first positional
  // (the script), every word is the script's, like `python3 script.py ...`;
  // and what follows `--` is the command's (command_line.h).
  cmd->positionals_at_end(true);
  cmd->callback([f, &result] {
    if (const auto* command = CommandAfterDoubleDash()) f->args.insert(f->args.end(), command->begin(), command->end());
    result.exit_code = RunRun(*f);
  });
}

}  // namespace

COCOON_REGISTER_COMMAND(run, SetUpRun);

}  // namespace cocoon::cli
