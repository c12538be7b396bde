// Internal to the enforcer: the state one Sandbox carries from Prepare
// (sandbox.cc) to Run (launcher.cc).
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "enforcer/child_spec_arena.h"
#include "enforcer/child_spec_builder.h"
#include "enforcer/limits/cgroup.h"
#include "enforcer/limits/host_caps.h"
#include "enforcer/limits/limit_plan.h"
#include "enforcer/net_allow.h"
#include "enforcer/net_broker.h"
#include "enforcer/notify.h"
#include "enforcer/sandbox.h"
#include "enforcer/userns.h"
#include "enforcer/workdir/staging.h"
#include "enforcer/workdir/writable_binds.h"

namespace cocoon::enforcer {

class OutputCapture;  // supervisor.h
class StartedChild;   // started_child.h

// A file the run owns on the host, unlinked when the run is over.
class OwnedFile {
 public:
  OwnedFile() = default;
  explicit OwnedFile(std::string path) : path_(std::move(path)) {}
  ~OwnedFile();
  OwnedFile(const OwnedFile&) = delete;
  OwnedFile& operator=(const OwnedFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class Sandbox::Impl {
 public:
  SandboxRequest request;
  HostCapabilities host;
  IdMaps id_maps;
  LimitPlan limit_plan;
  std::unique_ptr<Cgroup> cgroup;  // v1: created in RunOnce, after clone
  std::string cgroup_name;
  std::vector<std::string> cgroup_v1_parent_dirs;  // Cgroup::V1ParentDirs
  std::unique_ptr<Staging> staging;
  // The plan's writable binds, opened before the run and verified after it
  // (workdir/writable_binds.h); null without any.
  std::unique_ptr<WritableBinds> writable_binds;
  ChildSpecInputs child_inputs;            // PrepareAll -> BuildChildSpec
  std::unique_ptr<PreparedChild> child;    // built in RunOnce, after clone
  std::vector<std::string> namespaces;
  int landlock_abi = 0;
  bool uses_listener = false;
  // Network allow-lists only (sandbox.cc PrepareNetworkAllowList).
  std::unique_ptr<ResolvedAllowList> allow_list;
  std::unique_ptr<OwnedFile> hosts_file;
  std::unique_ptr<NetBroker> broker;  // created in RunOnce from the child's listener
  // Answers the listener's notifications: from the handoff on, since the
  // command's own execve may be routed to it (a `log execve` rule).
  std::unique_ptr<NotifyResponder> responder;
  OwnedFd stdin_data_file;  // StdinMode::kData: a memfd with request.stdin_data, relayed to the child
  pid_t pid = -1;
  bool ran = false;
  // This process's getrusage ru_maxrss (KiB) once the error pipe closed
  // (the child exec'd, or died): the high-water RSS of the memory the child
  // ran in until its execve, when it shared it (memory_sharing_clone.h), or
  // that its fork-style copy started from. finish.cc tells cocoon's part of
  // wait4's maxrss from the command's with it.
  long launcher_maxrss_after_exec_kib = 0;

  Status PrepareAll();
  // Resolves the allow-list and writes the sandbox's /etc/hosts; fails
  // closed when the kernel lacks what the broker needs.
  Status PrepareNetworkAllowList(const std::string& hosts_dir, std::vector<backends::PlanMount>& extra_mounts);
  // Builds `child` from child_inputs, fills in the parent-side fields (the
  // child's socketpair ends, the listener page, the v1 groups) and places
  // the spec in `arena` for the child (child_spec_arena.h).
  Status BuildChildSpec(ChildSpecArena& arena, ListenerHandoff* handoff, int work_sock, int broker_sock);
  Result<Outcome> RunOnce();
  // After execve (finish.cc): supervise, verify and commit the work dir,
  // build the Outcome. `failure` not ok: the launch failed after the command
  // had started, so there is nothing to supervise. Whatever fails from here
  // on, the sandbox is killed, and once all of it is gone a direct work dir
  // and the writable binds are verified; the Outcome says what failed.
  Result<Outcome> SuperviseAndFinish(StartedChild& started, std::chrono::steady_clock::time_point start,
                                     int listener_fd, Status failure);
  // Supervises the run to its end and fills in how it ended and what it cost.
  Status SuperviseAndMeasure(StartedChild& started, std::chrono::steady_clock::time_point start, int listener_fd,
                             OutputCapture& out, OutputCapture& err, Outcome& outcome);
  // The output, the limits and what the policy and the supervisor recorded.
  void DescribeRun(OutputCapture& out, OutputCapture& err, Outcome& outcome);
  // The work dir's verification (and a staged commit, if the run finished
  // on its own), after every process of the sandbox is gone.
  void VerifyWorkDir(int signal_fd, Outcome& outcome);
};

}  // namespace cocoon::enforcer
