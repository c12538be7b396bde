// Names of the sandbox cgroups, and the groups a dead supervisor left behind.
//
// A supervisor that is SIGKILLed (the host's OOM killer, `kill -9`, a
// crashed agent) runs none of its cleanup. Its sandbox dies with it (the
// child arms PR_SET_PDEATHSIG, child_main.cc), but its cgroups stay: v1
// groups, and v2 groups, are only removed by an rmdir. Two things follow:
//
//   * A later supervisor that gets the same pid would get the same group name.
//     CI hit this: a group left by a supervisor killed hours earlier refused
//     a run with "creating cgroup /sys/fs/cgroup/pids/cocoon-27214-1: File
//     exists". So a name is unique among *live* supervisors only, and
//     Cgroup::Create reclaims an existing group of that name
//     (ExistingGroup::kReclaimAsStale).
//   * The groups pile up (each v1 memory group also pins kernel memory), so
//     about one run in 16 removes the abandoned ones (SweepAbandonedCgroups).
//
// A name is "cocoon-<pid namespace inode>-<pid>-<run>". The pid namespace is
// part of it because pids are only unique within one: two supervisors in two
// containers that share a host's cgroupfs can both be pid 7, and neither
// may take the other's live group for an abandoned one.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cocoon::enforcer {

// The name of this process's `run`-th sandbox group (run counts from 1).
std::string SandboxCgroupName(uint64_t run);

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

// Whether the `run`-th run of this process should also sweep: about one in
// 16, spread over processes, so that the directory scans (~50 us for the
// four v1 hierarchies on this host, measured) are amortised.
bool ShouldSweepAbandonedCgroups(uint64_t run);

// Removes the abandoned sandbox groups directly under each of `parent_dirs`:
// those named by SandboxCgroupName in this pid namespace whose supervisor
// pid no longer exists. Only rmdir, which the kernel refuses for a group that
// still holds a process or a child group, so a group in use is never
// removed. Best effort: returns how many groups were removed.
size_t SweepAbandonedCgroups(const std::vector<std::string>& parent_dirs);

}  // namespace cocoon::enforcer
