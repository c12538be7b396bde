// The Linux enforcer's public API: run one command under a compiled launch
// plan and seccomp program, and return its Outcome.
//
//   SandboxRequest request;
//   request.plan = plan;  request.seccomp_bpf = bpf_bytes;  request.argv = {"/bin/true"};
//   COCOON_ASSIGN_OR_RETURN(auto sandbox, Sandbox::Prepare(std::move(request)));
//   // sandbox->limits(), landlock_abi(), namespaces(): known before launch (audit "launch")
//   COCOON_ASSIGN_OR_RETURN(Outcome outcome, sandbox->Run());
//
// Prepare does every fallible host-side thing that can be done before the
// command's process is released: validates the plan and BPF, resolves mount
// sources, plans limits and creates the cgroup, prepares the work dir
// staging. If it fails, nothing is left behind (a started_child is killed
// and reaped). Run starts the child (or adopts the started one), supervises
// it, verifies and commits the work dir, and always cleans up (cgroup,
// staging) before returning.
//
// Errors: a Status from Prepare/Run means the run was refused or could not be
// started (nothing of the command ran, or it was killed before exec). A
// command that ran and failed is an Outcome, not an error.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/backends/plan/launch_plan.h"
#include "compiler/common/status.h"
#include "compiler/ir/policy_ir.h"
#include "enforcer/net_allow.h"
#include "enforcer/outcome.h"

namespace cocoon::enforcer {

enum class OutputStream { kStdout, kStderr };

// Live output chunks (cocoon run --stream, MCP progress). Called on the
// supervisor's thread; chunks beyond the cap are not delivered.
using OutputCallback = std::function<void(OutputStream stream, std::string_view chunk)>;

enum class OutputMode {
  kCapture,     // keep up to the cap in Outcome::stdout_data/stderr_data (and stream if a callback is set)
  kStreamOnly,  // deliver to the callback only; keep nothing (cocoon enforce without --json)
};

enum class StdinMode {
  kNull,     // /dev/null
  kInherit,  // the caller's stdin (never a terminal: a tty is replaced by /dev/null)
  // SandboxRequest::stdin_data, fed through a pipe by a relay thread
  // (stdin_relay.h): bytes an embedding program holds (cocoon mcp's `stdin`),
  // never written to a host file.
  kData,
};

enum class SignalHandling {
  kCancelOnSigintSigterm,  // SIGINT/SIGTERM/SIGHUP (and SIGQUIT/USR1/USR2/ALRM) to this process cancel the run (CLI)
  kNone,                   // the embedding program handles signals (MCP server, tests)
};

// Cancels a running sandbox from another thread (MCP notifications/cancelled).
// Thread-safe; Cancel() before Run() makes Run refuse to start.
class CancelHandle {
 public:
  CancelHandle();
  ~CancelHandle();
  CancelHandle(const CancelHandle&) = delete;
  CancelHandle& operator=(const CancelHandle&) = delete;
  void Cancel();
  bool cancelled() const { return cancelled_.load(); }
  int fd() const { return event_fd_; }  // readable once cancelled
  const std::atomic<bool>* flag() const { return &cancelled_; }

 private:
  std::atomic<bool> cancelled_{false};
  int event_fd_ = -1;
};

class StartedChild;  // started_child.h

struct SandboxRequest {
  backends::LaunchPlan plan;
  std::string seccomp_bpf;  // raw linux.seccomp.bpf bytes; must match plan.seccomp_sha256
  // linux.seccomp.json: which USER_NOTIF returns mean log, notify or kill.
  // Required when the program returns SECCOMP_RET_USER_NOTIF.
  std::string seccomp_sidecar_json;
  std::vector<std::string> argv;

  // Host work dir. Staged (default): the sandbox sees a copy on a quota tmpfs
  // and verified results are committed back. Empty: a throwaway tmpfs.
  std::string work_host_dir;
  // Staged: verify the work dir after the run, but commit nothing back (the
  // Outcome's verification is "discarded"). For a caller that throws the
  // host dir away after the run anyway (cocoon mcp's per-call dirs): the
  // commit would copy every output file to the host only to delete it.
  bool discard_work_dir = false;
  std::vector<ir::Copy> extra_copies;  // --copy, added to the plan's copies

  OutputMode output_mode = OutputMode::kCapture;
  StdinMode stdin_mode = StdinMode::kNull;
  std::string stdin_data;  // StdinMode::kData
  SignalHandling signals = SignalHandling::kNone;
  OutputCallback on_output;
  std::shared_ptr<CancelHandle> cancel;
  // Names of the caller's environment are read from this process's environ,
  // unless given here: values for the plan's `pass` names that stay out of
  // every policy, artifact and cache file (`cocoon run --env K=V` passes K
  // by name, since its value is often a token). Only names the plan passes
  // are used.
  std::map<std::string, std::string> passed_values;

  // Network allow-lists only: resolves the plan's host names
  // (&ResolveAllowList). A plan with an allow-list and no resolver is
  // refused. A parameter, not a call, so that linking the enforcer does not
  // link getaddrinfo (cli/launch_dynamic.h).
  AllowListResolver resolve_allow_list = nullptr;
  // Optional: the sandbox's first process, started before the plan was
  // parsed (StartedChild::Start, started_child.h) so that the kernel builds
  // its namespaces while Prepare runs. Run uses it when it fits what the
  // prepared run needs and otherwise kills it and starts another; Prepare
  // failing, or the Sandbox being destroyed unrun, kills it too.
  std::shared_ptr<StartedChild> started_child;
  // Test hook: runs after each step of a staged commit's install
  // (CommitOptions::after_install_step_for_test).
  std::function<void(uint64_t)> after_commit_install_step_for_test;
  // Test hook: runs once the command has ended and the work dir and the
  // writable binds are verified (and committed), before the Outcome is
  // complete.
  std::function<void()> after_run_verified_for_test;
};

class Sandbox {
 public:
  static Result<std::unique_ptr<Sandbox>> Prepare(SandboxRequest request);
  ~Sandbox();
  Sandbox(const Sandbox&) = delete;
  Sandbox& operator=(const Sandbox&) = delete;

  // Known after Prepare, for the audit "launch" event.
  const std::vector<LimitEnforcement>& limits() const;
  int landlock_abi() const;
  const std::vector<std::string>& namespaces() const;
  uid_t sandbox_host_uid() const;

  // Runs the command once. The pid of the sandbox's init (host pid
  // namespace) is available from pid() during and after Run.
  Result<Outcome> Run();
  pid_t pid() const;

  class Impl;

 private:
  explicit Sandbox(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One-shot convenience: Prepare + Run.
Result<Outcome> RunSandbox(SandboxRequest request);

// The refusal of a run cancelled (a signal to cocoon, SandboxRequest::cancel)
// before its command was exec'd: nothing ran, nothing was committed. Callers
// treat it as a cancel (exit 130, a pipeline ends), not as a refusal.
Status RunCancelledBeforeStart();
bool IsRunCancelledBeforeStart(const Status& status);

}  // namespace cocoon::enforcer
