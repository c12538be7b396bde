// Internal to the enforcer: the state one Sandbox carries from Prepare
// (sandbox.cc) to Run (launcher.cc).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "enforcer/child_spec_builder.h"
#include "enforcer/limits/cgroup.h"
#include "enforcer/limits/host_caps.h"
#include "enforcer/limits/limit_plan.h"
#include "enforcer/sandbox.h"
#include "enforcer/userns.h"
#include "enforcer/workdir/staging.h"

namespace cocoon::enforcer {

class Sandbox::Impl {
 public:
  SandboxRequest request;
  HostCapabilities host;
  IdMaps id_maps;
  LimitPlan limit_plan;
  std::unique_ptr<Cgroup> cgroup;
  std::unique_ptr<Staging> staging;
  std::unique_ptr<PreparedChild> child;
  std::vector<std::string> namespaces;
  int landlock_abi = 0;
  bool uses_listener = false;
  pid_t pid = -1;
  bool ran = false;

  Status PrepareAll();
  Result<Outcome> RunOnce();
  // After execve: supervise, verify and commit the work dir, build the Outcome.
  Result<Outcome> SuperviseAndFinish(std::chrono::steady_clock::time_point start, int pidfd, int stdout_fd,
                                     int stderr_fd, int listener_fd, int signal_fd);
};

}  // namespace cocoon::enforcer
