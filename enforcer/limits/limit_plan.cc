#include "enforcer/limits/limit_plan.h"

#include <algorithm>
#include <string>

#include "compiler/ir/cpu_time_rlimit.h"

namespace cocoon::enforcer {
namespace {

constexpr uint64_t kCpuPeriodUs = 100000;  // the kernel's default CFS period

struct CgroupChoice {
  CgroupVersion version = CgroupVersion::kNone;
  bool memory = false;
  bool pids = false;
  bool cpu = false;
  bool freezer = false;
};

bool V2Usable(const HostCapabilities& host) {
  // Delegated to us (writable), or we are root and may write anywhere.
  return host.v2.mounted && host.v2.writable;
}

bool V1Usable(const CgroupHierarchy& h, const HostCapabilities& host) {
  // v1 hierarchies are never safely delegated; only root creates groups.
  return host.privilege == Privilege::kRoot && h.mounted && h.writable;
}

CgroupChoice V2Choice(const HostCapabilities& host) {
  CgroupChoice c;
  if (!V2Usable(host)) return c;
  c.version = CgroupVersion::kV2;
  c.memory = host.v2_memory;
  c.pids = host.v2_pids;
  c.cpu = host.v2_cpu;
  return c;
}

CgroupChoice V1Choice(const HostCapabilities& host) {
  CgroupChoice c;
  c.memory = V1Usable(host.v1_memory, host);
  c.pids = V1Usable(host.v1_pids, host);
  c.cpu = V1Usable(host.v1_cpu, host);
  c.freezer = V1Usable(host.v1_freezer, host);
  if (c.memory || c.pids || c.cpu) c.version = CgroupVersion::kV1;
  return c;
}

int Covered(const CgroupChoice& c, bool need_memory, bool need_pids, bool need_cpu) {
  return (need_memory && c.memory) + (need_pids && c.pids) + (need_cpu && c.cpu);
}

// One version for the whole sandbox: v2 if it covers every cgroup limit the
// policy sets, else v1 if that does, else whichever covers more (v2 on a tie).
// With no cgroup limit set, still pick a group that has a memory controller,
// for peak memory and OOM detection, and so KillAll sees every process.
CgroupChoice ChooseCgroup(const ir::Limits& limits, const HostCapabilities& host) {
  bool need_memory = limits.memory_bytes.set;
  bool need_pids = limits.processes.set;
  bool need_cpu = limits.cpu_percent.set;
  int needed = need_memory + need_pids + need_cpu;
  CgroupChoice v2 = V2Choice(host);
  CgroupChoice v1 = V1Choice(host);
  if (needed == 0) {
    if (v2.version != CgroupVersion::kNone && (v2.memory || v1.version == CgroupVersion::kNone)) return v2;
    return v1;
  }
  int v2_covered = Covered(v2, need_memory, need_pids, need_cpu);
  int v1_covered = Covered(v1, need_memory, need_pids, need_cpu);
  if (v2.version != CgroupVersion::kNone && v2_covered == needed) return v2;
  if (v1.version != CgroupVersion::kNone && v1_covered == needed) return v1;
  if (v2_covered >= v1_covered && v2.version != CgroupVersion::kNone) return v2;
  return v1;
}

LimitMechanism CgroupMechanism(CgroupVersion v) {
  return v == CgroupVersion::kV2 ? LimitMechanism::kCgroupV2 : LimitMechanism::kCgroupV1;
}

class Planner {
 public:
  Planner(const ir::Limits& limits, const HostCapabilities& host, const LimitPlanOptions& options)
      : limits_(limits), host_(host), options_(options) {}

  Result<LimitPlan> Run();

 private:
  void AddRlimit(int resource, rlim_t soft, rlim_t hard);
  rlim_t Clamp(int resource, uint64_t value, std::string* note) const;
  Status Row(const char* name, const ir::Limit& limit, const char* unit, LimitMechanism mechanism,
             std::string note);
  Status PlanMemory();
  Status PlanProcesses();
  Status PlanCpuPercent();
  Status PlanCpuTime();
  Status PlanFiles();
  Status PlanDisk();
  Status PlanSupervisorLimits();
  void PlanAlways();

  const ir::Limits& limits_;
  const HostCapabilities& host_;
  const LimitPlanOptions& options_;
  CgroupChoice cgroup_;
  LimitPlan plan_;
};

void Planner::AddRlimit(int resource, rlim_t soft, rlim_t hard) {
  for (size_t i = 0; i < plan_.rlimits.count; ++i) {
    RlimitEntry& e = plan_.rlimits.entries[i];
    if (e.resource == resource) {  // keep the stricter of two requests
      e.value.rlim_cur = std::min(e.value.rlim_cur, soft);
      e.value.rlim_max = std::min(e.value.rlim_max, hard);
      return;
    }
  }
  RlimitEntry& e = plan_.rlimits.entries[plan_.rlimits.count++];
  e.resource = resource;
  e.value.rlim_cur = soft;
  e.value.rlim_max = hard;
}

// An unprivileged process can only lower its hard limit, so a request above
// the caller's hard limit is clamped to it (stricter than asked, never laxer).
rlim_t Planner::Clamp(int resource, uint64_t value, std::string* note) const {
  rlim_t hard = options_.hard_limits[resource];
  if (hard != RLIM_INFINITY && value > hard) {
    if (note) *note += (note->empty() ? "" : "; ") + std::string("clamped to the caller's hard limit ") +
                       std::to_string(hard);
    return hard;
  }
  return static_cast<rlim_t>(value);
}

Status Planner::Row(const char* name, const ir::Limit& limit, const char* unit, LimitMechanism mechanism,
                    std::string note) {
  bool required = limit.enforcement == ir::Enforcement::kRequired;
  if (mechanism == LimitMechanism::kNotEnforced && required) {
    return FailedPreconditionError(std::string("limit '") + name + "' is required but cannot be enforced on this host: " +
                                   note);
  }
  plan_.table.push_back(LimitEnforcement{name, limit.value, unit, mechanism, required, std::move(note)});
  return Status::Ok();
}

Status Planner::PlanMemory() {
  const ir::Limit& limit = limits_.memory_bytes;
  if (!limit.set) return Status::Ok();
  if (cgroup_.memory) {
    plan_.cgroup.limits.memory_bytes = limit.value;
    std::string note;
    if (cgroup_.version == CgroupVersion::kV2) {
      // Cgroup::Create writes memory.swap.max only where the group has one
      // (no swap accounting, no file): the note claims no more than that.
      note = "memory.max; memory.swap.max=0 where the kernel accounts swap (without swap accounting, swap use "
             "is not capped)";
    } else {
      note = host_.v1_memsw ? "memory.limit_in_bytes and memory.memsw.limit_in_bytes (swap counted), swappiness 0"
                            : "memory.limit_in_bytes, swappiness 0; swap accounting is off on this host, so swap "
                              "use is not capped";
      note += host_.v1_kmem_tcp ? "; TCP/UDP socket buffers: memory.kmem.tcp.limit_in_bytes, the same size (counted "
                                  "apart, so the sandbox may hold up to twice the limit)"
                                : "; this kernel has no memory.kmem.tcp: TCP/UDP socket buffers are not counted";
    }
    if (options_.network == ir::NetworkMode::kOn) {
      note += "; netlink socket receive queues are not counted (no memory cgroup charges them; unless the network "
              "is on the filter refuses netlink): each socket can hold about 2 x net.core.rmem_max";
    }
    return Row("memory", limit, "bytes", CgroupMechanism(cgroup_.version), note);
  }
  // RLIMIT_DATA, not RLIMIT_AS: since Linux 4.7 it counts every private
  // writable mapping (heap, anonymous mmap, thread stacks), which is what a
  // process fills, and not address space reserved PROT_NONE. V8, the JVM
  // and Go reserve gigabytes that way: under RLIMIT_AS at 128 MiB node
  // could not start at all (it spun until the wall-time kill).
  std::string note =
      "RLIMIT_DATA caps each process's private writable memory, not the sandbox's total: N processes may use N "
      "times the limit, and memory the kernel holds without a private mapping (tmpfs and memfd files, shared "
      "memory, socket buffers) is not counted; only a memory cgroup bounds the sandbox as a whole";
  rlim_t value = Clamp(RLIMIT_DATA, limit.value, &note);
  AddRlimit(RLIMIT_DATA, value, value);
  return Row("memory", limit, "bytes", LimitMechanism::kRlimit, note);
}

Status Planner::PlanProcesses() {
  const ir::Limit& limit = limits_.processes;
  if (!limit.set) return Status::Ok();
  if (cgroup_.pids) {
    plan_.cgroup.limits.pids_max = limit.value;
    return Row("processes", limit, "count", CgroupMechanism(cgroup_.version), "pids.max (processes and threads)");
  }
  if (!host_.sandbox_in_user_namespace && host_.sandbox_host_uid == 0) {
    return Row("processes", limit, "count", LimitMechanism::kNotEnforced,
               "no pids cgroup, and RLIMIT_NPROC is not enforced for uid 0 outside a user namespace");
  }
  std::string note =
      host_.sandbox_in_user_namespace
          ? "RLIMIT_NPROC counts processes per (user namespace, uid) since Linux 5.14, so in the sandbox's fresh "
            "user namespace it counts the sandbox's own processes and threads; on older kernels it counts every "
            "process of the uid on the host"
          : "RLIMIT_NPROC counts every process of the uid on the host, not only the sandbox's";
  rlim_t value = Clamp(RLIMIT_NPROC, limit.value, &note);
  AddRlimit(RLIMIT_NPROC, value, value);
  return Row("processes", limit, "count", LimitMechanism::kRlimit, note);
}

Status Planner::PlanCpuPercent() {
  const ir::Limit& limit = limits_.cpu_percent;
  if (!limit.set) return Status::Ok();
  if (cgroup_.cpu) {
    plan_.cgroup.limits.cpu_period_us = kCpuPeriodUs;
    // The kernel rejects quotas below 1 ms (kernel/sched/core.c min_cfs_quota_period).
    plan_.cgroup.limits.cpu_quota_us = std::max<uint64_t>(1000, limit.value * kCpuPeriodUs / 100);
    return Row("cpu_percent", limit, "percent", CgroupMechanism(cgroup_.version),
               cgroup_.version == CgroupVersion::kV2 ? "cpu.max" : "cpu.cfs_quota_us / cpu.cfs_period_us");
  }
  return Row("cpu_percent", limit, "percent", LimitMechanism::kNotEnforced,
             "a CPU share needs a cpu cgroup controller (no rlimit equivalent)");
}

Status Planner::PlanCpuTime() {
  const ir::Limit& limit = limits_.cpu_time_ms;
  if (!limit.set) return Status::Ok();
  // Whole seconds, rounded up, as soft and hard limit alike: at the hard
  // limit the kernel sends SIGKILL (kernel/time/posix-cpu-timers.c,
  // check_process_timers), and the SIGXCPU of a lower soft limit never
  // reaches the command: it is the init of its pid namespace, and the kernel
  // drops a signal it sends (SEND_SIG_PRIV) to an init without a handler
  // unless it is SIGKILL or SIGSTOP (sig_task_ignored, pid_namespaces(7)).
  // With soft = hard - 1 the command ran a whole second past the limit
  // (`cpu_time 100ms` let a 1.9 s spin exit normally), and a descendant with
  // a SIGXCPU handler too. Every process gets the same limit.
  const uint64_t seconds = ir::CpuTimeRlimitSeconds(limit);
  std::string note = "requested " + std::to_string(limit.value) + " ms; enforced as RLIMIT_CPU " +
                     std::to_string(seconds) +
                     " s per process (SIGKILL at that much CPU time of its own; whole seconds, rounded up); the "
                     "supervisor's wall-clock timeout bounds the sandbox as a whole";
  rlim_t value = Clamp(RLIMIT_CPU, seconds, &note);
  AddRlimit(RLIMIT_CPU, value, value);
  plan_.cpu_soft_seconds = value;
  plan_.cpu_hard_seconds = value;
  return Row("cpu_time", limit, "ms", LimitMechanism::kRlimit, note);
}

Status Planner::PlanFiles() {
  ir::Limit open_files = limits_.open_files;
  std::string nofile_note = open_files.set ? "" : "default (policy sets none)";
  if (!open_files.set) open_files = ir::Limit{true, options_.default_open_files, ir::Enforcement::kRequired};
  rlim_t nofile = Clamp(RLIMIT_NOFILE, open_files.value, &nofile_note);
  AddRlimit(RLIMIT_NOFILE, nofile, nofile);
  COCOON_RETURN_IF_ERROR(Row("open_files", open_files, "count", LimitMechanism::kRlimit, nofile_note));

  // As the plan back end (ir::FileSizeRlimitBytes): no file_size means the
  // disk limit, a cap per file that also holds in writable binds, which no
  // work dir tmpfs covers; else the default.
  ir::Limit file_size = limits_.file_size_bytes;
  std::string fsize_note;
  if (!file_size.set && limits_.disk_bytes.set) {
    file_size = limits_.disk_bytes;
    fsize_note = "the disk limit (policy sets no file_size): a cap per file, writable mounts included";
  } else if (!file_size.set) {
    file_size = ir::Limit{true, options_.default_file_size_bytes, ir::Enforcement::kRequired};
    fsize_note = "default (policy sets none)";
  }
  rlim_t fsize = Clamp(RLIMIT_FSIZE, file_size.value, &fsize_note);
  AddRlimit(RLIMIT_FSIZE, fsize, fsize);
  return Row("file_size", file_size, "bytes", LimitMechanism::kRlimit, fsize_note);
}

Status Planner::PlanDisk() {
  const ir::Limit& limit = limits_.disk_bytes;
  if (!limit.set) return Status::Ok();
  if (options_.work_source == WorkDirSource::kTmpfsOnly) {
    // No host dir: the work dir is a tmpfs whatever the mode, and this is its
    // size (ChildSpecInputs::work_tmpfs_bytes).
    plan_.disk_tmpfs_bytes = limit.value;
    return Row("disk", limit, "bytes", LimitMechanism::kTmpfsSize,
               "size of the work dir's tmpfs (no host work dir): a hard limit on everything written to the work "
               "dir");
  }
  if (options_.work_mode == ir::WorkMode::kStaged) {
    plan_.disk_tmpfs_bytes = limit.value;
    return Row("disk", limit, "bytes", LimitMechanism::kTmpfsSize,
               "size of the staging tmpfs: a hard limit on everything written to the work dir");
  }
  std::string note = "direct work dir: only RLIMIT_FSIZE (a cap per file, not on the total written)";
  rlim_t value = Clamp(RLIMIT_FSIZE, limit.value, &note);
  AddRlimit(RLIMIT_FSIZE, value, value);
  return Row("disk", limit, "bytes", LimitMechanism::kRlimit, note);
}

Status Planner::PlanSupervisorLimits() {
  if (limits_.wall_time_ms.set) {
    plan_.wall_time_ms = limits_.wall_time_ms.value;
    COCOON_RETURN_IF_ERROR(Row("wall_time", limits_.wall_time_ms, "ms", LimitMechanism::kSupervisor,
                               "the supervisor kills the whole sandbox"));
  }
  if (limits_.output_bytes.set) {
    plan_.output_bytes = limits_.output_bytes.value;
    COCOON_RETURN_IF_ERROR(Row("output", limits_.output_bytes, "bytes", LimitMechanism::kSupervisor,
                               "captured per stream; the rest is counted and discarded"));
  }
  return Status::Ok();
}

// Not policy-controlled: no core dumps of hostile memory on the host, and no
// real-time scheduling that could starve the host's CPUs.
void Planner::PlanAlways() {
  AddRlimit(RLIMIT_CORE, 0, 0);
  AddRlimit(RLIMIT_RTPRIO, 0, 0);
  ir::Limit zero{true, 0, ir::Enforcement::kRequired};
  plan_.table.push_back(LimitEnforcement{"core_size", zero.value, "bytes", LimitMechanism::kRlimit, true,
                                         "always 0: no core dumps"});
  plan_.table.push_back(LimitEnforcement{"rt_priority", zero.value, "count", LimitMechanism::kRlimit, true,
                                         "always 0: no real-time scheduling"});
  // Queued signals (sigqueue, timers, every pending signal instance) are
  // also charged to the host user above the sandbox's user namespace: as
  // root, to host root, whose default quota (~96k here) one sandbox could
  // fill, leaving every root process without timer_create or sigqueue
  // (EAGAIN) for its run. The sandbox's own count stops at this rlimit.
  std::string note = "always at most " + std::to_string(kSandboxPendingSignals) +
                     ": queued signals also count against the host user's quota";
  const rlim_t pending = Clamp(RLIMIT_SIGPENDING, kSandboxPendingSignals, &note);
  AddRlimit(RLIMIT_SIGPENDING, pending, pending);
  plan_.table.push_back(
      LimitEnforcement{"pending_signals", pending, "count", LimitMechanism::kRlimit, true, std::move(note)});
}

Result<LimitPlan> Planner::Run() {
  cgroup_ = ChooseCgroup(limits_, host_);
  plan_.cgroup.version = cgroup_.version;
  plan_.cgroup.memory = cgroup_.memory;
  plan_.cgroup.pids = cgroup_.pids;
  plan_.cgroup.cpu = cgroup_.cpu && limits_.cpu_percent.set;
  plan_.cgroup.freezer = cgroup_.freezer;
  COCOON_RETURN_IF_ERROR(PlanMemory());
  COCOON_RETURN_IF_ERROR(PlanProcesses());
  COCOON_RETURN_IF_ERROR(PlanCpuPercent());
  COCOON_RETURN_IF_ERROR(PlanCpuTime());
  COCOON_RETURN_IF_ERROR(PlanFiles());
  COCOON_RETURN_IF_ERROR(PlanDisk());
  COCOON_RETURN_IF_ERROR(PlanSupervisorLimits());
  PlanAlways();
  return std::move(plan_);
}

}  // namespace

std::array<rlim_t, RLIM_NLIMITS> LimitPlanOptions::Unlimited() {
  std::array<rlim_t, RLIM_NLIMITS> all{};
  all.fill(RLIM_INFINITY);
  return all;
}

std::array<rlim_t, RLIM_NLIMITS> CurrentHardLimits() {
  std::array<rlim_t, RLIM_NLIMITS> hard = LimitPlanOptions::Unlimited();
  for (int resource = 0; resource < RLIM_NLIMITS; ++resource) {
    struct rlimit value {};
    if (getrlimit(static_cast<__rlimit_resource>(resource), &value) == 0) hard[resource] = value.rlim_max;
  }
  return hard;
}

Result<LimitPlan> PlanLimits(const ir::Limits& limits, const HostCapabilities& host,
                             const LimitPlanOptions& options) {
  Planner planner(limits, host, options);
  auto plan = planner.Run();
  if (!plan.ok()) return plan.status().WithContext("planning limits");
  return plan;
}

const char* RlimitName(int resource) {
  switch (resource) {
    case RLIMIT_AS: return "RLIMIT_AS";
    case RLIMIT_CORE: return "RLIMIT_CORE";
    case RLIMIT_CPU: return "RLIMIT_CPU";
    case RLIMIT_DATA: return "RLIMIT_DATA";
    case RLIMIT_FSIZE: return "RLIMIT_FSIZE";
    case RLIMIT_NOFILE: return "RLIMIT_NOFILE";
    case RLIMIT_NPROC: return "RLIMIT_NPROC";
    case RLIMIT_RTPRIO: return "RLIMIT_RTPRIO";
    case RLIMIT_STACK: return "RLIMIT_STACK";
    default: return "RLIMIT_?";
  }
}

}  // namespace cocoon::enforcer
