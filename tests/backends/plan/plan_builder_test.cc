// The Linux launch plan back end: ordering, defaults and the JSON round trip.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "compiler/backends/plan/launch_plan.h"

namespace cocoon::backends {
namespace {

ir::Policy StrictLikePolicy() {
  ir::Policy policy;
  policy.name = "strict";
  policy.source_sha256 = std::string(64, 'a');
  policy.filesystem.mounts = {
      {ir::MountKind::kReadOnly, "/etc/ssl/certs", "/etc/ssl/certs", 0, false},
      {ir::MountKind::kReadOnly, "/lib64", "/lib64", 0, true},
      {ir::MountKind::kTmpfs, "", "/tmp", 64ull << 20, false},
      {ir::MountKind::kReadOnly, "/usr", "/usr", 0, false},
      {ir::MountKind::kTmpfs, "", "/usr/tmp", 0, false},
  };
  policy.filesystem.hidden = {"/etc/shadow"};
  policy.limits.wall_time_ms = {true, 5000, ir::Enforcement::kRequired};
  policy.limits.memory_bytes = {true, 128ull << 20, ir::Enforcement::kRequired};
  policy.limits.output_bytes = {true, 1 << 20, ir::Enforcement::kRequired};
  policy.limits.cpu_time_ms = {true, 2500, ir::Enforcement::kRequired};
  policy.environment.set = {{"PATH", "/usr/bin:/bin"}, {"HOME", "/work"}};
  policy.environment.pass = {"LANG"};
  return policy;
}

std::vector<std::string> Targets(const LaunchPlan& plan) {
  std::vector<std::string> out;
  for (const auto& m : plan.mounts) out.push_back(std::string(PlanMountKindName(m.kind)) + ":" + m.target);
  return out;
}

TEST(PlanBuilderTest, NamespacesIncludeNetUnlessNetworkOn) {
  auto policy = StrictLikePolicy();
  auto plan = BuildLaunchPlan(policy, "bb");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->namespaces, (std::vector<std::string>{"user", "mnt", "pid", "uts", "ipc", "cgroup", "net"}));
  policy.network.mode = ir::NetworkMode::kOn;
  plan = BuildLaunchPlan(policy, "bb");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(std::count(plan->namespaces.begin(), plan->namespaces.end(), "net"), 0);
}

// Allow-lists carry their endpoints (and only allow-lists: other plans, and
// so their golden files, are unchanged).
TEST(PlanBuilderTest, AllowListEndpointsRoundTripOnlyForAllowLists) {
  auto policy = StrictLikePolicy();
  auto plain = BuildLaunchPlan(policy, "bb");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(LaunchPlanToJson(*plain).find("network_allow"), std::string::npos);
  policy.network.mode = ir::NetworkMode::kAllowList;
  policy.network.allow = {{"api.example.com", 443}, {"192.0.2.10", 8080}};
  auto plan = BuildLaunchPlan(policy, "bb");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->network_allow, policy.network.allow);
  std::string json = LaunchPlanToJson(*plan);
  EXPECT_NE(json.find("\"network_allow\""), std::string::npos);
  auto back = LaunchPlanFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, *plan);
  // An allow-list plan without its endpoints is refused, not read as "none".
  auto at = json.find("\"network_allow\"");
  std::string without = json.substr(0, at) + "\"network_allow_gone\"" + json.substr(at + 15);
  EXPECT_FALSE(LaunchPlanFromJson(without).ok());
}

TEST(PlanBuilderTest, MountOrderParentsFirstThenProcDevMasks) {
  auto plan = BuildLaunchPlan(StrictLikePolicy(), "bb");
  ASSERT_TRUE(plan.ok());
  std::vector<std::string> expected = {
      "bind-ro:/etc/ssl/certs", "bind-ro:/lib64", "tmpfs:/tmp", "bind-ro:/usr", "tmpfs:/usr/tmp", "work:/work",
      "proc:/proc", "device:/dev/full", "device:/dev/null", "device:/dev/random", "device:/dev/urandom",
      "device:/dev/zero", "symlink:/dev/fd", "symlink:/dev/stderr", "symlink:/dev/stdin", "symlink:/dev/stdout",
      "tmpfs:/dev/shm", "mask:/etc/shadow"};
  auto targets = Targets(*plan);
  ASSERT_GE(targets.size(), expected.size());
  EXPECT_EQ(std::vector<std::string>(targets.begin(), targets.begin() + static_cast<long>(expected.size())), expected);
  // Default masks follow, optional.
  EXPECT_NE(std::find(targets.begin(), targets.end(), "mask:/proc/kcore"), targets.end());
  EXPECT_NE(std::find(targets.begin(), targets.end(), "mask:/proc/sysrq-trigger"), targets.end());
  // Then the kernel knobs the sandbox's own root could otherwise write
  // (net.*, kernel.shm* belong to its namespaces): read-only, after the masks.
  auto sys = std::find(targets.begin(), targets.end(), "read-only:/proc/sys");
  ASSERT_NE(sys, targets.end());
  EXPECT_GT(sys, std::find(targets.begin(), targets.end(), "mask:/proc/kcore"));
  EXPECT_EQ(std::find(targets.begin(), targets.end(), "read-only:/proc/sysrq-trigger"), targets.end())
      << "hidden already";
  EXPECT_EQ(std::find(targets.begin(), targets.end(), "device:/dev/tty"), targets.end()) << "tty only when allowed";
}

TEST(PlanBuilderTest, TtyOnlyWhenAllowed) {
  auto policy = StrictLikePolicy();
  policy.filesystem.devices.tty = ir::DeviceAccess::kAllowed;
  auto plan = BuildLaunchPlan(policy, "bb");
  ASSERT_TRUE(plan.ok());
  auto targets = Targets(*plan);
  EXPECT_NE(std::find(targets.begin(), targets.end(), "device:/dev/tty"), targets.end());
}

// RLIMIT_FSIZE is what the enforcer applies (ir::FileSizeRlimitBytes):
// file_size, else the disk limit, else the enforcer's 16 GiB default (the
// plan said unlimited there), and a direct work dir's disk limit caps it.
TEST(PlanBuilderTest, FsizeIsFileSizeElseDiskElseTheEnforcersDefault) {
  auto fsize = [](const ir::Policy& policy) -> uint64_t {
    auto plan = BuildLaunchPlan(policy, "bb");
    EXPECT_TRUE(plan.ok());
    if (!plan.ok()) return 0;
    for (const auto& r : plan->rlimits) {
      if (r.resource == "RLIMIT_FSIZE") return r.soft;
    }
    return 0;
  };
  ir::Policy policy = StrictLikePolicy();
  policy.limits.file_size_bytes = {};
  policy.limits.disk_bytes = {};
  policy.filesystem.work.quota_bytes = 0;
  EXPECT_EQ(fsize(policy), ir::kDefaultFileSizeBytes);
  policy.limits.disk_bytes = ir::Limit{true, 1 << 20, ir::Enforcement::kRequired};
  EXPECT_EQ(fsize(policy), 1u << 20);
  policy.filesystem.work.quota_bytes = 512 << 10;
  EXPECT_EQ(fsize(policy), 512u << 10) << "the stricter of disk and the quota";
  policy.limits.file_size_bytes = ir::Limit{true, 8 << 20, ir::Enforcement::kRequired};
  EXPECT_EQ(fsize(policy), 8u << 20) << "staged: file_size is the cap per file";
  policy.filesystem.work.mode = ir::WorkMode::kDirect;
  EXPECT_EQ(fsize(policy), 512u << 10) << "direct: the disk limit caps it too";
}

TEST(PlanBuilderTest, AlwaysCoreRtprioNofileFsize) {
  auto plan = BuildLaunchPlan(StrictLikePolicy(), "bb");
  ASSERT_TRUE(plan.ok());
  auto find = [&](const std::string& name) -> const PlanRlimit* {
    for (const auto& r : plan->rlimits) if (r.resource == name) return &r;
    return nullptr;
  };
  ASSERT_NE(find("RLIMIT_CORE"), nullptr);
  EXPECT_EQ(find("RLIMIT_CORE")->hard, 0u);
  ASSERT_NE(find("RLIMIT_RTPRIO"), nullptr);
  EXPECT_EQ(find("RLIMIT_RTPRIO")->hard, 0u);
  ASSERT_NE(find("RLIMIT_NOFILE"), nullptr);
  EXPECT_EQ(find("RLIMIT_NOFILE")->soft, kDefaultOpenFiles);
  ASSERT_NE(find("RLIMIT_FSIZE"), nullptr);
  ASSERT_NE(find("RLIMIT_CPU"), nullptr);
  EXPECT_EQ(find("RLIMIT_CPU")->soft, 3u) << "2500 ms rounds up to 3 s";
  EXPECT_EQ(find("RLIMIT_CPU")->hard, 3u) << "soft = hard: the command, a pid namespace init, gets no SIGXCPU";
  EXPECT_EQ(plan->wall_timeout_ms, 5000u);
  EXPECT_EQ(plan->output_cap_bytes, 1u << 20);
}

TEST(PlanBuilderTest, LandlockWritesOnlyWhereWritable) {
  auto plan = BuildLaunchPlan(StrictLikePolicy(), "bb");
  ASSERT_TRUE(plan.ok());
  for (const auto& rule : plan->landlock) {
    if (rule.access == LandlockAccess::kReadWrite) {
      EXPECT_TRUE(rule.path == "/tmp" || rule.path == "/usr/tmp" || rule.path == "/work" || rule.path == "/dev/shm")
          << rule.path;
    }
  }
  EXPECT_EQ(plan->landlock.front().path, "/");
  EXPECT_EQ(plan->landlock.front().access, LandlockAccess::kReadExecute);
}

TEST(PlanBuilderTest, RefusesMountsOverManagedPaths) {
  auto policy = StrictLikePolicy();
  policy.filesystem.mounts.push_back({ir::MountKind::kWritable, "/proc", "/proc", 0, false});
  EXPECT_FALSE(BuildLaunchPlan(policy, "bb").ok());
  policy = StrictLikePolicy();
  policy.filesystem.mounts.push_back({ir::MountKind::kWritable, "/srv", "/work", 0, false});
  EXPECT_FALSE(BuildLaunchPlan(policy, "bb").ok()) << "mount over the work dir";
}

TEST(PlanBuilderTest, JsonRoundTrip) {
  auto policy = StrictLikePolicy();
  policy.filesystem.copies = {{"/data/in.csv", "in.csv"}};
  policy.environment.clear = false;
  policy.environment.unset = {"AWS_SECRET_ACCESS_KEY"};
  auto plan = BuildLaunchPlan(policy, std::string(64, 'c'));
  ASSERT_TRUE(plan.ok());
  std::string json = LaunchPlanToJson(*plan);
  auto back = LaunchPlanFromJson(json);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, *plan);
  EXPECT_EQ(back->env_unset, std::vector<std::string>{"AWS_SECRET_ACCESS_KEY"});
  EXPECT_EQ(LaunchPlanToJson(*back), json) << "canonical";
}

TEST(PlanBuilderTest, CompileLinuxPlanReferencesBpfByHash) {
  Artifact bpf = MakeArtifact("linux", "linux.seccomp.bpf", "application/vnd.cocoon.seccomp-bpf", std::string(16, '\x06'));
  auto artifacts = CompileLinuxPlan(StrictLikePolicy(), bpf);
  ASSERT_TRUE(artifacts.ok());
  ASSERT_EQ(artifacts->size(), 1u);
  EXPECT_EQ((*artifacts)[0].path, "linux.plan.json");
  auto plan = LaunchPlanFromJson((*artifacts)[0].bytes);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->seccomp_sha256, bpf.sha256);
  EXPECT_EQ(plan->seccomp_path, "linux.seccomp.bpf");
}

TEST(PlanJsonTest, StrictReader) {
  auto plan = BuildLaunchPlan(StrictLikePolicy(), "bb");
  ASSERT_TRUE(plan.ok());
  std::string json = LaunchPlanToJson(*plan);
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string copy = json;
    auto pos = copy.find(from);
    EXPECT_NE(pos, std::string::npos) << from;
    if (pos != std::string::npos) copy.replace(pos, from.size(), to);
    return copy;
  };
  EXPECT_FALSE(LaunchPlanFromJson(replace("\"bind-ro\"", "\"bind-rw-please\"")).ok());
  EXPECT_FALSE(LaunchPlanFromJson(replace("\"version\": 2", "\"version\": 99")).ok());
  auto old_plan = LaunchPlanFromJson(replace("\"version\": 2", "\"version\": 1"));
  ASSERT_FALSE(old_plan.ok()) << "a version-1 plan has no read-only /proc entries: recompile";
  EXPECT_NE(old_plan.status().message().find("compile the policy again"), std::string::npos) << old_plan.status().ToString();
  EXPECT_FALSE(LaunchPlanFromJson(replace("\"target\": \"/usr\"", "\"target\": \"usr\"")).ok());
  EXPECT_FALSE(LaunchPlanFromJson(replace("\"target\": \"/usr\"", "\"target\": \"/usr/../etc\"")).ok());
  EXPECT_FALSE(LaunchPlanFromJson("{").ok());
  EXPECT_FALSE(LaunchPlanFromJson("[]").ok());
}

// The launcher starts the sandbox's child on this peek before it parses the
// plan: it must agree with the full reader on every real plan, and never
// invent a mode from something that is not the top-level "network" string.
TEST(PlanJsonTest, PeekNetworkAgreesWithTheReader) {
  auto policy = StrictLikePolicy();
  for (ir::NetworkMode mode : {ir::NetworkMode::kOff, ir::NetworkMode::kOn, ir::NetworkMode::kAllowList}) {
    policy.network.mode = mode;
    policy.network.allow.clear();
    if (mode == ir::NetworkMode::kAllowList) policy.network.allow = {{"api.example.com", 443}};
    auto plan = BuildLaunchPlan(policy, "bb");
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    std::string json = LaunchPlanToJson(*plan);
    EXPECT_EQ(PeekLaunchPlanNetwork(json), LaunchPlanFromJson(json)->network);
    EXPECT_EQ(PeekLaunchPlanNetwork(nlohmann::json::parse(json).dump()), mode) << "compact JSON";
  }
  EXPECT_EQ(PeekLaunchPlanNetwork(R"({"a": {"network": "on"}, "network": "off"})"), ir::NetworkMode::kOff)
      << "a nested \"network\" key is not the plan's";
  EXPECT_EQ(PeekLaunchPlanNetwork(R"({"a": ["network", "on"], "network": "allow-list"})"), ir::NetworkMode::kAllowList);
  EXPECT_EQ(PeekLaunchPlanNetwork(R"({"env": "\"network\": \"on\"", "network": "off"})"), ir::NetworkMode::kOff);
  EXPECT_EQ(PeekLaunchPlanNetwork(R"({"a": {"network": "on"}})"), std::nullopt);
  EXPECT_EQ(PeekLaunchPlanNetwork(R"({"network": {"mode": "on"}})"), std::nullopt);
  EXPECT_EQ(PeekLaunchPlanNetwork(R"({"network": 1})"), std::nullopt);
  EXPECT_EQ(PeekLaunchPlanNetwork(R"({"network": "sideways"})"), std::nullopt);
  // The 2-space layout's shortcut: found by the search, or left to the SAX
  // pass when what it finds is not a mode.
  EXPECT_EQ(PeekLaunchPlanNetwork("{\n  \"a\": \"x\",\n  \"network\": \"on\"\n}"), ir::NetworkMode::kOn);
  EXPECT_EQ(PeekLaunchPlanNetwork("{\n  \"network\": \"sideways\"\n}"), std::nullopt);
  EXPECT_EQ(PeekLaunchPlanNetwork(R"({"network": )"), std::nullopt);
  EXPECT_EQ(PeekLaunchPlanNetwork("not json"), std::nullopt);
  EXPECT_EQ(PeekLaunchPlanNetwork(""), std::nullopt);
}

}  // namespace
}  // namespace cocoon::backends
