// Parent side: turns a LaunchPlan into the flat ChildSpec the child follows.
// All host lookups (realpath of bind sources, file-or-directory, does the
// mount point exist inside a read-only bind) happen here, before clone, so
// that the child only replays syscalls and every mistake is a clear message.
#pragma once

#include <linux/filter.h>

#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "compiler/backends/plan/launch_plan.h"
#include "compiler/common/status.h"
#include "enforcer/child_spec.h"
#include "enforcer/workdir/host_mounts.h"
#include "enforcer/workdir/host_path.h"

namespace cocoon::enforcer {

struct ChildSpecInputs {
  const backends::LaunchPlan* plan = nullptr;
  std::vector<std::string> argv;
  const WorkMountChildSpec* work_spec = nullptr;  // staged work dir, or nullptr: a tmpfs
  std::string new_root;                           // empty host dir for the new root tmpfs
  RlimitSet rlimits;
  int landlock_abi = 0;
  std::vector<sock_filter> seccomp;
  bool seccomp_listener = false;
  bool drop_supplementary_groups = false;
  // Size of the work dir's tmpfs when there is no host work dir (work_spec
  // null): the limit plan's disk_tmpfs_bytes (the disk limit and the work
  // quota, the stricter), else the plan's quota, else the default.
  uint64_t work_tmpfs_bytes = 0;
  uint64_t default_work_tmpfs_bytes = 64ull << 20;
  // Mounts the enforcer adds after the plan's own (the allow-list's
  // generated /etc/hosts, read-only).
  std::vector<backends::PlanMount> extra_mounts;
  // Values for the plan's `pass` names, ahead of this process's environ
  // (SandboxRequest::passed_values).
  std::map<std::string, std::string> passed_values;
  // The host's kernel-interface mounts (HostCapabilities::interface_mounts):
  // a bind whose source holds one is refused.
  std::vector<HostInterfaceMount> interface_mounts;
};

// Whether `op` binds a host directory or file writable into the sandbox (a
// plan's `writable` bind): every other bind is read-only.
bool BindsHostWritable(const ChildMountOp& op);

class PreparedChild {
 public:
  static Result<std::unique_ptr<PreparedChild>> Build(ChildSpecInputs inputs);

  // The pointers inside stay valid as long as this object lives. The caller
  // fills in the fd fields and parent_pid, then copies it into the child's
  // arena (Sandbox::Impl::BuildChildSpec, after clone).
  ChildSpec& spec() { return spec_; }
  const std::vector<ChildMountOp>& mounts() const { return mounts_; }
  const std::vector<std::string>& env() const { return env_strings_; }
  const std::vector<std::string>& exec_candidates() const { return exec_strings_; }

  // For error messages: "mount #3 (bind /usr -> /usr)".
  std::string DescribeMount(int index) const;
  std::string DescribeLandlockRule(int index) const;

 private:
  PreparedChild() = default;
  Status AddMounts();
  Status AddRootfsEntries();
  Status AddMount(const backends::PlanMount& mount);
  // Appends `op` for inside path `target`, telling the child which of its
  // ancestors earlier ops made (existing_parent_len).
  void PushOp(ChildMountOp op, const std::string& target, std::string description);
  // Whether `target` lies in a host directory an earlier op bound (then
  // the child opens it without following symlinks and creates nothing).
  bool InsideBoundHostDirectory(const std::string& target) const;
  bool TargetHasMountsBelow(const std::string& target) const;
  bool TargetIsHidden(const std::string& target) const;
  // The mask op for a `hide` (kMask) at `mount.target`; false when there is
  // nothing there to hide.
  Result<bool> PrepareMask(const backends::PlanMount& mount, const std::pair<std::string, std::string>* parent_bind,
                           ChildMountOp& op);
  // Masks every other name a bind gives a hidden host path (the /usr bind
  // shows /bin/cat as /usr/bin/cat on a merged-/usr host), after every bind.
  Status AddAliasMasks();
  void AddLandlockRules();
  void BuildEnvironment();
  void BuildExec();
  const char* Keep(std::string text);

  ChildSpecInputs inputs_;
  std::deque<std::string> strings_;  // stable addresses for every const char*
  std::vector<ChildMountOp> mounts_;
  std::vector<std::string> mount_descriptions_;
  std::vector<std::pair<std::string, bool>> mounted_targets_;  // inside path, is_dir
  std::set<std::string> symlink_targets_;  // targets made as symlinks (kSymlink ops)
  std::vector<std::pair<std::string, std::string>> binds_;     // inside target -> host source (real)
  std::vector<std::pair<std::string, std::string>> hidden_hosts_;  // hidden inside path -> its real host path
  std::set<std::string> masked_targets_;                           // inside paths a mask op covers
  std::vector<std::string> rootfs_symlinks_;                    // inside paths of `root rootfs` symlinks
  std::set<std::string> existing_dirs_{"/"};                    // inside dirs the ops so far make or mount
  std::vector<ChildLandlockRule> landlock_;
  HostPathResolver resolver_;  // every host path of this spec, each component looked up once
  std::vector<std::string> env_strings_;
  std::vector<char*> envp_;
  std::vector<std::string> argv_strings_;
  std::vector<char*> argv_;
  std::vector<std::string> exec_strings_;
  std::vector<const char*> exec_candidates_;
  sock_fprog seccomp_prog_{};
  ChildSpec spec_;
};

}  // namespace cocoon::enforcer
