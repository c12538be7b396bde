#include "cli/command_line.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string_view>

#include <CLI/CLI.hpp>

#include "cli/command_registry.h"
#include "cli/terminal_text.h"
#include "cocoon_version.h"
#include "compiler/common/log.h"
#include "enforcer/workdir/scratch_dir.h"

namespace cocoon::cli {
namespace {

// Every command has closed what it owns (audit logs are sealed by Close(),
// scratch dirs removed by their owners) before main returns; what is left
// to static destructors is freeing memory and OpenSSL's, ANTLR's and CLI11's
// global tables, ~0.1 ms of every `cocoon` process (issue 4's launch
// figures include the supervisor's exit). So flush the streams and leave
// with _exit. Sanitizer builds take the normal path, for LeakSanitizer's
// exit-time check.
#if defined(__SANITIZE_ADDRESS__)
#define COCOON_NORMAL_EXIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define COCOON_NORMAL_EXIT 1
#endif
#endif

int FinishProcess(int exit_code) {
#ifdef COCOON_NORMAL_EXIT
  return exit_code;
#else
  std::cout.flush();
  std::cerr.flush();
  log::Flush();
  enforcer::RemoveProcessStateDir();  // a fallback /tmp/.cocoon-<uid>-XXXXXX (scratch_dir.h)
  fflush(nullptr);
  _exit(exit_code);
#endif
}

// A repeatable option takes exactly one value per occurrence (`--env A=1
// --env B=2`), like getopt. CLI11 otherwise lets a vector option take every
// following word, and a `--` then only ends that option's values instead of
// ending the options: in `cocoon run --env A=1 -- cmd --allow-network` the
// command's own `--allow-network` opened the sandbox's network.
std::vector<std::string> after_double_dash;
bool had_double_dash = false;

void OneValuePerOccurrence(CLI::App& app) {
  for (CLI::Option* option : app.get_options()) {
    if (!option->get_positional() && option->get_expected_max() > 1) option->allow_extra_args(false);
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) OneValuePerOccurrence(*sub);
}

}  // namespace

const std::vector<std::string>* CommandAfterDoubleDash() { return had_double_dash ? &after_double_dash : nullptr; }

namespace {

// The supervisor holds fds per directory level while it scans, copies and
// commits work dirs (breakout_scan.h), several at once under `cocoon mcp`:
// the soft RLIMIT_NOFILE (often 1024) is raised toward the hard limit, as
// Go and systemd do for their own processes: to 8192, room for four
// concurrent deep scans (4 x (3 workers x 256 levels + 128 queued)) and the
// rest. Not higher: the helpers cocoon runs unsandboxed (runtime version
// probes) inherit it, and some close every fd up to it. Sandboxes are
// unaffected: each gets the policy's RLIMIT_NOFILE (limit_plan.h). Nothing
// here uses select(2), whose fd_set stops at 1024.
void RaiseOpenFileSoftLimit() {
  constexpr rlim_t kWanted = 8192;
  struct rlimit limit {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= kWanted) return;
  rlim_t raised = limit.rlim_max == RLIM_INFINITY ? kWanted : std::min(limit.rlim_max, kWanted);
  if (raised <= limit.rlim_cur) return;
  limit.rlim_cur = raised;
  (void)setrlimit(RLIMIT_NOFILE, &limit);  // best effort: the scan sizes itself to what it gets
}

}  // namespace

int RunCommandLine(int argc, char** argv) {
  RaiseOpenFileSoftLimit();
  log::InitStderr();

  CLI::App app{"Cocoon: compile and enforce security policies for untrusted code"};
  app.set_version_flag("--version", std::string("cocoon ") + COCOON_VERSION_STRING);
  app.require_subcommand(1);
  CommandResult result;
  // The commands that run a command take it after `--`, out of CLI11's reach:
  // CLI11 2.1 hands the words after a `--` that follows a filled positional
  // back to the parent parser, and keeps reading options after positionals.
  if (argc > 2 && (std::string_view(argv[1]) == "run" || std::string_view(argv[1]) == "enforce")) {
    for (int i = 2; i < argc; ++i) {
      if (std::string_view(argv[i]) != "--") continue;
      had_double_dash = true;
      after_double_dash.assign(argv + i + 1, argv + argc);
      argc = i;
      break;
    }
  }
  // argv[1] names the subcommand (no global option takes a value), so only
  // its options are built; anything else (--help, a typo) gets them all.
  SetUpCommandsFor(app, result, argc > 1 ? argv[1] : nullptr);
  OneValuePerOccurrence(app);
  // CLI11 answers an unknown command with "A subcommand is required", which
  // reads as if none was given.
  if (argc > 1 && argv[1][0] != '-') {
    std::string known;
    bool found = false;
    for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
      found |= sub->get_name() == argv[1];
      known += (known.empty() ? "" : ", ") + sub->get_name();
    }
    if (!found) {
      std::cerr << "cocoon: unknown command '" << EscapeForTerminal(argv[1]) << "'; the commands are " << known
                << " (cocoon --help)\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    // CLI11 returns 0 for --help/--version; usage errors are exit 2 everywhere
    // but in `audit verify`, where 2 means "intact, not sealed" and a usage
    // error is 3 (docs/audit.md): a script must not read a missing --trust
    // value as a healthy live log.
    if (code == 0) return 0;
    const bool audit_verify = argc > 2 && std::string_view(argv[1]) == "audit" && std::string_view(argv[2]) == "verify";
    return audit_verify ? 3 : 2;
  }
  return FinishProcess(result.exit_code);
}

}  // namespace cocoon::cli
