// OCI and Kubernetes back ends: every emitted document passes a schema check
// for the fields we write, the seccomp object is the resolved form of
// ComputeEffectiveSyscalls, and the security-relevant settings are present.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "compiler/backends/artifact.h"
#include "compiler/backends/host_paths.h"
#include "compiler/backends/oci/oci_seccomp.h"
#include "tests/backends/driver/test_policy.h"
#include "tests/backends/oci/json_schema.h"
#include "tests/backends/oci/schemas.h"

namespace cocoon {
namespace {

using nlohmann::json;

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

void ExpectValid(const char* schema, const json& doc) {
  auto errors = testing::JsonSchema(json::parse(schema)).Validate(doc);
  EXPECT_TRUE(errors.empty()) << Join(errors);
}

std::map<std::string, json> CompileAll(const ir::Policy& policy, std::vector<std::string>* warnings = nullptr) {
  std::map<std::string, json> out;
  for (auto compile : {backends::CompileOci, backends::CompileKubernetes}) {
    auto artifacts = compile(policy);
    EXPECT_TRUE(artifacts.ok()) << artifacts.status().ToString();
    if (!artifacts.ok()) continue;
    for (const auto& a : *artifacts) {
      out[a.path] = json::parse(a.bytes);
      if (warnings) warnings->insert(warnings->end(), a.warnings.begin(), a.warnings.end());
    }
  }
  return out;
}

TEST(OciSeccomp, HandBuiltRulesBecomeResolvedEntries) {
  backends::EffectiveSyscalls rules;
  rules.default_action = {ir::ActionKind::kErrno, 38};
  rules.architectures = {ir::Arch::kX86_64};
  rules.rules.push_back(testing::Rule("read", ir::ActionKind::kAllow));
  rules.rules.push_back(testing::Rule("write", ir::ActionKind::kAllow));
  rules.rules.push_back(testing::Rule("ptrace", ir::ActionKind::kErrno, 1));
  ir::SyscallRule clone = testing::Rule("clone", ir::ActionKind::kErrno, 1);
  clone.conditions = {{0, ir::CompareOp::kMaskedEq, 0x10000000, 0x10000000}};
  rules.rules.push_back(clone);
  rules.rules.push_back(testing::Rule("kexec_load", ir::ActionKind::kNotify));
  std::vector<std::string> warnings;
  json seccomp = backends::oci::SeccompToOci(rules, warnings);
  ExpectValid(testing::kSeccompSchema, seccomp);
  EXPECT_EQ(seccomp["defaultAction"], "SCMP_ACT_ERRNO");
  EXPECT_EQ(seccomp["defaultErrnoRet"], 38);
  EXPECT_EQ(seccomp["architectures"], json({"SCMP_ARCH_X86_64"}));
  bool saw_allow = false, saw_clone = false;
  for (const auto& entry : seccomp["syscalls"]) {
    if (entry["action"] == "SCMP_ACT_ALLOW") {
      EXPECT_EQ(entry["names"], json({"read", "write"}));
      saw_allow = true;
    }
    if (entry["names"] == json({"clone"})) {
      // (arg0 & mask) == value: OCI puts the mask in value, the datum in valueTwo.
      EXPECT_EQ(entry["args"][0]["op"], "SCMP_CMP_MASKED_EQ");
      EXPECT_EQ(entry["args"][0]["value"], 0x10000000);
      EXPECT_EQ(entry["args"][0]["valueTwo"], 0x10000000);
      EXPECT_EQ(entry["errnoRet"], 1);
      saw_clone = true;
    }
    if (entry["names"] == json({"kexec_load"})) {
      EXPECT_EQ(entry["action"], "SCMP_ACT_ERRNO") << "notify without a listener must fail closed";
    }
  }
  EXPECT_TRUE(saw_allow);
  EXPECT_TRUE(saw_clone);
  EXPECT_EQ(warnings.size(), 1u);
}

// oci/config.json embeds the profile's text (DumpWithEmbedded) instead of
// copying the JSON tree: the bytes must be those of dumping the whole tree,
// at any depth, and also when a policy string collides with the placeholder.
TEST(OciSeccomp, EmbeddedTextDumpsLikeTheTree) {
  using nlohmann::ordered_json;
  const ordered_json inner = {{"defaultAction", "SCMP_ACT_ERRNO"},
                              {"architectures", {"SCMP_ARCH_X86_64"}},
                              {"syscalls", {{{"names", {"read", "a\nb \"q\""}}, {"args", ordered_json::array()}}}},
                              {"empty", ordered_json::object()}};
  for (const char* pointer : {"/seccomp", "/linux/seccomp", "/a/b/c"}) {
    ordered_json outer = {{"first", "x"}, {"linux", {{"before", 1}}}, {"a", {{"b", {{"c", nullptr}}}}}, {"last", {1, 2}}};
    const ordered_json::json_pointer at(pointer);
    outer[at] = nullptr;
    ordered_json whole = outer;
    whole[at] = inner;
    EXPECT_EQ(backends::oci::DumpWithEmbedded(outer, at, inner.dump(2)), whole.dump(2)) << pointer;
    // A policy string equal to the placeholder: the slow path, same bytes.
    outer["first"] = "\x01cocoon-embedded-json\x01";
    whole["first"] = outer["first"];
    EXPECT_EQ(backends::oci::DumpWithEmbedded(outer, at, inner.dump(2)), whole.dump(2)) << pointer;
  }
  // The real thing: strict's config carries the profile k8s/seccomp.json holds.
  auto oci = backends::CompileOci(testing::StrictPolicy());
  auto k8s = backends::CompileKubernetes(testing::StrictPolicy());
  ASSERT_TRUE(oci.ok() && k8s.ok());
  EXPECT_EQ(json::parse((*oci)[0].bytes)["linux"]["seccomp"], json::parse((*k8s)[0].bytes));
}

TEST(OciBackend, ConfigPassesSchemaAndLocksDown) {
  auto docs = CompileAll(testing::StrictPolicy());
  ASSERT_TRUE(docs.count("oci/config.json"));
  const json& config = docs["oci/config.json"];
  ExpectValid(testing::kOciConfigSchema, config);
  ExpectValid(testing::kSeccompSchema, config["linux"]["seccomp"]);
  // It uses runtime-spec 1.1.0 features (SCMP_ACT_KILL_PROCESS,
  // defaultErrnoRet, errnoRet, rnosuid/rnodev): it says 1.1.0, not 1.0.2.
  EXPECT_EQ(config["ociVersion"], "1.1.0");
  EXPECT_EQ(config["process"]["noNewPrivileges"], true);
  EXPECT_TRUE(config["process"]["capabilities"]["bounding"].empty());
  EXPECT_EQ(config["process"]["user"]["uid"], 65534);
  EXPECT_EQ(config["root"]["readonly"], true);
  EXPECT_EQ(config["linux"]["resources"]["memory"]["limit"], 128 << 20);
  EXPECT_EQ(config["linux"]["resources"]["pids"]["limit"], 32);
  bool netns = false;
  for (const auto& ns : config["linux"]["namespaces"]) netns |= ns["type"] == "network";
  EXPECT_TRUE(netns) << "network off needs its own network namespace";
  bool core = false;
  for (const auto& r : config["process"]["rlimits"]) core |= r["type"] == "RLIMIT_CORE" && r["hard"] == 0;
  EXPECT_TRUE(core);
  bool usr_ro = false;
  for (const auto& m : config["mounts"]) {
    if (m["destination"] == "/usr") usr_ro = m["options"].dump().find("\"ro\"") != std::string::npos;
  }
  EXPECT_TRUE(usr_ro);
  const auto masked = config["linux"]["maskedPaths"].dump();
  EXPECT_NE(masked.find("/etc/shadow"), std::string::npos);
  // The prologue reaches OCI too: unshare with CLONE_NEW* is denied whatever the policy says.
  EXPECT_NE(config["linux"]["seccomp"].dump().find("\"unshare\""), std::string::npos);
}

// The config's rlimits are the enforcer's (enforcer/limits/limit_plan.h):
// RLIMIT_NOFILE and RLIMIT_FSIZE always, with its defaults when the policy
// sets none (or `unlimited`), and RLIMIT_SIGPENDING always. They used to be
// left out, so the container got the runtime's (often unlimited) values.
TEST(OciBackend, RlimitsAreTheEnforcersWithItsDefaults) {
  auto rlimits = [](const ir::Policy& policy) {
    std::map<std::string, std::pair<uint64_t, uint64_t>> out;
    auto docs = CompileAll(policy);
    for (const auto& r : docs["oci/config.json"]["process"]["rlimits"]) {
      out[r["type"]] = {r["soft"].get<uint64_t>(), r["hard"].get<uint64_t>()};
    }
    return out;
  };
  ir::Policy policy = testing::StrictPolicy();
  auto set = rlimits(policy);
  EXPECT_EQ(set["RLIMIT_NOFILE"], std::make_pair(uint64_t{256}, uint64_t{256}));
  EXPECT_EQ(set["RLIMIT_FSIZE"], std::make_pair(uint64_t{64} << 20, uint64_t{64} << 20));
  EXPECT_EQ(set["RLIMIT_SIGPENDING"], std::make_pair(ir::kSandboxPendingSignals, ir::kSandboxPendingSignals));
  policy.limits.open_files = {};
  policy.limits.file_size_bytes = {};
  policy.limits.disk_bytes = {};
  policy.filesystem.work.quota_bytes = 0;
  auto unset = rlimits(policy);
  EXPECT_EQ(unset["RLIMIT_NOFILE"], std::make_pair(ir::kDefaultOpenFiles, ir::kDefaultOpenFiles));
  EXPECT_EQ(unset["RLIMIT_FSIZE"], std::make_pair(ir::kDefaultFileSizeBytes, ir::kDefaultFileSizeBytes));
  EXPECT_EQ(unset["RLIMIT_SIGPENDING"], std::make_pair(ir::kSandboxPendingSignals, ir::kSandboxPendingSignals));
  // The work dir is a bind (direct): the disk limit caps each file, as
  // ir::FileSizeRlimitBytes says for the Linux plan.
  policy.limits.disk_bytes = ir::Limit{true, 1 << 20, ir::Enforcement::kRequired};
  EXPECT_EQ(rlimits(policy)["RLIMIT_FSIZE"], std::make_pair(uint64_t{1} << 20, uint64_t{1} << 20));
  policy.limits.file_size_bytes = ir::Limit{true, 8 << 20, ir::Enforcement::kRequired};
  EXPECT_EQ(rlimits(policy)["RLIMIT_FSIZE"], std::make_pair(uint64_t{1} << 20, uint64_t{1} << 20));
}

TEST(KubernetesBackend, PodAndNetworkPolicyPassSchema) {
  auto docs = CompileAll(testing::StrictPolicy());
  ASSERT_TRUE(docs.count("k8s/pod.json"));
  ASSERT_TRUE(docs.count("k8s/networkpolicy.json"));
  ASSERT_TRUE(docs.count("k8s/seccomp.json"));
  const json& pod = docs["k8s/pod.json"];
  ExpectValid(testing::kPodSchema, pod);
  ExpectValid(testing::kSeccompSchema, docs["k8s/seccomp.json"]);
  ExpectValid(testing::kNetworkPolicySchema, docs["k8s/networkpolicy.json"]);
  ExpectValid(testing::kSeccompProfileRefSchema, pod["spec"]["securityContext"]["seccompProfile"]);
  ExpectValid(testing::kSeccompProfileRefSchema, pod["spec"]["containers"][0]["securityContext"]["seccompProfile"]);
  EXPECT_EQ(pod["spec"]["activeDeadlineSeconds"], 5);
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["memory"], std::to_string(128 << 20));
  EXPECT_EQ(pod["spec"]["containers"][0]["resources"]["limits"]["cpu"], "1000m");
  EXPECT_TRUE(docs["k8s/networkpolicy.json"]["spec"]["egress"].empty()) << "network off: no egress at all";
  EXPECT_EQ(docs["k8s/seccomp.json"], docs["oci/config.json"]["linux"]["seccomp"]);
}

TEST(KubernetesBackend, AllowListKeepsOnlyIpEndpoints) {
  std::vector<std::string> warnings;
  auto docs = CompileAll(testing::HostilePolicy(), &warnings);
  const json& np = docs["k8s/networkpolicy.json"];
  ExpectValid(testing::kNetworkPolicySchema, np);
  ASSERT_EQ(np["spec"]["egress"].size(), 1u);
  EXPECT_EQ(np["spec"]["egress"][0]["to"][0]["ipBlock"]["cidr"], "127.0.0.1/32");
  EXPECT_NE(Join(warnings).find("stays blocked"), std::string::npos);
  // Hostile names are sanitised into valid DNS labels.
  ExpectValid(testing::kPodSchema, docs["k8s/pod.json"]);
  ExpectValid(testing::kOciConfigSchema, docs["oci/config.json"]);
}

TEST(KubernetesBackend, NetworkOnHasNoNetworkPolicyAndNoNetns) {
  ir::Policy policy = testing::StrictPolicy();
  policy.network.mode = ir::NetworkMode::kOn;
  auto docs = CompileAll(policy);
  EXPECT_FALSE(docs.count("k8s/networkpolicy.json"));
  for (const auto& ns : docs["oci/config.json"]["linux"]["namespaces"]) EXPECT_NE(ns["type"], "network");
}

// The seccomp profile's AF_NETLINK refusal follows the network like Cocoon's
// own filter (effective_rules.h NetlinkSockets): with the network off the
// container's namespace has only loopback and netlink queues are charged to
// no memory cgroup; with the network on netlink is the host's to use.
TEST(OciSeccomp, NetlinkIsRefusedOnlyWithTheNetworkOff) {
  auto refuses = [](const json& seccomp, uint64_t family) {
    for (const auto& entry : seccomp["syscalls"]) {
      const auto& names = entry["names"];
      if (std::find(names.begin(), names.end(), "socket") == names.end()) continue;
      if (entry["action"] != "SCMP_ACT_ERRNO" || entry.value("errnoRet", 0) != 97) continue;
      for (const auto& arg : entry.value("args", json::array())) {
        // A masked compare: libseccomp's datum_a is the mask, datum_b the value.
        if (arg["index"] == 0 && arg["op"] == "SCMP_CMP_MASKED_EQ" && arg["valueTwo"] == family) return true;
      }
    }
    return false;
  };
  ir::Policy policy = testing::StrictPolicy();
  auto off = CompileAll(policy);
  EXPECT_TRUE(refuses(off["oci/config.json"]["linux"]["seccomp"], 16)) << "network off: AF_NETLINK refused";
  EXPECT_TRUE(refuses(off["k8s/seccomp.json"], 16));
  policy.network.mode = ir::NetworkMode::kOn;
  auto on = CompileAll(policy);
  EXPECT_FALSE(refuses(on["oci/config.json"]["linux"]["seccomp"], 16)) << "network on: netlink stays";
  EXPECT_FALSE(refuses(on["k8s/seccomp.json"], 16));
  EXPECT_TRUE(refuses(on["oci/config.json"]["linux"]["seccomp"], 40)) << "AF_VSOCK is refused whatever the network";
}

// Runtimes mount config.json's mounts in order: the work dir, once appended
// last, was mounted over a read-only /work/vendor and a tmpfs /work/cache and
// hid them under a writable /work. Parents now come before their children.
TEST(OciBackend, MountsUnderTheWorkDirComeAfterIt) {
  ir::Policy policy = testing::StrictPolicy();
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kReadOnly, "/srv/vendor", "/work/vendor", 0, false});
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kTmpfs, "", "/work/cache", 1 << 20, false});
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kReadOnly, "/srv/deep", "/tmp/a/deep", 0, false});
  auto docs = CompileAll(policy);
  const json& mounts = docs["oci/config.json"]["mounts"];
  ExpectValid(testing::kOciConfigSchema, docs["oci/config.json"]);
  std::map<std::string, size_t> at;
  for (size_t i = 0; i < mounts.size(); ++i) at[mounts[i]["destination"]] = i;
  ASSERT_TRUE(at.count("/work") && at.count("/work/vendor") && at.count("/work/cache"));
  EXPECT_LT(at["/work"], at["/work/vendor"]);
  EXPECT_LT(at["/work"], at["/work/cache"]);
  EXPECT_LT(at["/tmp"], at["/tmp/a/deep"]);
  EXPECT_LT(at["/dev"], at["/proc"]);
  // Every mount follows every mount whose destination contains it.
  for (size_t i = 0; i < mounts.size(); ++i) {
    for (size_t j = i + 1; j < mounts.size(); ++j) {
      const std::string earlier = mounts[i]["destination"], later = mounts[j]["destination"];
      EXPECT_NE(earlier.rfind(later + "/", 0), 0u) << later << " is mounted over " << earlier;
    }
  }
  EXPECT_NE(mounts[at["/work/vendor"]]["options"].dump().find("\"ro\""), std::string::npos);
}

std::vector<std::string> MaskedPaths(const ir::Policy& policy) {
  auto artifacts = backends::CompileOci(policy);
  EXPECT_TRUE(artifacts.ok()) << artifacts.status().ToString();
  if (!artifacts.ok()) return {};
  return json::parse((*artifacts)[0].bytes)["linux"]["maskedPaths"].get<std::vector<std::string>>();
}

bool Has(const std::vector<std::string>& list, const std::string& item) {
  return std::find(list.begin(), list.end(), item) != list.end();
}

// `hide` hides the host object, so every name a bind gives it is masked
// (docs/language.md), as the enforcer does at launch. maskedPaths used to
// carry the literal hidden path alone: a child's bind of a directory that
// holds the hidden file, a bind inside a hidden directory, or /usr/bin/su
// beside a hidden /bin/su on a merged-/usr host showed it.
TEST(OciBackend, HiddenPathsAreMaskedUnderEveryNameABindGivesThem) {
  ir::Policy policy = testing::StrictPolicy();
  policy.filesystem.hidden = {};
  // The shape a reviewer found: a base binds /srv/data as /data and hides
  // /data/sub/secret.txt; a child binds /srv/data/sub as /alias.
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kReadOnly, "/srv/data", "/data", 0, false});
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kReadOnly, "/srv/data/sub", "/alias", 0, false});
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kWritable, "/srv/data/sub/inner", "/in", 0, false});
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kReadOnly, "/srv/other", "/other", 0, false});
  policy.filesystem.hidden = {"/bin/su", "/data/sub/secret.txt", "/etc/shadow"};
  const std::vector<std::string> masked = MaskedPaths(policy);
  EXPECT_TRUE(Has(masked, "/data/sub/secret.txt"));
  EXPECT_TRUE(Has(masked, "/alias/secret.txt"));
  EXPECT_FALSE(Has(masked, "/other/secret.txt"));
  // /bin is /usr/bin on a merged-/usr host, where the runtime binds /usr/bin
  // at /bin: its other name is masked too (absent elsewhere, and skipped).
  EXPECT_TRUE(Has(masked, "/bin/su"));
  EXPECT_TRUE(Has(masked, "/usr/bin/su"));
  // Outside every bind a hide holds no host object: the path alone.
  EXPECT_TRUE(Has(masked, "/etc/shadow"));

  // Hiding a directory covers binds made inside it, and the same directory
  // under a parent's bind; a name below another mask is not repeated.
  policy.filesystem.hidden = {"/alias"};
  const std::vector<std::string> dir = MaskedPaths(policy);
  EXPECT_TRUE(Has(dir, "/alias"));
  EXPECT_TRUE(Has(dir, "/data/sub"));
  EXPECT_TRUE(Has(dir, "/in"));
  EXPECT_FALSE(Has(dir, "/data/sub/inner"));
  EXPECT_FALSE(Has(dir, "/data"));

  // A deeper mount shows something else at the alias: not masked there.
  policy.filesystem.hidden = {"/alias/secret.txt"};
  EXPECT_TRUE(Has(MaskedPaths(policy), "/data/sub/secret.txt"));
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kTmpfs, "", "/data/sub", 1 << 20, false});
  const std::vector<std::string> under_tmpfs = MaskedPaths(policy);
  EXPECT_TRUE(Has(under_tmpfs, "/alias/secret.txt"));
  EXPECT_FALSE(Has(under_tmpfs, "/data/sub/secret.txt"));
}

// A bind whose source is a symlink shows its target, which only the host
// knows: resolved on the compiling host (docs/targets.md).
TEST(OciBackend, HiddenPathsAreMaskedThroughSymlinkedBindSourcesOfThisHost) {
  char tmpl[] = "/tmp/cocoon-oci-hide-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  ASSERT_EQ(mkdir((dir + "/data").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((dir + "/data/sub").c_str(), 0755), 0);
  ASSERT_EQ(symlink((dir + "/data").c_str(), (dir + "/link").c_str()), 0);
  ir::Policy policy = testing::StrictPolicy();
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kReadOnly, dir + "/data/sub", "/a", 0, false});
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kReadOnly, dir + "/link", "/b", 0, false});
  policy.filesystem.hidden = {"/a"};
  const std::vector<std::string> masked = MaskedPaths(policy);
  EXPECT_TRUE(Has(masked, "/a"));
  EXPECT_TRUE(Has(masked, "/b/sub"));
  EXPECT_EQ(backends::HiddenNames(policy.filesystem, "/a", backends::HostLookup::kLexical),
            std::vector<std::string>{"/a"});
  unlink((dir + "/link").c_str());
  rmdir((dir + "/data/sub").c_str());
  rmdir((dir + "/data").c_str());
  rmdir(dir.c_str());
}

// Writable binds (the work dir among them) carry the recursive
// rnosuid/rnodev: crun 1.8.1 in a user namespace drops nosuid,nodev from a
// writable host bind with only the plain options. Read-only binds carry the
// plain options only: crun 1.8.1 refuses a file bind with a recursive one.
TEST(OciBackend, WritableBindsHaveRecursiveNosuidNodev) {
  ir::Policy policy = testing::StrictPolicy();
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kWritable, "/srv/out", "/out", 0, false});
  auto docs = CompileAll(policy);
  int read_only = 0, writable = 0;
  for (const auto& m : docs["oci/config.json"]["mounts"]) {
    if (m["type"] != "bind") continue;
    const bool rw = m["destination"] == "/work" || m["destination"] == "/out";
    ++(rw ? writable : read_only);
    const json want = rw ? json({"rbind", "rw", "nosuid", "nodev", "rnosuid", "rnodev"})
                         : json({"rbind", "ro", "nosuid", "nodev"});
    EXPECT_EQ(m["options"], want) << m.dump();
  }
  EXPECT_GT(read_only, 0);
  EXPECT_EQ(writable, 2);
}

// process.user is the policy's id inside a user namespace. Without one,
// `user 0:0` was host root; now the policy id is host 65534, and inside 0 is
// mapped to host 0 only when the policy's id is not 0 (runtimes build the
// container as inside root, then switch to process.user for good).
TEST(OciBackend, PolicyUserIsMappedToHostNobodyInAUserNamespace) {
  const json identity_root = json::parse(R"([{"containerID": 0, "hostID": 0, "size": 1}])")[0];
  for (uint32_t id : {65534u, 1000u, 0u}) {
    SCOPED_TRACE(id);
    ir::Policy policy = testing::StrictPolicy();
    policy.user = {id, id + (id == 0 ? 0 : 1)};
    std::vector<std::string> warnings;
    auto artifacts = backends::CompileOci(policy);
    ASSERT_TRUE(artifacts.ok()) << artifacts.status().ToString();
    const json config = json::parse((*artifacts)[0].bytes);
    ExpectValid(testing::kOciConfigSchema, config);
    EXPECT_EQ(config["linux"]["namespaces"][0]["type"], "user");
    EXPECT_EQ(config["process"]["user"]["uid"], id);
    const json uid_map = config["linux"]["uidMappings"];
    const json gid_map = config["linux"]["gidMappings"];
    const json want_uid = {{"containerID", id}, {"hostID", 65534}, {"size", 1}};
    const json want_gid = {{"containerID", policy.user.gid}, {"hostID", 65534}, {"size", 1}};
    if (id == 0) {
      EXPECT_EQ(uid_map, json::array({want_uid})) << "inside root must not be host root";
      EXPECT_EQ(gid_map, json::array({want_gid}));
      EXPECT_NE(Join((*artifacts)[0].warnings).find("rootfs/ owned by it"), std::string::npos);
    } else {
      EXPECT_EQ(uid_map, json::array({identity_root, want_uid}));
      EXPECT_EQ(gid_map, json::array({identity_root, want_gid}));
      EXPECT_EQ(Join((*artifacts)[0].warnings).find("rootfs/ owned by it"), std::string::npos);
    }
  }
}

// readOnlyRootFilesystem covers read-only paths, but not one under the
// writable work emptyDir or a tmpfs volume: it gets a readOnly volumeMount.
TEST(KubernetesBackend, ReadOnlyPathsUnderWritableVolumesAreMountedReadOnly) {
  ir::Policy policy = testing::StrictPolicy();
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kReadOnly, "/srv/vendor", "/work/vendor", 0, false});
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kReadOnly, "/srv/deep", "/tmp/deep", 0, false});
  std::vector<std::string> warnings;
  auto docs = CompileAll(policy, &warnings);
  const json& pod = docs["k8s/pod.json"];
  ExpectValid(testing::kPodSchema, pod);
  std::map<std::string, json> by_path;
  for (const auto& m : pod["spec"]["containers"][0]["volumeMounts"]) by_path[m["mountPath"]] = m;
  ASSERT_TRUE(by_path.count("/work/vendor")) << pod.dump(2);
  ASSERT_TRUE(by_path.count("/tmp/deep")) << pod.dump(2);
  EXPECT_EQ(by_path["/work/vendor"].value("readOnly", false), true);
  EXPECT_EQ(by_path["/tmp/deep"].value("readOnly", false), true);
  EXPECT_EQ(by_path["/work"].value("readOnly", false), false);
  // Read-only paths outside any writable volume stay with the image root.
  EXPECT_FALSE(by_path.count("/usr"));
  EXPECT_NE(Join(warnings).find("read-only /work/vendor becomes an empty volume mounted readOnly"), std::string::npos)
      << Join(warnings);
}

// A Pod has no field for processes, open files, file size, CPU time or
// output: strict's `processes 32` used to vanish without a word.
TEST(KubernetesBackend, LimitsAPodCannotExpressAreWarned) {
  ir::Policy policy = testing::StrictPolicy();
  policy.limits.open_files = testing::Required(64);
  policy.limits.file_size_bytes = testing::Required(1 << 20);
  policy.limits.output_bytes = testing::Required(1 << 16);
  auto k8s = backends::CompileKubernetes(policy);
  ASSERT_TRUE(k8s.ok()) << k8s.status().ToString();
  const std::string warnings = Join((*k8s)[0].warnings);
  EXPECT_NE(warnings.find("k8s: the processes limit (32) has no Pod field and is not enforced; the node's kubelet "
                          "podPidsLimit"),
            std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find("the open_files limit (64)"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("the file_size limit (1048576)"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("the cpu_time (ms) limit (5000)"), std::string::npos) << warnings;
  EXPECT_NE(warnings.find("the output (bytes per stream) limit (65536)"), std::string::npos) << warnings;
  // Limits the Pod does express are not warned about.
  EXPECT_EQ(warnings.find("memory limit"), std::string::npos) << warnings;
  ir::Policy none = testing::StrictPolicy();
  none.limits = {};
  auto quiet = backends::CompileKubernetes(none);
  ASSERT_TRUE(quiet.ok());
  EXPECT_EQ(Join((*quiet)[0].warnings).find(" limit ("), std::string::npos) << Join((*quiet)[0].warnings);
}

// `devices { ... on }` used to vanish from both targets without a word.
// OCI grants kvm (a linux.devices node for the sandbox's user, allowed in
// the device cgroup after the deny-all) and says what the runtime needs;
// gpu, which neither target can grant, and kvm in a Pod, are warned about
// at the policy's line, never granted; tty is a default device of every OCI
// container (nothing to add, nothing to warn). All off (strict): nothing.
TEST(OciBackend, DevicesAreGrantedOrWarnedAboutAtThePolicyLine) {
  ir::Policy policy = testing::StrictPolicy();
  policy.filesystem.devices = {ir::DeviceAccess::kAllowed, ir::DeviceAccess::kAllowed, ir::DeviceAccess::kAllowed};
  policy.user = {1000, 1001};
  policy.provenance["filesystem.devices.kvm"] = {"strict", "dev.cocoon", 12};
  policy.provenance["filesystem.devices.gpu"] = {"base", "base.cocoon", 7};
  std::vector<std::string> warning_list;
  auto docs = CompileAll(policy, &warning_list);
  const std::string warnings = Join(warning_list);
  const json& config = docs["oci/config.json"];
  ExpectValid(testing::kOciConfigSchema, config);
  EXPECT_EQ(config["linux"]["devices"], json::parse(R"([{"path": "/dev/kvm", "type": "c", "major": 10,
      "minor": 232, "fileMode": 384, "uid": 1000, "gid": 1001}])"));
  EXPECT_EQ(config["linux"]["resources"]["devices"], json::parse(R"([{"allow": false, "access": "rwm"},
      {"allow": true, "type": "c", "major": 10, "minor": 232, "access": "rw"}])"));
  EXPECT_NE(warnings.find("oci: 'devices { kvm on }' (at dev.cocoon:12): /dev/kvm is in linux.devices"),
            std::string::npos) << warnings;
  EXPECT_NE(warnings.find("oci: 'devices { gpu on }' (at base.cocoon:7, in profile base) is not granted"),
            std::string::npos) << warnings;
  EXPECT_NE(warnings.find("k8s: 'devices { kvm on }' (at dev.cocoon:12) is not granted"), std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find("k8s: 'devices { gpu on }' (at base.cocoon:7, in profile base) is not granted"),
            std::string::npos) << warnings;
  EXPECT_EQ(warnings.find("tty"), std::string::npos) << warnings;
  const json& pod = docs["k8s/pod.json"];
  ExpectValid(testing::kPodSchema, pod);
  EXPECT_EQ(pod["spec"]["containers"][0]["securityContext"]["privileged"], false);

  std::vector<std::string> quiet_list;
  auto off = CompileAll(testing::StrictPolicy(), &quiet_list);
  EXPECT_FALSE(off["oci/config.json"]["linux"].contains("devices"));
  EXPECT_EQ(off["oci/config.json"]["linux"]["resources"]["devices"].size(), 1u);
  EXPECT_EQ(Join(quiet_list).find("devices {"), std::string::npos) << Join(quiet_list);
}

// The bundle's work/ is a plain read-write bind: the Linux plan's staging,
// quota and breakout check have no runtime-spec form. They travel as
// annotations and the target says what it does not do, at the `work` line
// (the quota used to vanish without a word). tmpfs mounts keep their size.
TEST(OciBackend, TheWorkDirsQuotaAndStagingAreAnnotatedAndWarnedAboutAtItsLine) {
  ir::Policy policy = testing::StrictPolicy();
  policy.filesystem.work.quota_bytes = 16 << 20;
  policy.provenance["filesystem.work"] = {"strict", "work.cocoon", 4};
  std::vector<std::string> warning_list;
  auto docs = CompileAll(policy, &warning_list);
  const std::string warnings = Join(warning_list);
  const json& config = docs["oci/config.json"];
  ExpectValid(testing::kOciConfigSchema, config);
  EXPECT_EQ(config["annotations"]["cocoon.dev/work-mode"], "staged");
  EXPECT_EQ(config["annotations"]["cocoon.dev/work-quota-bytes"], "16777216");
  EXPECT_NE(warnings.find("oci: 'work /work quota 16MiB' (at work.cocoon:4): the runtime binds the bundle's work/ "
                          "read-write, so the sandbox writes it directly, not a staged copy, without its 16MiB quota "
                          "and the disk limit (a bind mount has no size), and nothing checks what the run leaves "
                          "there"),
            std::string::npos)
      << warnings;
  for (const json& mount : config["mounts"]) {
    if (mount["destination"] == "/tmp") {
      EXPECT_EQ(mount["options"].back(), "size=67108864");
    }
  }

  policy.filesystem.work = {"/work", 0, ir::WorkMode::kDirect};
  policy.limits.disk_bytes = {};
  std::vector<std::string> direct_list;
  docs = CompileAll(policy, &direct_list);
  EXPECT_EQ(docs["oci/config.json"]["annotations"]["cocoon.dev/work-mode"], "direct");
  EXPECT_FALSE(docs["oci/config.json"]["annotations"].contains("cocoon.dev/work-quota-bytes"));
  EXPECT_NE(Join(direct_list).find("oci: 'work /work direct' (at work.cocoon:4): the runtime binds the bundle's "
                                   "work/ read-write, so the sandbox writes it directly, and nothing checks"),
            std::string::npos)
      << Join(direct_list);
}

// /dev/tty is one of the runtime's default devices: `tty off` cannot be
// honoured in a bundle or a Pod. Warned about at the line when the compiled
// profile itself says it; not for the off every policy inherits from strict
// (or gets by default), which would warn on every compile.
TEST(OciBackend, TtyOffInTheCompiledProfileIsWarnedAboutAtItsLine) {
  ir::Policy policy = testing::StrictPolicy();
  policy.name = "agent";
  policy.provenance["filesystem.devices.tty"] = {"agent", "agent.cocoon", 9};
  std::vector<std::string> warning_list;
  CompileAll(policy, &warning_list);
  const std::string warnings = Join(warning_list);
  EXPECT_NE(warnings.find("oci: 'devices { tty off }' (at agent.cocoon:9) is not enforced: /dev/tty is one of "
                          "the OCI runtime's default devices (config-linux.md#default-devices)"),
            std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find("k8s: 'devices { tty off }' (at agent.cocoon:9) is not enforced: /dev/tty is one of "
                          "the container runtime's default devices"),
            std::string::npos)
      << warnings;

  // Inherited from strict, by default, or turned on: no tty warning.
  policy.provenance["filesystem.devices.tty"] = {"strict", "policies/strict.cocoon", 24};
  std::vector<std::string> inherited;
  CompileAll(policy, &inherited);
  EXPECT_EQ(Join(inherited).find("tty"), std::string::npos) << Join(inherited);
  std::vector<std::string> by_default;
  CompileAll(testing::StrictPolicy(), &by_default);
  EXPECT_EQ(Join(by_default).find("tty"), std::string::npos) << Join(by_default);
  policy.provenance["filesystem.devices.tty"] = {"agent", "agent.cocoon", 9};
  policy.filesystem.devices.tty = ir::DeviceAccess::kAllowed;
  std::vector<std::string> on;
  CompileAll(policy, &on);
  EXPECT_EQ(Join(on).find("tty"), std::string::npos) << Join(on);
}

// Rules the conflict resolution cannot express (allow read, minus two
// separate arg1 values) make the BPF back end refuse; the OCI and Kubernetes
// profiles must refuse too rather than drop read's rules and leave read to
// the default action (with `default allow`, the denials would vanish).
TEST(OciSeccomp, UnrepresentableRulesFailClosed) {
  ir::Policy policy = testing::StrictPolicy();
  policy.syscalls.default_action = {ir::ActionKind::kAllow, 0};
  policy.syscalls.default_explicitly_allows = true;
  policy.syscalls.rules = {{"read", {ir::ActionKind::kAllow, 0}, {}, "@basic-io"},
                           {"read", {ir::ActionKind::kErrno, 1}, {{1, ir::CompareOp::kEq, 0, 0}}, ""},
                           {"read", {ir::ActionKind::kErrno, 1}, {{1, ir::CompareOp::kEq, 4, 0}}, ""}};
  auto oci = backends::CompileOci(policy);
  ASSERT_FALSE(oci.ok());
  EXPECT_NE(oci.status().ToString().find("seccomp profile: syscall rule read"), std::string::npos)
      << oci.status().ToString();
  EXPECT_FALSE(backends::CompileKubernetes(policy).ok());
}

// Profile names that sanitise to one DNS label (web_a, web.a, Web-A) get
// distinct Pod and NetworkPolicy names, labels and selectors, and the Pod
// references the seccomp file under the profile's exact name, as
// docs/targets.md says to install it. A name that is already a label is
// kept as it is.
TEST(KubernetesBackend, ProfileNamesThatSanitiseAlikeStayApart) {
  std::set<std::string> pods, labels, profile_files;
  for (const char* name : {"web_a", "web.a", "Web-A", "web-a"}) {
    ir::Policy policy = testing::StrictPolicy();
    policy.name = name;
    auto artifacts = backends::CompileKubernetes(policy);
    ASSERT_TRUE(artifacts.ok()) << artifacts.status().ToString();
    json pod, np;
    for (const auto& a : *artifacts) {
      if (a.path == "k8s/pod.json") pod = json::parse(a.bytes);
      if (a.path == "k8s/networkpolicy.json") np = json::parse(a.bytes);
    }
    const std::string label = pod["metadata"]["labels"]["cocoon.dev/profile"];
    EXPECT_EQ(pod["spec"]["securityContext"]["seccompProfile"]["localhostProfile"],
              "profiles/cocoon-" + std::string(name) + ".json");
    EXPECT_EQ(np["spec"]["podSelector"]["matchLabels"]["cocoon.dev/profile"], label);
    EXPECT_EQ(np["metadata"]["name"], pod["metadata"]["name"]);
    EXPECT_LE(pod["metadata"]["name"].get<std::string>().size(), 63u);
    pods.insert(pod["metadata"]["name"]);
    labels.insert(label);
    profile_files.insert(pod["spec"]["securityContext"]["seccompProfile"]["localhostProfile"]);
    if (std::string(name) == "web-a") {
      EXPECT_EQ(label, "web-a");
    }
  }
  EXPECT_EQ(pods.size(), 4u);
  EXPECT_EQ(labels.size(), 4u);
  EXPECT_EQ(profile_files.size(), 4u);
}

// Names past the label's 56 characters that share their first 56 stay apart too.
TEST(KubernetesBackend, LongProfileNamesStayApart) {
  std::set<std::string> labels;
  for (const char* suffix : {"one", "two"}) {
    ir::Policy policy = testing::StrictPolicy();
    policy.name = std::string(60, 'a') + suffix;
    auto artifacts = backends::CompileKubernetes(policy);
    ASSERT_TRUE(artifacts.ok()) << artifacts.status().ToString();
    for (const auto& a : *artifacts) {
      if (a.path != "k8s/pod.json") continue;
      const std::string name = json::parse(a.bytes)["metadata"]["name"];
      EXPECT_LE(name.size(), 63u) << name;
      labels.insert(name);
    }
  }
  EXPECT_EQ(labels.size(), 2u);
}

TEST(JsonSchemaChecker, CatchesViolations) {
  testing::JsonSchema schema(json::parse(testing::kSeccompSchema));
  EXPECT_FALSE(schema.Validate(json::parse(R"({"defaultAction": "SCMP_ACT_ALLOW"})")).empty());
  EXPECT_FALSE(schema.Validate(json::parse(
      R"({"defaultAction": "SCMP_ACT_NOPE", "architectures": ["SCMP_ARCH_X86_64"], "syscalls": []})")).empty());
  EXPECT_FALSE(schema.Validate(json::parse(
      R"({"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"], "syscalls": [], "archMap": []})")).empty());
}

}  // namespace
}  // namespace cocoon
