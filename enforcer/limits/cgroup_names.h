// Names of the sandbox cgroups, and the groups a dead supervisor left behind.
//
// A supervisor that is SIGKILLed (the host's OOM killer, `kill -9`, a
// crashed agent) runs none of its cleanup. Its sandbox dies with it (the
// child arms PR_SET_PDEATHSIG, child_main.cc), but its cgroups stay: only an
// rmdir removes a cgroup, v1 or v2. Two things follow:
//
//   * A name must never repeat, or a later supervisor is refused. CI hit
//     this with names made of the pid alone: a group left by a supervisor
//     killed hours earlier refused a run with "creating cgroup
//     /sys/fs/cgroup/pids/cocoon-27214-1: File exists" once the pid came
//     round again. So a name ends in 64 random bits, and Cgroup::Create
//     still refuses an existing group (it never joins one, whatever limits
//     it has).
//   * The groups pile up (each v1 memory group also pins kernel memory), so
//     about one run in 16 removes the abandoned ones (SweepAbandonedCgroups).
//
// A name is "cocoon-<pid namespace inode>-<supervisor pid>-<16 hex digits>".
// The pid says whose group it is, and the pid namespace where that pid
// means something: two supervisors in two containers that share a host's
// cgroupfs can both be pid 7.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "enforcer/limits/host_caps.h"

namespace cocoon::enforcer {

// A fresh name for one sandbox group of this process.
std::string SandboxCgroupName();

// The parts of a sandbox group name; `valid` is false for any other name
// (the host's own groups, other tools', older cocoon names).
struct SandboxCgroupOwner {
  bool valid = false;
  uint64_t pid_namespace = 0;
  pid_t pid = 0;
};
SandboxCgroupOwner ParseSandboxCgroupName(std::string_view name);

// The inode of this process's pid namespace (/proc/self/ns/pid), 0 if it
// cannot be read.
uint64_t OwnPidNamespace();

// Every directory this host's sandbox groups can be made in: the mounted v1
// memory, pids, cpu and freezer hierarchies and v2 (each at our own group).
std::vector<std::string> AllSandboxCgroupParents(const HostCapabilities& host);

// The abandoned sandbox groups directly under each of `parent_dirs`: those
// named by SandboxCgroupName in this pid namespace whose supervisor pid no
// longer exists. `cocoon doctor` reports them.
std::vector<std::string> FindAbandonedCgroups(const std::vector<std::string>& parent_dirs);

// Removes the groups FindAbandonedCgroups finds. Only rmdir, which the
// kernel refuses for a group that holds a process or a child group. A group
// whose supervisor lives is never touched, and a pid reused since cannot
// make one look abandoned: its new owner's groups carry other random
// suffixes. Best effort: returns how many groups were removed.
size_t SweepAbandonedCgroups(const std::vector<std::string>& parent_dirs);

}  // namespace cocoon::enforcer
