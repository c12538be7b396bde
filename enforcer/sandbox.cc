// Sandbox::Prepare and Sandbox::Run: the parent's side of the launch.
//
// Prepare: plan/BPF validation, limit planning and cgroup creation, work dir
// staging, the inputs of the child's spec. The sandbox's first process may
// exist already, waiting in its namespaces (SandboxRequest::started_child,
// started_child.h); nothing of the command runs before Run releases it.
// Run: the started child adopted if it fits, else pipes, spec arena ->
// clone3(CLONE_NEWUSER|NEWPID, CLONE_PIDFD) (the child unshares
// NEWNS|NEWUTS|NEWIPC[|NEWNET] itself) -> the child's flat
// spec, built and placed in the arena meanwhile -> uid/gid maps -> sync
// byte -> cgroup -> work dir handshake -> seccomp listener handoff -> wait
// for execve (error pipe EOF) -> supervise -> verify and commit -> Outcome.
// Every exit path kills the sandbox and removes the cgroup and staging (RAII).
#include "enforcer/sandbox.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "compiler/common/digest.h"
#include "enforcer/child_spec_builder.h"
#include "enforcer/landlock.h"
#include "enforcer/notify.h"
#include "enforcer/sandbox_impl.h"
#include "enforcer/limits/cgroup.h"
#include "enforcer/limits/cgroup_names.h"
#include "enforcer/sweep_sampler.h"
#include "enforcer/limits/host_caps.h"
#include "enforcer/limits/limit_plan.h"
#include "enforcer/seccomp_loader.h"
#include "enforcer/supervisor.h"
#include "enforcer/userns.h"
#include "enforcer/workdir/host_mounts.h"
#include "enforcer/workdir/host_path.h"
#include "enforcer/workdir/scratch_dir.h"

namespace cocoon::enforcer {

CancelHandle::CancelHandle() : event_fd_(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) {}
CancelHandle::~CancelHandle() {
  if (event_fd_ >= 0) close(event_fd_);
}
void CancelHandle::Cancel() {
  cancelled_.store(true);
  uint64_t one = 1;
  if (event_fd_ >= 0) {
    ssize_t ignored = write(event_fd_, &one, sizeof(one));
    (void)ignored;
  }
}

namespace {

ir::Limits LimitsFromPlan(const backends::LaunchPlan& plan) {
  ir::Limits limits;
  for (const auto& l : plan.limits) {
    ir::Limit limit{true, l.value, l.required ? ir::Enforcement::kRequired : ir::Enforcement::kBestEffort};
    if (l.name == "wall_time") limits.wall_time_ms = limit;
    else if (l.name == "cpu_time") limits.cpu_time_ms = limit;
    else if (l.name == "memory") limits.memory_bytes = limit;
    else if (l.name == "processes") limits.processes = limit;
    else if (l.name == "open_files") limits.open_files = limit;
    else if (l.name == "file_size") limits.file_size_bytes = limit;
    else if (l.name == "disk") limits.disk_bytes = limit;
    else if (l.name == "output") limits.output_bytes = limit;
    else if (l.name == "cpu") limits.cpu_percent = limit;
  }
  // The work dir's quota is a disk limit too, and the stricter of the two
  // holds: the size of the work dir's tmpfs (staged, or no host work dir),
  // or RLIMIT_FSIZE for a direct host work dir (before, a direct work dir's
  // quota was reported but never applied).
  if (plan.work_quota_bytes != 0 && (!limits.disk_bytes.set || plan.work_quota_bytes < limits.disk_bytes.value)) {
    limits.disk_bytes = ir::Limit{true, plan.work_quota_bytes, ir::Enforcement::kRequired};
  }
  return limits;
}

int RlimitResource(const std::string& name) {
  if (name == "RLIMIT_CORE") return RLIMIT_CORE;
  if (name == "RLIMIT_RTPRIO") return RLIMIT_RTPRIO;
  if (name == "RLIMIT_NOFILE") return RLIMIT_NOFILE;
  if (name == "RLIMIT_FSIZE") return RLIMIT_FSIZE;
  if (name == "RLIMIT_CPU") return RLIMIT_CPU;
  if (name == "RLIMIT_NPROC") return RLIMIT_NPROC;
  if (name == "RLIMIT_AS") return RLIMIT_AS;
  if (name == "RLIMIT_DATA") return RLIMIT_DATA;
  return -1;
}

// The Outcome row of the limit an rlimit enforces, or nullptr.
LimitEnforcement* RowOf(int resource, std::vector<LimitEnforcement>& table) {
  const char* name = resource == RLIMIT_NOFILE ? "open_files"
                     : resource == RLIMIT_FSIZE ? "file_size"
                     : resource == RLIMIT_CPU   ? "cpu_time"
                                                : nullptr;
  if (name == nullptr) return nullptr;
  for (LimitEnforcement& row : table) {
    if (row.limit == name) return &row;
  }
  return nullptr;
}

// The plan's rlimits merged into the limit planner's, the stricter of the
// two winning (as Planner::AddRlimit merges its own requests), clamped to
// our own hard limits. A plan value that wins is said in its Outcome row:
// before, a plan rlimit the planner had set was dropped, so a compiled
// RLIMIT_FSIZE of 1 MiB ran as the planner's 16 GiB.
Status MergePlanRlimits(const backends::LaunchPlan& plan, LimitPlan& limit_plan) {
  RlimitSet& set = limit_plan.rlimits;
  for (const auto& r : plan.rlimits) {
    int resource = RlimitResource(r.resource);
    if (resource < 0) return InvalidArgumentError("unknown rlimit " + r.resource + " in the launch plan");
    struct rlimit current {};
    getrlimit(resource, &current);
    rlim_t hard = std::min<rlim_t>(static_cast<rlim_t>(r.hard), current.rlim_max);
    rlim_t soft = std::min<rlim_t>(static_cast<rlim_t>(r.soft), hard);
    RlimitEntry* entry = nullptr;
    for (size_t i = 0; i < set.count; ++i) {
      if (set.entries[i].resource == resource) entry = &set.entries[i];
    }
    if (entry == nullptr) {
      if (set.count >= RlimitSet::kMax) return InternalError("too many rlimits");
      set.entries[set.count++] = RlimitEntry{resource, {soft, hard}};
      continue;
    }
    if (soft >= entry->value.rlim_cur && hard >= entry->value.rlim_max) continue;
    entry->value.rlim_cur = std::min(entry->value.rlim_cur, soft);
    entry->value.rlim_max = std::min(entry->value.rlim_max, hard);
    if (LimitEnforcement* row = RowOf(resource, limit_plan.table)) {
      row->note += (row->note.empty() ? "" : "; ") + std::string("the launch plan's stricter ") + r.resource + " " +
                   std::to_string(entry->value.rlim_cur) + " applies";
    }
  }
  return Status::Ok();
}

// The empty directory each run's new root tmpfs is mounted on (in the
// child's private mount namespace only; on the host it stays empty, so all
// runs of one user share it). Refused if someone else could have planted it.
Result<std::string> NewRootDir() {
  COCOON_ASSIGN_OR_RETURN(std::string base, PrivateStateDir());
  return EnsurePrivateDir(base + "/root", 0755);
}

}  // namespace

Status Sandbox::Impl::PrepareAll() {
  const auto& plan = request.plan;
  if (request.argv.empty() || request.argv[0].empty()) return InvalidArgumentError("missing command: nothing to run");
  if (!plan.seccomp_sha256.empty() && Sha256Hex(request.seccomp_bpf) != plan.seccomp_sha256) {
    return DataLossError("seccomp program does not match the launch plan's sha256 " + plan.seccomp_sha256);
  }
  COCOON_ASSIGN_OR_RETURN(std::vector<sock_filter> program, ValidateSeccompProgram(request.seccomp_bpf));
  uses_listener = ProgramUsesUserNotif(program);

  id_maps = PlanIdMaps(plan.uid, plan.gid);
  COCOON_ASSIGN_OR_RETURN(host, DetectHostCapabilities());
  host.sandbox_host_uid = id_maps.sandbox_host_uid;
  host.sandbox_in_user_namespace = true;
  LimitPlanOptions options;
  options.work_mode = plan.work_mode;
  options.work_source = request.work_host_dir.empty() ? WorkDirSource::kTmpfsOnly : WorkDirSource::kHostDir;
  options.network = plan.network;
  options.hard_limits = CurrentHardLimits();
  COCOON_ASSIGN_OR_RETURN(limit_plan, PlanLimits(LimitsFromPlan(plan), host, options));
  COCOON_RETURN_IF_ERROR(MergePlanRlimits(plan, limit_plan));
  if (limit_plan.cgroup.version != CgroupVersion::kNone) {
    // Never repeats, across threads (`cocoon mcp` prepares sandboxes on
    // several at once) and across processes that get the same pid
    // (cgroup_names.h).
    cgroup_name = SandboxCgroupName();
    const bool v1 = limit_plan.cgroup.version == CgroupVersion::kV1;
    // The directory scans cost ~50 us for the four v1 hierarchies on this
    // host (measured), amortised over the runs.
    static SweepSampler cgroup_sweeps;
    if (cgroup_sweeps.ShouldSweepNow()) {
      SweepAbandonedCgroups(v1 ? Cgroup::V1ParentDirs(limit_plan.cgroup, host)
                               : std::vector<std::string>{host.v2.Dir()});
    }
    if (v1) {
      // Created in RunOnce, while the child builds its namespaces; the child
      // opens the directories they go in and joins them by name.
      cgroup_v1_parent_dirs = Cgroup::V1ParentDirs(limit_plan.cgroup, host);
    } else {
      COCOON_ASSIGN_OR_RETURN(cgroup, Cgroup::Create(limit_plan.cgroup, host, cgroup_name));
    }
  }

  std::vector<ir::Copy> copies = plan.copies;
  copies.insert(copies.end(), request.extra_copies.begin(), request.extra_copies.end());
  // A copy reads through every mount below its source, and a direct work
  // dir is bound with its submounts: neither may bring the host's kernel
  // interfaces along (workdir/host_mounts.h), as no bind may.
  for (const ir::Copy& copy : copies) {
    auto source = ResolveHostPath(copy.source);
    if (!source.ok()) continue;  // Staging reports it, with its context
    if (std::string shown = HostInterfaceShownBy(host.interface_mounts, *source); !shown.empty()) {
      return InvalidArgumentError("the copy of " + copy.source + " (" + *source + ") " + shown +
                                  ", which the copy would read from and hand to the sandbox; unmount it, or copy a "
                                  "directory that holds none");
    }
  }
  if (!request.work_host_dir.empty()) {
    auto work = ResolveHostPath(request.work_host_dir);
    if (work.ok()) {
      if (std::string shown = HostInterfaceShownBy(host.interface_mounts, *work); !shown.empty()) {
        return InvalidArgumentError("the work dir " + request.work_host_dir + " (" + *work + ") " + shown +
                                    ", which the sandbox would see there; unmount it, or choose another work dir");
      }
    }
  }
  if (!request.work_host_dir.empty()) {
    StagingOptions staging_options;
    staging_options.host_dir = request.work_host_dir;
    staging_options.mode = plan.work_mode;
    staging_options.quota_bytes = limit_plan.disk_tmpfs_bytes != 0 ? limit_plan.disk_tmpfs_bytes : plan.work_quota_bytes;
    staging_options.copies = copies;
    staging_options.after_commit_install_step_for_test = request.after_commit_install_step_for_test;
    const std::string inside = plan.work_path + "/";
    for (const backends::PlanMount& mount : plan.mounts) {
      if (mount.target.size() > inside.size() && mount.target.compare(0, inside.size(), inside) == 0) {
        staging_options.inner_mount_points.push_back(mount.target.substr(inside.size()));
      }
    }
    if (id_maps.caller_is_root) {
      // The sandbox runs as host 65534 (userns.h): its work dir must be its own.
      staging_options.sandbox_host_uid = id_maps.sandbox_host_uid;
      staging_options.sandbox_host_gid = id_maps.sandbox_host_gid;
    }
    COCOON_ASSIGN_OR_RETURN(staging, Staging::Prepare(staging_options));
  } else if (!copies.empty()) {
    return InvalidArgumentError("files to copy into the work dir need a host work dir (--work DIR)");
  }

  // Opened (and their change floors taken) before the sandbox exists, so
  // that everything it does there is seen as its doing after the run.
  std::vector<WritableBindSource> writable;
  for (const backends::PlanMount& mount : plan.mounts) {
    if (mount.kind == backends::PlanMountKind::kBindWritable) writable.push_back({mount.source, mount.target});
  }
  if (!writable.empty()) writable_binds = WritableBinds::Prepare(writable);

  landlock_abi = LandlockAbi();
  COCOON_ASSIGN_OR_RETURN(std::string new_root, NewRootDir());
  std::vector<backends::PlanMount> extra_mounts;
  if (plan.network == ir::NetworkMode::kAllowList) {
    COCOON_RETURN_IF_ERROR(PrepareNetworkAllowList(new_root.substr(0, new_root.rfind('/')), extra_mounts));
  }
  // The child's spec itself (realpath of every bind source and the like) is
  // built in RunOnce, after clone, while the child creates its namespaces.
  child_inputs.plan = &request.plan;
  child_inputs.argv = request.argv;
  child_inputs.work_spec = staging ? &staging->child_spec() : nullptr;
  child_inputs.new_root = new_root;
  child_inputs.rlimits = limit_plan.rlimits;
  child_inputs.work_tmpfs_bytes = limit_plan.disk_tmpfs_bytes;
  child_inputs.landlock_abi = landlock_abi;
  child_inputs.seccomp = std::move(program);
  child_inputs.seccomp_listener = uses_listener;
  child_inputs.drop_supplementary_groups = id_maps.caller_is_root;
  child_inputs.extra_mounts = std::move(extra_mounts);
  child_inputs.passed_values = request.passed_values;
  child_inputs.interface_mounts = host.interface_mounts;

  namespaces = plan.namespaces;
  if (request.stdin_mode == StdinMode::kData) {
    // In memory (memfd), relayed through a pipe: never a host file, and the
    // sandbox gets a pipe, not a file it could seek or reopen.
    stdin_data_file.Reset(memfd_create("cocoon-stdin", MFD_CLOEXEC));
    if (stdin_data_file.get() < 0) return ErrnoError("memfd for the sandbox's stdin");
    for (size_t done = 0; done < request.stdin_data.size();) {
      ssize_t n = write(stdin_data_file.get(), request.stdin_data.data() + done, request.stdin_data.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoError("writing the sandbox's stdin");
      done += static_cast<size_t>(n);
    }
    if (lseek(stdin_data_file.get(), 0, SEEK_SET) != 0) return ErrnoError("rewinding the sandbox's stdin");
  }
  return Status::Ok();
}

Status Sandbox::Impl::BuildChildSpec(ChildSpecArena& arena, ListenerHandoff* handoff, int work_sock,
                                     int broker_sock) {
  COCOON_ASSIGN_OR_RETURN(child, PreparedChild::Build(std::move(child_inputs)));
  // The child binds each writable source only if it is the inode the spec
  // stat()ed (mounts.cc); that inode must be one PrepareAll opened, or the
  // scan after the run would read another tree than the one written.
  for (size_t i = 0; i < child->mounts().size(); ++i) {
    const ChildMountOp& op = child->mounts()[i];
    if (!BindsHostWritable(op)) continue;
    if (!writable_binds || !writable_binds->Covers(op.source_dev, op.source_ino)) {
      return FailedPreconditionError(child->DescribeMount(static_cast<int>(i)) +
                                     ": its source changed while the run was prepared, so it could not be verified "
                                     "after the run; nothing ran. Try again, and do not replace it meanwhile");
    }
  }
  ChildSpec& spec = child->spec();
  spec.work_sock = work_sock;
  spec.broker_sock = broker_sock;
  spec.parent_pid = getpid();
  spec.handoff = handoff;
  spec.unshare_cgroup = true;
  // Place() copies what these point to, so they need live only until then.
  std::vector<char*> v1_parent_dirs;
  for (std::string& dir : cgroup_v1_parent_dirs) v1_parent_dirs.push_back(dir.data());
  v1_parent_dirs.push_back(nullptr);
  std::string v1_tasks_path = cgroup_name + "/tasks";
  spec.cgroup_parent_dirs = v1_parent_dirs.data();
  spec.cgroup_parent_count = cgroup_v1_parent_dirs.size();
  spec.cgroup_tasks_path = v1_tasks_path.c_str();
  return arena.Place(spec);
}

OwnedFile::~OwnedFile() {
  if (!path_.empty()) unlink(path_.c_str());
}

Status Sandbox::Impl::PrepareNetworkAllowList(const std::string& hosts_dir,
                                              std::vector<backends::PlanMount>& extra_mounts) {
  // The broker only sees connects the filter sends to the listener as
  // "notify" (ConnectRouting::kSupervisor). Without that, connects would
  // still fail closed in the namespace, but the policy would silently not
  // work: refuse instead (e.g. artifacts compiled by an older cocoon).
  auto table = ParseSeccompSidecar(request.seccomp_sidecar_json);
  bool routed = table.ok() && (table->default_rule.action == SupervisedAction::kNotify ||
                               std::any_of(table->rules.begin(), table->rules.end(), [](const SupervisedRule& r) {
                                 return r.number == SYS_connect && r.action == SupervisedAction::kNotify;
                               }));
  if (!uses_listener || !routed) {
    return FailedPreconditionError("network allow-list: the seccomp program does not route connect(2) to the "
                                   "supervisor (SECCOMP_RET_USER_NOTIF); recompile the policy with this cocoon");
  }
  // The broker takes the connecting socket with pidfd_getfd (Linux 5.6) and
  // answers loopback connects with SECCOMP_USER_NOTIF_FLAG_CONTINUE (5.5).
  // Probe pidfd_getfd: EBADF on a bad pidfd means it exists.
  if (syscall(SYS_pidfd_getfd, -1, 0, 0) < 0 && errno == ENOSYS) {
    return FailedPreconditionError("network allow-list needs pidfd_getfd(2) (Linux 5.6+); this kernel lacks it");
  }
  if (request.resolve_allow_list == nullptr) {
    return FailedPreconditionError("network allow-list: this launch has no host name resolver "
                                   "(SandboxRequest::resolve_allow_list); refusing to run without the allow-list");
  }
  COCOON_ASSIGN_OR_RETURN(ResolvedAllowList resolved, request.resolve_allow_list(request.plan.network_allow));
  allow_list = std::make_unique<ResolvedAllowList>(std::move(resolved));
  // The names resolved here are what the sandbox resolves too: a generated
  // /etc/hosts, bound read-only over the policy's (the sandbox has no DNS).
  std::string path = hosts_dir + "/hosts-XXXXXX";
  int fd = mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) return ErrnoError("mkstemp " + path);
  hosts_file = std::make_unique<OwnedFile>(path);
  std::string text = allow_list->HostsFile(request.plan.hostname);
  bool written = fchmod(fd, 0644) == 0 && write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!written) return ErrnoError("writing " + path);
  backends::PlanMount hosts;
  hosts.kind = backends::PlanMountKind::kBindReadOnly;
  hosts.source = path;
  hosts.target = "/etc/hosts";
  extra_mounts.push_back(std::move(hosts));
  return Status::Ok();
}

Sandbox::Sandbox(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Sandbox::~Sandbox() = default;

Result<std::unique_ptr<Sandbox>> Sandbox::Prepare(SandboxRequest request) {
  auto impl = std::make_unique<Impl>();
  impl->request = std::move(request);
  COCOON_RETURN_IF_ERROR(impl->PrepareAll());
  return std::unique_ptr<Sandbox>(new Sandbox(std::move(impl)));
}

const std::vector<LimitEnforcement>& Sandbox::limits() const { return impl_->limit_plan.table; }
int Sandbox::landlock_abi() const { return impl_->landlock_abi; }
const std::vector<std::string>& Sandbox::namespaces() const { return impl_->namespaces; }
uid_t Sandbox::sandbox_host_uid() const { return impl_->id_maps.sandbox_host_uid; }
pid_t Sandbox::pid() const { return impl_->pid; }

Result<Outcome> Sandbox::Run() {
  if (impl_->ran) return FailedPreconditionError("a Sandbox runs once; Prepare a new one");
  impl_->ran = true;
  auto result = impl_->RunOnce();
  // Whatever happened: no process of the sandbox may survive, no cgroup or
  // staging directory may be left behind.
  if (impl_->cgroup) {
    (void)impl_->cgroup->Destroy();
    impl_->cgroup.reset();
  }
  impl_->staging.reset();
  impl_->broker.reset();
  impl_->hosts_file.reset();
  return result;
}

Result<Outcome> RunSandbox(SandboxRequest request) {
  COCOON_ASSIGN_OR_RETURN(auto sandbox, Sandbox::Prepare(std::move(request)));
  return sandbox->Run();
}

}  // namespace cocoon::enforcer
