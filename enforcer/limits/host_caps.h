// What the host offers for enforcing resource limits: the cgroup layout
// (v2 unified, v1 per-controller hierarchies, or both, as on this machine),
// where the calling process sits in each hierarchy, and whether it may create
// child groups there.
//
// Detection reads /proc/self/mountinfo and /proc/self/cgroup once, in the
// parent, in Sandbox::Prepare (before clone, or while a child started early
// waits: started_child.h). The planner (limit_plan.h) is a pure function of the
// result, so tests can describe any host (pure v2, delegated v2, v1 as root,
// rootless without cgroups) with a hand-built HostCapabilities.
#pragma once

#include <sys/types.h>

#include <string>

#include "compiler/common/status.h"
#include "enforcer/workdir/host_mounts.h"

namespace cocoon::enforcer {

enum class Privilege {
  kRoot,          // effective uid 0 in the initial user namespace
  kUnprivileged,
};

// One cgroup hierarchy we might create a group in.
struct CgroupHierarchy {
  bool mounted = false;   // the hierarchy (or v1 controller) is mounted
  std::string mount;      // e.g. "/sys/fs/cgroup/memory" or "/sys/fs/cgroup"
  std::string own_path;   // our cgroup inside it, from /proc/self/cgroup, e.g. "/process_api/af03"
  bool writable = false;  // we may mkdir under mount+own_path (root, or delegated to us)

  // mount + own_path, the directory child groups are created in.
  std::string Dir() const;
};

struct HostCapabilities {
  Privilege privilege = Privilege::kUnprivileged;
  // The host uid the sandbox's processes will run as (the uid the user
  // namespace maps the sandbox user to), and whether they run in a fresh user
  // namespace. RLIMIT_NPROC is not enforced for processes charged to
  // init_ucounts (host uid 0 in the initial user namespace; kernel/fork.c
  // copy_process), so without a user namespace it is useless for root. In a
  // fresh user namespace (Linux >= 5.14 ucounts) it counts the (namespace,
  // uid) pair: exactly the sandbox's processes.
  uid_t sandbox_host_uid = 0;
  bool sandbox_in_user_namespace = true;

  // cgroup v2 (the unified hierarchy). `v2_*` say which controllers are
  // usable *for a child group of ours*: listed in our cgroup.controllers and
  // (or enable-able in) our cgroup.subtree_control.
  CgroupHierarchy v2;
  bool v2_memory = false;
  bool v2_pids = false;
  bool v2_cpu = false;

  // cgroup v1, one hierarchy per controller. On this machine all four are
  // mounted at /sys/fs/cgroup/<controller>.
  CgroupHierarchy v1_memory;
  CgroupHierarchy v1_pids;
  CgroupHierarchy v1_cpu;
  CgroupHierarchy v1_freezer;  // used by Cgroup::KillAll to stop fork races
  bool v1_memsw = false;       // memory.memsw.limit_in_bytes exists (swap accounting on)
  bool v1_kmem_tcp = false;    // memory.kmem.tcp.limit_in_bytes exists (socket buffer accounting)

  // The mounts no bind may carry into a sandbox (workdir/host_mounts.h),
  // from the same read of /proc/self/mountinfo.
  std::vector<HostInterfaceMount> interface_mounts;
};

// Reads /proc/self/mountinfo and /proc/self/cgroup. Never fails because a
// cgroup feature is missing (that is a fact about the host, recorded as
// `mounted = false` / `writable = false`); fails only when /proc is unreadable.
Result<HostCapabilities> DetectHostCapabilities();

// A cheap question for a caller deciding before the limits are planned: does
// a cgroup v2 hierarchy where systemd mounts it (/sys/fs/cgroup, or
// /sys/fs/cgroup/unified on hybrid hosts) offer a controller the planner
// uses (memory, pids, cpu)? On this machine's hybrid layout it offers only
// hugetlb: no.
// When true, a run may be planned into a v2 group and must then be born in
// it (CLONE_INTO_CGROUP), so its child cannot be started before the plan
// (started_child.h). A statfs and at most one small read instead of the
// mountinfo walk.
bool CgroupV2ControllersMayBeInUse();

// Parsers behind DetectHostCapabilities, exposed for tests.
// `mountinfo` is the text of /proc/self/mountinfo, `proc_cgroup` of
// /proc/self/cgroup. Writability and controller files are not probed here.
HostCapabilities ParseCgroupLayout(std::string_view mountinfo, std::string_view proc_cgroup);

}  // namespace cocoon::enforcer
