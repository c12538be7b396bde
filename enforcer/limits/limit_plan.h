// Choosing, per limit, the mechanism that enforces it, and producing the
// enforcement table the Outcome reports.
//
// Order of preference (docs/security.md explains why):
//   memory, processes, cpu_percent:
//     cgroup v2 (delegated to us, or we are root)
//     -> cgroup v1 (we are root; this machine: memory, pids, cpu)
//     -> rlimits (RLIMIT_DATA for memory, RLIMIT_NPROC for processes; nothing
//        for cpu_percent), each with an honest note of what it does not cover.
//   cpu_time: RLIMIT_CPU (per process; see the note in the table).
//   open_files: RLIMIT_NOFILE.   file_size: RLIMIT_FSIZE.
//   disk: size of the work dir's tmpfs (a staged host work dir's staging
//     tmpfs, or the work dir itself when there is no host work dir), or
//     RLIMIT_FSIZE only (direct host work dir).
//   wall_time, output: the supervisor (the parent).
// Always, whatever the policy says: RLIMIT_CORE=0 (no core dumps of hostile
// memory onto the host), RLIMIT_RTPRIO=0 (no real-time starvation of the host),
// RLIMIT_SIGPENDING=kSandboxPendingSignals (queued signals are charged to the
// host user too), RLIMIT_NOFILE and RLIMIT_FSIZE (defaults in
// LimitPlanOptions when unset).
//
// A limit marked kRequired that no mechanism can enforce makes PlanLimits fail
// (kFailedPrecondition, the message names the limit and why). A kBestEffort one
// is reported as LimitMechanism::kNotEnforced with a note.
//
// PlanLimits is pure: a function of the IR and a HostCapabilities, so the
// whole decision table is unit-tested with fake hosts (tests/enforcer_support).
#pragma once

#include <sys/resource.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "compiler/common/status.h"
#include "compiler/ir/policy_ir.h"
#include "enforcer/limits/host_caps.h"
#include "enforcer/outcome.h"

namespace cocoon::enforcer {

enum class CgroupVersion { kNone, kV1, kV2 };

// Where the sandbox's work dir comes from: a host directory (staged or
// direct), or nothing: a tmpfs that is thrown away after the run.
enum class WorkDirSource { kHostDir, kTmpfsOnly };

// Signals one sandbox may have queued at once (RLIMIT_SIGPENDING); shared
// with the OCI back end, which sets the same.
inline constexpr uint64_t kSandboxPendingSignals = ir::kSandboxPendingSignals;

// What to write into the sandbox's cgroup(s). Zero means "not limited by the
// cgroup" (the group may still be created, to measure and to kill).
struct CgroupLimits {
  uint64_t memory_bytes = 0;       // v2 memory.max (+ memory.swap.max=0); v1 memory.limit_in_bytes (+memsw)
  uint64_t pids_max = 0;           // pids.max
  uint64_t cpu_quota_us = 0;       // v2 cpu.max "<quota> <period>"; v1 cpu.cfs_quota_us
  uint64_t cpu_period_us = 100000; // v1 cpu.cfs_period_us
};

// Which controllers the group needs; the Cgroup class creates exactly these.
struct CgroupSpec {
  CgroupVersion version = CgroupVersion::kNone;
  bool memory = false;   // also created without a limit, for peak memory and OOM detection
  bool pids = false;     // also created without a limit, so KillAll sees every process
  bool cpu = false;
  bool freezer = false;  // v1 only: freeze before killing (v2 has cgroup.kill)
  CgroupLimits limits;
};

// A fixed-size, allocation-free table of rlimits for the child to apply after
// clone (see rlimits.h). Filled by the planner in the parent.
struct RlimitEntry {
  int resource = 0;  // RLIMIT_*
  struct rlimit value {};
};
struct RlimitSet {
  static constexpr size_t kMax = 12;
  std::array<RlimitEntry, kMax> entries{};
  size_t count = 0;
};

struct LimitPlanOptions {
  // Applied when the policy does not set open_files / file_size. Both are
  // clamped to the caller's current hard limit (an unprivileged child cannot
  // raise a hard limit, and we never try to).
  uint64_t default_open_files = ir::kDefaultOpenFiles;
  uint64_t default_file_size_bytes = ir::kDefaultFileSizeBytes;
  ir::WorkMode work_mode = ir::WorkMode::kStaged;
  // Whether the run has a host work dir (--work). Without one the work dir
  // is a tmpfs of its own whatever work_mode says, and the disk limit sizes
  // it (LimitPlan::disk_tmpfs_bytes).
  WorkDirSource work_source = WorkDirSource::kHostDir;
  // The policy's network. Unless it is off, the seccomp filter lets the
  // sandbox open netlink sockets, whose receive queues no memory cgroup (v1
  // or v2) charges: the memory row's note says so (with it off the filter
  // refuses AF_NETLINK, compiler/backends/seccomp/effective_rules.h).
  ir::NetworkMode network = ir::NetworkMode::kOff;
  // Current hard limits of the caller, per RLIMIT_* (index = resource). Filled
  // by CurrentHardLimits(); tests pass their own. RLIM_INFINITY when unknown.
  std::array<rlim_t, RLIM_NLIMITS> hard_limits = Unlimited();

  static std::array<rlim_t, RLIM_NLIMITS> Unlimited();
};

// getrlimit() for every resource.
std::array<rlim_t, RLIM_NLIMITS> CurrentHardLimits();

struct LimitPlan {
  CgroupSpec cgroup;                      // version kNone: no cgroup at all
  RlimitSet rlimits;                      // applied in the child, after clone
  // size= for the work dir's tmpfs (the staging tmpfs, or the work dir
  // itself without a host work dir); 0: no disk limit, the defaults apply.
  // The enforcer must apply it wherever the disk row says tmpfs-size.
  uint64_t disk_tmpfs_bytes = 0;
  uint64_t wall_time_ms = 0;              // for the supervisor; 0: none
  // RLIMIT_CPU's soft and hard limits in seconds (0: none), both the
  // policy's cpu_time rounded up (SIGKILL there; an init gets no SIGXCPU):
  // a sandbox init killed with SIGKILL after using this much CPU was stopped
  // by the limit, not by the OOM killer (finish.cc, SetTermination).
  uint64_t cpu_soft_seconds = 0;
  uint64_t cpu_hard_seconds = 0;
  uint64_t output_bytes = 0;              // per stream, for the supervisor; 0: none
  std::vector<LimitEnforcement> table;    // one row per limit, for Outcome::limits
};

Result<LimitPlan> PlanLimits(const ir::Limits& limits, const HostCapabilities& host,
                             const LimitPlanOptions& options);

// Resource name for messages/tests: RLIMIT_AS -> "RLIMIT_AS".
const char* RlimitName(int resource);

}  // namespace cocoon::enforcer
