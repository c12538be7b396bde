// The sandbox's cgroup(s): created before the child runs untrusted code,
// measured after, killed and removed at the end.
//
// v2: one directory under our own cgroup in the unified hierarchy, with the
//     needed controllers enabled in our cgroup.subtree_control. The child can
//     be born inside it: pass clone_into_fd() to clone3 with
//     CLONE_INTO_CGROUP (no window where it runs outside the group), or call
//     AddProcess(pid) before letting the child continue.
// v1: one directory per controller (memory, pids, cpu, freezer), each under
//     our own group in that controller's hierarchy (from /proc/self/cgroup;
//     here memory:/process_api/<id>). No CLONE_INTO_CGROUP on v1: the child
//     moves itself, BEFORE it execs (so no process of the sandbox ever runs
//     unconfined, and memory charged before the move stays with us: v1 does
//     not move charges unless memory.move_charge_at_immigrate is set). It
//     writes "0" into `<name>/tasks`, opened relative to the parent
//     directories from V1ParentDirs(), which the child opens itself before
//     it builds its mount tree; so the groups can be created while the
//     child builds its namespaces (see launcher.cc). AddProcess(pid) does the
//     same from outside, at the price of an RCU grace period (see
//     V1ParentDirs).
// Either way, move the child BEFORE it unshares its cgroup namespace (i.e.
// before releasing its sync wait): a cgroup namespace is rooted at the group
// the process is in when it unshares (cgroup_namespaces(7)), so the sandbox
// then sees only its own group as "/".
//
// Usage in the core sequence:
//   v1: parents = V1ParentDirs(plan.cgroup, host); clone ...; the child
//       opens each parent; cg = Cgroup::Create(plan.cgroup, host, "run-<id>");
//       let the child go; it writes "0" to openat(parent, "run-<id>/tasks")
//   v2: cg = Cgroup::Create(...); clone3 into cg->clone_into_fd()
//   ... wait ...
//   outcome.oom_killed = cg->OomKillCount().value_or(0) > 0;
//   peak = cg->PeakMemoryBytes();
//   cg->KillAll();            // every straggler, including daemonized ones
//   cg.reset();               // rmdir (the destructor kills and removes too)
//
// Not thread-safe; one owner (the supervisor).
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/common/status.h"
#include "enforcer/limits/host_caps.h"
#include "enforcer/limits/limit_plan.h"

namespace cocoon::enforcer {

class Cgroup {
 public:
  // Creates the group(s) named `name` (a single path component, no '/') and
  // writes the limits. On any failure everything created so far is removed
  // and the Status says which file refused which value. A group that
  // already exists refuses the run (EEXIST): it is never joined, whatever
  // limits it has (names never repeat: cgroup_names.h).
  static Result<std::unique_ptr<Cgroup>> Create(const CgroupSpec& spec, const HostCapabilities& host,
                                                const std::string& name);

  Cgroup(const Cgroup&) = delete;
  Cgroup& operator=(const Cgroup&) = delete;
  // Kills every process left in the group(s), then removes the directories.
  ~Cgroup();

  CgroupVersion version() const { return version_; }

  // Moves `pid` (and only it: a fresh child has no threads yet) into every
  // group. v1: writes cgroup.procs in each controller; v2: the one group.
  Status AddProcess(pid_t pid);

  // v2 only: an O_DIRECTORY fd of the group for clone3's cgroup field
  // (CLONE_INTO_CGROUP, Linux 5.7). -1 on v1.
  int clone_into_fd() const { return v2_dir_fd_; }

  // v1 only: the directories Create() makes its groups in (one per
  // controller the spec asks for, in Create's order). The child opens them
  // (O_PATH) while it still sees the host's mount tree, and joins the groups
  // once they exist: it writes "0" into openat(fd, "<name>/tasks") for each.
  // Paths rather than fds opened here, so that a child started before the
  // limits were planned (started_child.h) can join too. The kernel checks
  // the opener's credentials (file->f_cred) for a v1 move; the child opens
  // as host root (the root caller's map, userns.h), the only caller v1 is
  // planned for.
  // Why not AddProcess(pid) from the parent: writing a pid, or any write to
  // cgroup.procs, takes the global cgroup_threadgroup_rwsem for writing, and
  // percpu_down_write waits for an RCU grace period (rcu_sync_enter): 5-17 ms
  // per launch on this host. A thread moving ITSELF through `tasks` ("0" =
  // current, not a thread group) skips that lock (kernel/cgroup/cgroup.c
  // cgroup_procs_write_start: `if (pid || threadgroup)` takes it), ~30 us.
  // The sandbox's child is single-threaded, so moving the thread moves the
  // process.
  static std::vector<std::string> V1ParentDirs(const CgroupSpec& spec, const HostCapabilities& host);

  // Peak memory of the group in bytes: v2 memory.peak (Linux 5.19),
  // v1 memory.max_usage_in_bytes. NotFound when there is no memory group.
  Result<uint64_t> PeakMemoryBytes() const;
  // "cgroup-v2 memory.peak" / "cgroup-v1 max_usage_in_bytes", for the Outcome.
  std::string PeakMemorySource() const;

  // Processes the kernel OOM-killed in this group: v2 memory.events
  // "oom_kill", v1 memory.oom_control "oom_kill" (Linux 4.13).
  Result<uint64_t> OomKillCount() const;
  // "cgroup-v2 memory.events oom_kill" / "cgroup-v1 memory.oom_control
  // oom_kill", for the Outcome's limits_reached.
  std::string OomKillSource() const;

  // Process or thread creations (fork, clone) the kernel refused at
  // pids.max: "max" in pids.events (v1 and v2). NotFound when there is no
  // pids group.
  Result<uint64_t> PidsMaxCount() const;
  std::string PidsMaxSource() const;  // "cgroup-v2 pids.events max", ...

  // Number of live processes in the group right now (cgroup.procs; zombies
  // awaiting their reaper are not counted).
  Result<uint64_t> ProcessCount() const;

  // Kills every process in the group and waits (bounded, ~2 s) until it is
  // empty. v2: cgroup.kill (Linux 5.14). v1: freeze (if a freezer group
  // exists) so nothing can fork, SIGKILL every pid in cgroup.procs, thaw,
  // repeat until empty. Returns an error if processes remain.
  Status KillAll();

  // Removes every directory (children first), calling KillAll first when a
  // group is still busy. Idempotent; the destructor calls it and ignores the
  // result.
  Status Destroy();

  // The directories created, for logs and tests.
  const std::vector<std::string>& dirs() const { return dirs_; }

 private:
  Cgroup() = default;
  using MakeDir = std::function<Result<std::string>(const CgroupHierarchy&)>;
  Status SetUpV1(const CgroupSpec& spec, const HostCapabilities& host, const MakeDir& make);
  Status SetUpV2(const CgroupSpec& spec, const HostCapabilities& host, const MakeDir& make);
  bool Empty() const;
  void KillRoundV1();

  CgroupVersion version_ = CgroupVersion::kNone;
  std::vector<std::string> dirs_;  // every directory we created
  std::string memory_dir_;         // where the memory files live ("" if none)
  std::string pids_dir_;
  std::string freezer_dir_;        // v1 only
  std::string procs_dir_;          // a dir whose cgroup.procs lists every sandbox process
  int v2_dir_fd_ = -1;
  bool destroyed_ = false;
};

}  // namespace cocoon::enforcer
