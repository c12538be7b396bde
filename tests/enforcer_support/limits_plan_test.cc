// Planner decision tables over fake hosts, and the cgroup layout parser.
#include <gtest/gtest.h>

#include <string>

#include "enforcer/limits/host_caps.h"
#include "enforcer/limits/limit_plan.h"
#include "enforcer/workdir/host_mounts.h"

namespace cocoon::enforcer {
namespace {

CgroupHierarchy Hierarchy(std::string mount, bool writable) {
  CgroupHierarchy h;
  h.mounted = true;
  h.mount = std::move(mount);
  h.own_path = "/me";
  h.writable = writable;
  return h;
}

// This machine: root, v1 memory/pids/cpu/freezer, a controller-less v2.
HostCapabilities RootV1Host() {
  HostCapabilities host;
  host.privilege = Privilege::kRoot;
  host.v2 = Hierarchy("/sys/fs/cgroup/unified", true);
  host.v1_memory = Hierarchy("/sys/fs/cgroup/memory", true);
  host.v1_pids = Hierarchy("/sys/fs/cgroup/pids", true);
  host.v1_cpu = Hierarchy("/sys/fs/cgroup/cpu", true);
  host.v1_freezer = Hierarchy("/sys/fs/cgroup/freezer", true);
  host.v1_memsw = true;
  return host;
}

// A systemd host with a delegated v2 subtree (user@.service Delegate=yes).
HostCapabilities DelegatedV2Host() {
  HostCapabilities host;
  host.privilege = Privilege::kUnprivileged;
  host.sandbox_host_uid = 1000;
  host.v2 = Hierarchy("/sys/fs/cgroup", true);
  host.v2_memory = host.v2_pids = host.v2_cpu = true;
  return host;
}

// Rootless on this machine: v1 exists but is not ours, v2 has no controllers.
HostCapabilities RootlessV1Host() {
  HostCapabilities host;
  host.privilege = Privilege::kUnprivileged;
  host.sandbox_host_uid = 1000;
  host.v1_memory = Hierarchy("/sys/fs/cgroup/memory", false);
  host.v1_pids = Hierarchy("/sys/fs/cgroup/pids", false);
  return host;
}

ir::Limit Req(uint64_t value) { return ir::Limit{true, value, ir::Enforcement::kRequired}; }
ir::Limit Best(uint64_t value) { return ir::Limit{true, value, ir::Enforcement::kBestEffort}; }

const LimitEnforcement* Row(const LimitPlan& plan, const std::string& name) {
  for (const auto& row : plan.table) {
    if (row.limit == name) return &row;
  }
  return nullptr;
}

const RlimitEntry* Rlimit(const LimitPlan& plan, int resource) {
  for (size_t i = 0; i < plan.rlimits.count; ++i) {
    if (plan.rlimits.entries[i].resource == resource) return &plan.rlimits.entries[i];
  }
  return nullptr;
}

ir::Limits MemPidsCpu() {
  ir::Limits limits;
  limits.memory_bytes = Req(32 << 20);
  limits.processes = Req(64);
  limits.cpu_percent = Best(50);
  return limits;
}

struct MechanismCase {
  const char* host_name;
  HostCapabilities (*host)();
  CgroupVersion version;
  LimitMechanism memory;
  LimitMechanism processes;
  LimitMechanism cpu_percent;
};

class PlannerMechanismTest : public ::testing::TestWithParam<MechanismCase> {};

TEST_P(PlannerMechanismTest, ChoosesMechanismPerLimit) {
  const MechanismCase& c = GetParam();
  auto plan = PlanLimits(MemPidsCpu(), c.host(), LimitPlanOptions{});
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->cgroup.version, c.version);
  EXPECT_EQ(Row(*plan, "memory")->mechanism, c.memory);
  EXPECT_EQ(Row(*plan, "processes")->mechanism, c.processes);
  EXPECT_EQ(Row(*plan, "cpu_percent")->mechanism, c.cpu_percent);
}

INSTANTIATE_TEST_SUITE_P(
    Hosts, PlannerMechanismTest,
    ::testing::Values(
        MechanismCase{"root_v1", RootV1Host, CgroupVersion::kV1, LimitMechanism::kCgroupV1,
                      LimitMechanism::kCgroupV1, LimitMechanism::kCgroupV1},
        MechanismCase{"delegated_v2", DelegatedV2Host, CgroupVersion::kV2, LimitMechanism::kCgroupV2,
                      LimitMechanism::kCgroupV2, LimitMechanism::kCgroupV2},
        MechanismCase{"rootless_v1", RootlessV1Host, CgroupVersion::kNone, LimitMechanism::kRlimit,
                      LimitMechanism::kRlimit, LimitMechanism::kNotEnforced}),
    [](const auto& info) { return std::string(info.param.host_name); });

TEST(PlannerTest, RootV1WritesCgroupValues) {
  auto plan = PlanLimits(MemPidsCpu(), RootV1Host(), LimitPlanOptions{});
  ASSERT_TRUE(plan.ok());
  EXPECT_TRUE(plan->cgroup.memory);
  EXPECT_TRUE(plan->cgroup.pids);
  EXPECT_TRUE(plan->cgroup.cpu);
  EXPECT_TRUE(plan->cgroup.freezer);
  EXPECT_EQ(plan->cgroup.limits.memory_bytes, 32u << 20);
  EXPECT_EQ(plan->cgroup.limits.pids_max, 64u);
  EXPECT_EQ(plan->cgroup.limits.cpu_quota_us, 50000u);
  EXPECT_EQ(plan->cgroup.limits.cpu_period_us, 100000u);
  EXPECT_EQ(Rlimit(*plan, RLIMIT_DATA), nullptr);
  EXPECT_EQ(Rlimit(*plan, RLIMIT_AS), nullptr);
  EXPECT_EQ(Rlimit(*plan, RLIMIT_NPROC), nullptr);
}

TEST(PlannerTest, V2PreferredOverV1WhenItCoversEverything) {
  HostCapabilities host = RootV1Host();
  host.v2_memory = host.v2_pids = host.v2_cpu = true;
  auto plan = PlanLimits(MemPidsCpu(), host, LimitPlanOptions{});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->cgroup.version, CgroupVersion::kV2);
  EXPECT_FALSE(plan->cgroup.freezer);
}

TEST(PlannerTest, UnprivilegedNeverUsesV1EvenIfWritable) {
  HostCapabilities host = RootV1Host();
  host.privilege = Privilege::kUnprivileged;
  host.v2.writable = false;
  auto plan = PlanLimits(MemPidsCpu(), host, LimitPlanOptions{});
  // cpu_percent is best-effort, so the plan succeeds without a cgroup.
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->cgroup.version, CgroupVersion::kNone);
}

TEST(PlannerTest, RlimitFallbackHasHonestNotesAndValues) {
  auto plan = PlanLimits(MemPidsCpu(), RootlessV1Host(), LimitPlanOptions{});
  ASSERT_TRUE(plan.ok());
  // Private writable memory, not address space: runtimes that reserve
  // gigabytes PROT_NONE (node, the JVM, Go) must still start.
  EXPECT_EQ(Rlimit(*plan, RLIMIT_AS), nullptr);
  const RlimitEntry* data = Rlimit(*plan, RLIMIT_DATA);
  ASSERT_NE(data, nullptr);
  EXPECT_EQ(data->value.rlim_cur, 32u << 20);
  EXPECT_EQ(data->value.rlim_max, 32u << 20);
  ASSERT_NE(Rlimit(*plan, RLIMIT_NPROC), nullptr);
  EXPECT_EQ(Rlimit(*plan, RLIMIT_NPROC)->value.rlim_cur, 64u);
  EXPECT_NE(Row(*plan, "memory")->note.find("each process"), std::string::npos);
  EXPECT_NE(Row(*plan, "memory")->note.find("memfd"), std::string::npos) << "says what it does not count";
  EXPECT_NE(Row(*plan, "processes")->note.find("user namespace"), std::string::npos);
  EXPECT_FALSE(Row(*plan, "cpu_percent")->required);
}

// Netlink receive queues are charged to no memory cgroup. With the network
// off or an allow-list (the same loopback-only namespace) the filter refuses
// netlink, so the cgroup row needs no caveat; with it on the memory row says
// what the cgroup does not count.
TEST(PlannerTest, MemoryRowSaysNetlinkIsNotCountedOnlyWithTheNetworkOn) {
  for (auto host : {RootV1Host, DelegatedV2Host}) {
    for (ir::NetworkMode mode : {ir::NetworkMode::kOff, ir::NetworkMode::kAllowList}) {
      LimitPlanOptions options;
      options.network = mode;
      auto refused = PlanLimits(MemPidsCpu(), host(), options);
      ASSERT_TRUE(refused.ok()) << refused.status().ToString();
      EXPECT_EQ(Row(*refused, "memory")->note.find("netlink"), std::string::npos) << Row(*refused, "memory")->note;
    }
    LimitPlanOptions options;
    options.network = ir::NetworkMode::kOn;
    auto on = PlanLimits(MemPidsCpu(), host(), options);
    ASSERT_TRUE(on.ok()) << on.status().ToString();
    EXPECT_NE(Row(*on, "memory")->note.find("netlink socket receive queues are not counted"), std::string::npos)
        << Row(*on, "memory")->note;
  }
}

TEST(PlannerTest, RequiredLimitThatCannotBeEnforcedRefusesTheRun) {
  ir::Limits limits;
  limits.cpu_percent = Req(25);
  auto plan = PlanLimits(limits, RootlessV1Host(), LimitPlanOptions{});
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(plan.status().message().find("cpu_percent"), std::string::npos) << plan.status().message();
  EXPECT_NE(plan.status().message().find("required"), std::string::npos);
}

TEST(PlannerTest, NprocUselessForRootWithoutUserNamespace) {
  HostCapabilities host = RootlessV1Host();
  host.sandbox_host_uid = 0;
  host.sandbox_in_user_namespace = false;
  ir::Limits limits;
  limits.processes = Req(10);
  EXPECT_FALSE(PlanLimits(limits, host, LimitPlanOptions{}).ok());
  limits.processes = Best(10);
  auto plan = PlanLimits(limits, host, LimitPlanOptions{});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Row(*plan, "processes")->mechanism, LimitMechanism::kNotEnforced);
  EXPECT_EQ(Rlimit(*plan, RLIMIT_NPROC), nullptr);
}

TEST(PlannerTest, AlwaysSetsCoreRtprioNofileFsize) {
  auto plan = PlanLimits(ir::Limits{}, RootlessV1Host(), LimitPlanOptions{});
  ASSERT_TRUE(plan.ok());
  ASSERT_NE(Rlimit(*plan, RLIMIT_CORE), nullptr);
  EXPECT_EQ(Rlimit(*plan, RLIMIT_CORE)->value.rlim_max, 0u);
  ASSERT_NE(Rlimit(*plan, RLIMIT_RTPRIO), nullptr);
  EXPECT_EQ(Rlimit(*plan, RLIMIT_RTPRIO)->value.rlim_max, 0u);
  ASSERT_NE(Rlimit(*plan, RLIMIT_NOFILE), nullptr);
  EXPECT_EQ(Rlimit(*plan, RLIMIT_NOFILE)->value.rlim_cur, 1024u);
  ASSERT_NE(Rlimit(*plan, RLIMIT_FSIZE), nullptr);
  EXPECT_EQ(Rlimit(*plan, RLIMIT_FSIZE)->value.rlim_cur, 16ull << 30);
  EXPECT_NE(Row(*plan, "core_size"), nullptr);
  EXPECT_NE(Row(*plan, "rt_priority"), nullptr);
  EXPECT_NE(Row(*plan, "open_files"), nullptr);
  EXPECT_NE(Row(*plan, "file_size"), nullptr);
}

TEST(PlannerTest, ClampsToCallersHardLimit) {
  LimitPlanOptions options;
  options.hard_limits[RLIMIT_NOFILE] = 512;
  ir::Limits limits;
  limits.open_files = Req(100000);
  auto plan = PlanLimits(limits, RootlessV1Host(), options);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Rlimit(*plan, RLIMIT_NOFILE)->value.rlim_max, 512u);
  EXPECT_NE(Row(*plan, "open_files")->note.find("clamped"), std::string::npos);
}

// RLIMIT_CPU is whole seconds: the limit is rounded up, and soft = hard, so
// the SIGKILL comes at the rounded-up limit (the init of a pid namespace gets
// no SIGXCPU: a soft limit one second lower let the command run a second
// past it). The row says what is enforced.
TEST(PlannerTest, CpuTimeRoundsUpToSecondsAndKillsThere) {
  for (auto [ms, seconds] : {std::pair<uint64_t, rlim_t>{1500, 2}, {100, 1}, {1000, 1}}) {
    ir::Limits limits;
    limits.cpu_time_ms = Req(ms);
    auto plan = PlanLimits(limits, RootV1Host(), LimitPlanOptions{});
    ASSERT_TRUE(plan.ok());
    const RlimitEntry* cpu = Rlimit(*plan, RLIMIT_CPU);
    ASSERT_NE(cpu, nullptr);
    EXPECT_EQ(cpu->value.rlim_cur, seconds) << ms;
    EXPECT_EQ(cpu->value.rlim_max, seconds) << ms;
    EXPECT_NE(Row(*plan, "cpu_time")->note.find("requested " + std::to_string(ms) + " ms; enforced as RLIMIT_CPU " +
                                                 std::to_string(seconds) + " s per process"),
              std::string::npos)
        << Row(*plan, "cpu_time")->note;
  }
}

TEST(PlannerTest, DiskIsTmpfsSizeWhenStagedAndFsizeWhenDirect) {
  ir::Limits limits;
  limits.disk_bytes = Req(8 << 20);
  LimitPlanOptions staged;
  auto plan = PlanLimits(limits, RootV1Host(), staged);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->disk_tmpfs_bytes, 8u << 20);
  EXPECT_EQ(Row(*plan, "disk")->mechanism, LimitMechanism::kTmpfsSize);

  LimitPlanOptions direct;
  direct.work_mode = ir::WorkMode::kDirect;
  plan = PlanLimits(limits, RootV1Host(), direct);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->disk_tmpfs_bytes, 0u);
  EXPECT_EQ(Row(*plan, "disk")->mechanism, LimitMechanism::kRlimit);
  EXPECT_EQ(Rlimit(*plan, RLIMIT_FSIZE)->value.rlim_cur, 8u << 20);  // stricter than the default
}

// No file_size: the disk limit is the cap per file, as the compiled plan
// says (ir::FileSizeRlimitBytes), so it holds in writable mounts too, which
// no work dir tmpfs covers; the row says where it came from. It used to be
// the 16 GiB default.
TEST(PlannerTest, WithoutFileSizeTheDiskLimitIsTheFsize) {
  ir::Limits limits;
  limits.disk_bytes = Req(1 << 20);
  auto plan = PlanLimits(limits, RootV1Host(), LimitPlanOptions{});
  ASSERT_TRUE(plan.ok());
  ASSERT_NE(Rlimit(*plan, RLIMIT_FSIZE), nullptr);
  EXPECT_EQ(Rlimit(*plan, RLIMIT_FSIZE)->value.rlim_cur, 1u << 20);
  ASSERT_NE(Row(*plan, "file_size"), nullptr);
  EXPECT_EQ(Row(*plan, "file_size")->requested, 1u << 20);
  EXPECT_NE(Row(*plan, "file_size")->note.find("the disk limit"), std::string::npos) << Row(*plan, "file_size")->note;
  limits.file_size_bytes = Req(8 << 20);
  plan = PlanLimits(limits, RootV1Host(), LimitPlanOptions{});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(Rlimit(*plan, RLIMIT_FSIZE)->value.rlim_cur, 8u << 20) << "staged: file_size stays the cap";
}

// Without a host work dir the work dir is a tmpfs of its own in either mode,
// and the disk limit must size it: the row said tmpfs-size while the tmpfs
// kept its 64 MiB default.
TEST(PlannerTest, DiskSizesTheWorkTmpfsWithoutAHostWorkDir) {
  ir::Limits limits;
  limits.disk_bytes = Req(1 << 20);
  for (ir::WorkMode mode : {ir::WorkMode::kStaged, ir::WorkMode::kDirect}) {
    LimitPlanOptions options;
    options.work_mode = mode;
    options.work_source = WorkDirSource::kTmpfsOnly;
    auto plan = PlanLimits(limits, RootV1Host(), options);
    ASSERT_TRUE(plan.ok());
    EXPECT_EQ(plan->disk_tmpfs_bytes, 1u << 20);
    const LimitEnforcement* row = Row(*plan, "disk");
    ASSERT_NE(row, nullptr);
    EXPECT_EQ(row->mechanism, LimitMechanism::kTmpfsSize);
    EXPECT_NE(row->note.find("no host work dir"), std::string::npos) << row->note;
  }
}

TEST(PlannerTest, SupervisorLimits) {
  ir::Limits limits;
  limits.wall_time_ms = Req(5000);
  limits.output_bytes = Req(1 << 20);
  auto plan = PlanLimits(limits, RootV1Host(), LimitPlanOptions{});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->wall_time_ms, 5000u);
  EXPECT_EQ(plan->output_bytes, 1u << 20);
  EXPECT_EQ(Row(*plan, "wall_time")->mechanism, LimitMechanism::kSupervisor);
}

TEST(PlannerTest, NoCgroupLimitsStillPicksMemoryGroupForMeasurement) {
  auto plan = PlanLimits(ir::Limits{}, RootV1Host(), LimitPlanOptions{});
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->cgroup.version, CgroupVersion::kV1);
  EXPECT_TRUE(plan->cgroup.memory);
  EXPECT_FALSE(plan->cgroup.cpu);
}

TEST(HostCapsTest, ParsesThisMachinesLayout) {
  const char* mountinfo =
      "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
      "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
      "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
      "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
      "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
      "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
  const char* proc_cgroup =
      "8:pids:/\n6:freezer:/\n4:memory:/process_api/af03\n1:cpu:/\n0::/\n";
  HostCapabilities caps = ParseCgroupLayout(mountinfo, proc_cgroup);
  EXPECT_TRUE(caps.v2.mounted);
  EXPECT_EQ(caps.v2.Dir(), "/sys/fs/cgroup/unified");
  EXPECT_EQ(caps.v1_memory.Dir(), "/sys/fs/cgroup/memory/process_api/af03");
  EXPECT_EQ(caps.v1_pids.Dir(), "/sys/fs/cgroup/pids");
  EXPECT_EQ(caps.v1_cpu.Dir(), "/sys/fs/cgroup/cpu");
  EXPECT_TRUE(caps.v1_freezer.mounted);
}

TEST(HostCapsTest, ParsesPureV2WithCombinedCpuCpuacct) {
  const char* mountinfo = "30 23 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
  HostCapabilities caps = ParseCgroupLayout(mountinfo, "0::/user.slice/user-1000.slice/session-2.scope\n");
  EXPECT_EQ(caps.v2.Dir(), "/sys/fs/cgroup/user.slice/user-1000.slice/session-2.scope");
  EXPECT_FALSE(caps.v1_memory.mounted);
  caps = ParseCgroupLayout("32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n",
                           "3:cpu,cpuacct:/a\n");
  EXPECT_EQ(caps.v1_cpu.Dir(), "/sys/fs/cgroup/cpu,cpuacct/a");
}

}  // namespace
// The mounts no bind may carry along (workdir/host_mounts.h): kernel
// interfaces wherever mounted, and /run's filesystem bound elsewhere (a
// docker.sock), but not every mount of a filesystem that also has a bind
// in /run (a container's /run/secrets from the root filesystem).
TEST(HostInterfaceMountsTest, FindsKernelInterfacesAndRunAliasesBelowABind) {
  const char* mountinfo =
      "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
      "23 22 0:5 / /proc rw - proc proc rw\n"
      "24 22 0:26 / /run rw - tmpfs tmpfs rw\n"
      "25 24 8:1 /var/lib/c/secrets /run/secrets rw - ext4 /dev/sda1 rw\n"
      "26 22 8:1 /home /home rw - ext4 /dev/sda1 rw\n"
      "40 22 0:5 / /srv/a\\040b/p rw - proc proc rw\n"
      "41 22 0:26 /docker.sock /srv/c/sock rw - tmpfs tmpfs rw\n"
      "42 22 0:44 / /srv/d/t rw - tmpfs tmpfs rw\n"
      "43 22 0:21 / /srv/e/s rw - sysfs sysfs rw\n";
  auto mounts = ParseHostInterfaceMounts(mountinfo);
  EXPECT_NE(HostInterfaceShownBy(mounts, "/srv/a b"), "");
  EXPECT_NE(HostInterfaceShownBy(mounts, "/srv/a b/p"), "");
  EXPECT_NE(HostInterfaceShownBy(mounts, "/srv/a b/p/1"), "") << "inside a proc";
  EXPECT_NE(HostInterfaceShownBy(mounts, "/srv"), "");
  EXPECT_NE(HostInterfaceShownBy(mounts, "/srv/c").find("/run"), std::string::npos);
  EXPECT_NE(HostInterfaceShownBy(mounts, "/srv/e").find("sysfs at /srv/e/s"), std::string::npos);
  EXPECT_EQ(HostInterfaceShownBy(mounts, "/srv/d"), "") << "a tmpfs of its own";
  EXPECT_EQ(HostInterfaceShownBy(mounts, "/home"), "") << "the root filesystem is not /run's";
  EXPECT_EQ(HostInterfaceShownBy(mounts, "/srv/ab"), "");
  EXPECT_EQ(HostInterfaceShownBy(mounts, "/usr"), "");
}

// A path inside a second name of a kernel interface, or of /run, shows what
// the first name would (a re-review bound /srv/e/s/class/net, and a socket
// under a bind of /run, before this was refused); inside the interface
// trees themselves a policy names what it means.
TEST(HostInterfaceMountsTest, APathInsideASecondNameOfAnInterfaceOrOfRunIsRefused) {
  const char* mountinfo =
      "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
      "23 22 0:21 / /sys rw - sysfs sysfs rw\n"
      "24 22 0:26 / /run rw - tmpfs tmpfs rw\n"
      "30 22 0:26 / /srv/runa rw - tmpfs tmpfs rw\n"
      "31 22 0:21 / /srv/s1 rw - sysfs sysfs rw\n"
      "32 23 0:30 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
  auto mounts = ParseHostInterfaceMounts(mountinfo);
  EXPECT_NE(HostInterfaceShownBy(mounts, "/srv/s1/class/net").find("second name"), std::string::npos);
  EXPECT_NE(HostInterfaceShownBy(mounts, "/srv/runa/svc").find("/run"), std::string::npos);
  EXPECT_EQ(HostInterfaceShownBy(mounts, "/sys/devices/system/cpu"), "") << "named inside /sys itself";
  EXPECT_EQ(HostInterfaceShownBy(mounts, "/sys/fs/cgroup/memory/x"), "") << "named inside /sys itself";
}

// Toolbox and distrobox bind the host's / at /run/host: a disk filesystem
// under /run is not /run's, and every other mount of it stays usable (a
// re-review saw every launch refused, "inside a mount of the host's /run
// filesystem at /").
TEST(HostInterfaceMountsTest, ADiskFilesystemMountedUnderRunIsNotRuns) {
  const char* mountinfo =
      "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
      "24 22 0:26 / /run rw - tmpfs tmpfs rw\n"
      "25 24 8:1 / /run/host rw - ext4 /dev/sda1 rw\n"
      "26 22 8:1 /home /home rw - ext4 /dev/sda1 rw\n"
      "27 22 0:26 /user/1000 /srv/u rw - tmpfs tmpfs rw\n";
  auto mounts = ParseHostInterfaceMounts(mountinfo);
  EXPECT_EQ(HostInterfaceShownBy(mounts, "/etc/alternatives"), "");
  EXPECT_EQ(HostInterfaceShownBy(mounts, "/home/u/proj"), "");
  EXPECT_NE(HostInterfaceShownBy(mounts, "/srv/u/bus").find("/run"), std::string::npos) << "the /run tmpfs, elsewhere";
}

}  // namespace cocoon::enforcer
