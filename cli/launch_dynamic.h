// What a launch needs the dynamic loader for, in one seam (like
// cli/policy_compile.h; each executable links one definition):
//   - cocoon-full does the work in process (launch_dynamic_util.cc);
//   - the launcher `cocoon` is a static executable (static-pie: no ld.so and
//     no symbol binding before main, ~0.2-0.3 ms of every launch,
//     docs/performance.md), and glibc's dlopen and NSS are not dependable
//     from one: a library loaded by dlopen brings a second libc into the
//     process (a static getpwuid_r for an unknown uid falls through to
//     nss_systemd and crashes, seen on this Debian). So its definitions
//     hand the whole command line to cocoon-full (fast_path/full_cocoon.cc)
//     and return only when that exec fails.
// Two things of a launch use them: the signed audit log (libcrypto's
// EVP/PEM layer is dlopen'ed on first use of a key, AuditLog::Open looks
// the user up through NSS) and network allow-lists (getaddrinfo). Both are
// called by LaunchSandboxed before the sandbox is prepared, so the exec
// loses nothing. tests/cli checks that dlopen, getaddrinfo and getpwuid_r
// are not linked into the launcher.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "cli/launch_util.h"
#include "compiler/common/status.h"
#include "enforcer/net_allow.h"

namespace cocoon::cli {

// One run's signed audit log: opened before the sandbox is prepared (a run
// whose record cannot be written is refused).
class LaunchAuditLog {
 public:
  virtual ~LaunchAuditLog() = default;
  // The "launch" event, before the sandbox starts. An error refuses the run.
  virtual Result<AuditReference> RecordLaunch(const PolicyArtifacts& artifacts, const enforcer::Sandbox& sandbox,
                                              const std::vector<std::string>& argv, const LaunchRequest& request,
                                              const std::string& run_id) = 0;
  // The run's denied-syscall, limit, breakout and exit events, then the log
  // is sealed. An error is reported in the Outcome (audit_error): the run
  // has already happened.
  virtual Status RecordOutcome(const enforcer::Outcome& outcome, pid_t sandbox_pid, const std::string& run_id) = 0;
  // The run failed after its launch event (no Outcome): an exit event that
  // says why, then the log is sealed, so that the launch never stands alone.
  virtual void RecordFailure(const Status& why, pid_t sandbox_pid, const std::string& run_id) = 0;
};

Result<std::unique_ptr<LaunchAuditLog>> OpenLaunchAuditLog(const AuditOptions& options);

// For a plan with a network allow-list (SandboxRequest::resolve_allow_list).
Result<enforcer::AllowListResolver> HostNameResolver();

// Whether the two above exec cocoon-full (the launcher) rather than return
// (cocoon-full): a sandbox child started before them would be left behind.
bool LaunchDynamicExecsFullCocoon();

}  // namespace cocoon::cli
