// LaunchPlan <-> linux.plan.json. The reader is strict: a plan is applied to
// run hostile code, so anything unexpected (unknown mount kind, wrong version,
// a relative path) is refused rather than guessed at.
#include <nlohmann/json.hpp>

#include "compiler/backends/plan/launch_plan.h"

namespace cocoon::backends {
namespace {

using nlohmann::json;

template <typename Enum, size_t N>
Result<Enum> EnumFromName(const std::array<std::pair<Enum, std::string_view>, N>& table,
                          const std::string& name, std::string_view what) {
  for (const auto& [value, text] : table) {
    if (text == name) return value;
  }
  return InvalidArgumentError("unknown " + std::string(what) + " '" + name + "'");
}

template <typename Enum, size_t N>
std::string_view EnumName(const std::array<std::pair<Enum, std::string_view>, N>& table, Enum value) {
  for (const auto& [v, text] : table) {
    if (v == value) return text;
  }
  return "?";
}

constexpr std::array<std::pair<PlanMountKind, std::string_view>, 9> kMountKinds{{
    {PlanMountKind::kBindReadOnly, "bind-ro"},
    {PlanMountKind::kBindWritable, "bind-rw"},
    {PlanMountKind::kWork, "work"},
    {PlanMountKind::kTmpfs, "tmpfs"},
    {PlanMountKind::kProc, "proc"},
    {PlanMountKind::kDevice, "device"},
    {PlanMountKind::kDevSymlink, "symlink"},
    {PlanMountKind::kMask, "mask"},
    {PlanMountKind::kReadOnly, "read-only"},
}};
constexpr std::array<std::pair<LandlockAccess, std::string_view>, 3> kLandlockAccess{{
    {LandlockAccess::kReadExecute, "read-exec"},
    {LandlockAccess::kReadWrite, "read-write"},
    {LandlockAccess::kDevice, "device"},
}};
constexpr std::array<std::pair<ir::NetworkMode, std::string_view>, 3> kNetworkModes{{
    {ir::NetworkMode::kOff, "off"},
    {ir::NetworkMode::kOn, "on"},
    {ir::NetworkMode::kAllowList, "allow-list"},
}};
constexpr std::array<std::pair<ir::RootKind, std::string_view>, 2> kRootKinds{{
    {ir::RootKind::kHost, "host"},
    {ir::RootKind::kRootfs, "rootfs"},
}};
constexpr std::array<std::pair<ir::WorkMode, std::string_view>, 2> kWorkModes{{
    {ir::WorkMode::kStaged, "staged"},
    {ir::WorkMode::kDirect, "direct"},
}};

json MountToJson(const PlanMount& mount) {
  json j = {{"kind", EnumName(kMountKinds, mount.kind)}, {"target", mount.target}};
  if (!mount.source.empty()) j["source"] = mount.source;
  if (mount.size_bytes != 0) j["size_bytes"] = mount.size_bytes;
  if (mount.optional) j["optional"] = true;
  return j;
}

Status CheckAbsolute(const std::string& path, std::string_view what) {
  if (path.empty() || path[0] != '/' || path.find("/../") != std::string::npos ||
      (path.size() >= 3 && path.compare(path.size() - 3, 3, "/..") == 0)) {
    return InvalidArgumentError(std::string(what) + " '" + path + "' is not a canonical absolute path");
  }
  return Status::Ok();
}

Result<PlanMount> MountFromJson(const json& j) {
  PlanMount mount;
  COCOON_ASSIGN_OR_RETURN(mount.kind, EnumFromName(kMountKinds, j.at("kind").get<std::string>(), "mount kind"));
  mount.target = j.at("target").get<std::string>();
  mount.source = j.value("source", std::string());
  mount.size_bytes = j.value("size_bytes", uint64_t{0});
  mount.optional = j.value("optional", false);
  COCOON_RETURN_IF_ERROR(CheckAbsolute(mount.target, "mount target"));
  bool needs_host_source = mount.kind == PlanMountKind::kBindReadOnly ||
                           mount.kind == PlanMountKind::kBindWritable || mount.kind == PlanMountKind::kDevice;
  if (needs_host_source) COCOON_RETURN_IF_ERROR(CheckAbsolute(mount.source, "mount source"));
  if (mount.target == "/") return InvalidArgumentError("a mount may not replace the sandbox root");
  return mount;
}

json ToJson(const LaunchPlan& plan) {
  json j;
  j["version"] = plan.version;
  j["policy"] = {{"name", plan.policy_name}, {"sha256", plan.policy_sha256}};
  j["namespaces"] = plan.namespaces;
  j["network"] = EnumName(kNetworkModes, plan.network);
  if (plan.network == ir::NetworkMode::kAllowList) {
    j["network_allow"] = json::array();
    for (const auto& e : plan.network_allow) j["network_allow"].push_back({{"host", e.host}, {"port", e.port}});
  }
  j["user"] = {{"uid", plan.uid}, {"gid", plan.gid}};
  j["root"] = {{"kind", EnumName(kRootKinds, plan.root)}, {"rootfs", plan.rootfs}};
  j["mounts"] = json::array();
  for (const auto& mount : plan.mounts) j["mounts"].push_back(MountToJson(mount));
  j["work"] = {{"path", plan.work_path},
               {"mode", EnumName(kWorkModes, plan.work_mode)},
               {"quota_bytes", plan.work_quota_bytes}};
  j["copies"] = json::array();
  for (const auto& copy : plan.copies) j["copies"].push_back({{"source", copy.source}, {"destination", copy.destination}});
  j["landlock"] = json::array();
  for (const auto& rule : plan.landlock) {
    json r = {{"path", rule.path}, {"access", LandlockAccessName(rule.access)}};
    if (rule.optional) r["optional"] = true;
    j["landlock"].push_back(r);
  }
  j["rlimits"] = json::array();
  for (const auto& r : plan.rlimits) j["rlimits"].push_back({{"resource", r.resource}, {"soft", r.soft}, {"hard", r.hard}});
  j["limits"] = json::array();
  for (const auto& l : plan.limits) {
    j["limits"].push_back({{"name", l.name}, {"value", l.value}, {"unit", l.unit}, {"required", l.required}});
  }
  j["environment"]["set"] = json::object();
  for (const auto& var : plan.env_set) j["environment"]["set"][var.name] = var.value;
  j["environment"]["pass"] = plan.env_pass;
  j["environment"]["unset"] = plan.env_unset;
  j["environment"]["clear"] = plan.env_clear;
  j["cwd"] = plan.cwd;
  j["hostname"] = plan.hostname;
  j["wall_timeout_ms"] = plan.wall_timeout_ms;
  j["output_cap_bytes"] = plan.output_cap_bytes;
  j["seccomp"] = {{"path", plan.seccomp_path}, {"sha256", plan.seccomp_sha256}};
  return j;
}

Status FromJsonInto(const json& j, LaunchPlan& plan) {
  plan.version = j.at("version").get<int>();
  if (plan.version != kLaunchPlanVersion) {
    return InvalidArgumentError("unsupported launch plan version " + std::to_string(plan.version) + " (this cocoon reads " +
                                std::to_string(kLaunchPlanVersion) + "); compile the policy again with this cocoon");
  }
  plan.policy_name = j.at("policy").at("name").get<std::string>();
  plan.policy_sha256 = j.at("policy").at("sha256").get<std::string>();
  plan.namespaces = j.at("namespaces").get<std::vector<std::string>>();
  COCOON_ASSIGN_OR_RETURN(plan.network, EnumFromName(kNetworkModes, j.at("network").get<std::string>(), "network mode"));
  if (plan.network == ir::NetworkMode::kAllowList) {
    // Required for allow-lists: an allow-list plan without its endpoints
    // would otherwise mean "nothing allowed" silently.
    for (const auto& e : j.at("network_allow")) {
      plan.network_allow.push_back({e.at("host").get<std::string>(), e.at("port").get<uint16_t>()});
      if (plan.network_allow.back().host.empty() || plan.network_allow.back().port == 0) {
        return InvalidArgumentError("network_allow entry needs a host and a port in 1-65535");
      }
    }
  } else if (j.contains("network_allow")) {
    return InvalidArgumentError("network_allow is only valid with network \"allow-list\"");
  }
  plan.uid = j.at("user").at("uid").get<uint32_t>();
  plan.gid = j.at("user").at("gid").get<uint32_t>();
  COCOON_ASSIGN_OR_RETURN(plan.root, EnumFromName(kRootKinds, j.at("root").at("kind").get<std::string>(), "root kind"));
  plan.rootfs = j.at("root").at("rootfs").get<std::string>();
  for (const auto& m : j.at("mounts")) {
    COCOON_ASSIGN_OR_RETURN(PlanMount mount, MountFromJson(m));
    plan.mounts.push_back(std::move(mount));
  }
  plan.work_path = j.at("work").at("path").get<std::string>();
  COCOON_RETURN_IF_ERROR(CheckAbsolute(plan.work_path, "work path"));
  COCOON_ASSIGN_OR_RETURN(plan.work_mode, EnumFromName(kWorkModes, j.at("work").at("mode").get<std::string>(), "work mode"));
  plan.work_quota_bytes = j.at("work").at("quota_bytes").get<uint64_t>();
  for (const auto& c : j.at("copies")) {
    plan.copies.push_back({c.at("source").get<std::string>(), c.at("destination").get<std::string>()});
  }
  for (const auto& r : j.at("landlock")) {
    LandlockRule rule;
    rule.path = r.at("path").get<std::string>();
    COCOON_RETURN_IF_ERROR(CheckAbsolute(rule.path, "landlock path"));
    COCOON_ASSIGN_OR_RETURN(rule.access, EnumFromName(kLandlockAccess, r.at("access").get<std::string>(), "landlock access"));
    rule.optional = r.value("optional", false);
    plan.landlock.push_back(std::move(rule));
  }
  for (const auto& r : j.at("rlimits")) {
    plan.rlimits.push_back({r.at("resource").get<std::string>(), r.at("soft").get<uint64_t>(), r.at("hard").get<uint64_t>()});
  }
  for (const auto& l : j.at("limits")) {
    plan.limits.push_back({l.at("name").get<std::string>(), l.at("value").get<uint64_t>(),
                           l.at("unit").get<std::string>(), l.at("required").get<bool>()});
  }
  for (const auto& [name, value] : j.at("environment").at("set").items()) {
    plan.env_set.push_back({name, value.get<std::string>()});
  }
  plan.env_pass = j.at("environment").at("pass").get<std::vector<std::string>>();
  plan.env_unset = j.at("environment").at("unset").get<std::vector<std::string>>();
  plan.env_clear = j.at("environment").at("clear").get<bool>();
  plan.cwd = j.at("cwd").get<std::string>();
  COCOON_RETURN_IF_ERROR(CheckAbsolute(plan.cwd, "cwd"));
  plan.hostname = j.at("hostname").get<std::string>();
  plan.wall_timeout_ms = j.at("wall_timeout_ms").get<uint64_t>();
  plan.output_cap_bytes = j.at("output_cap_bytes").get<uint64_t>();
  plan.seccomp_path = j.at("seccomp").at("path").get<std::string>();
  plan.seccomp_sha256 = j.at("seccomp").at("sha256").get<std::string>();
  return Status::Ok();
}

}  // namespace

std::string_view PlanMountKindName(PlanMountKind kind) { return EnumName(kMountKinds, kind); }
std::string_view LandlockAccessName(LandlockAccess access) { return EnumName(kLandlockAccess, access); }

std::string LaunchPlanToJson(const LaunchPlan& plan) { return ToJson(plan).dump(2) + "\n"; }

Result<LaunchPlan> LaunchPlanFromJson(std::string_view text) {
  LaunchPlan plan;
  try {
    json j = json::parse(text);
    COCOON_RETURN_IF_ERROR(FromJsonInto(j, plan).WithContext("linux.plan.json"));
  } catch (const json::exception& e) {
    return InvalidArgumentError(std::string("linux.plan.json: ") + e.what());
  }
  return plan;
}

namespace {

// Stops the parse (returns false) at the top-level "network" key's value, or
// at anything that is not a plan. For plans not in LaunchPlanToJson's layout.
class NetworkPeek final : public json::json_sax_t {
 public:
  std::optional<std::string> value;

  bool key(string_t& name) override {
    at_network_ = depth_ == 1 && name == "network";
    return true;
  }
  bool string(string_t& text) override {
    if (!at_network_) return true;
    value = text;
    return false;
  }
  bool start_object(std::size_t) override { return Enter(); }
  bool start_array(std::size_t) override { return Enter(); }
  bool end_object() override { return Leave(); }
  bool end_array() override { return Leave(); }
  bool null() override { return !at_network_; }
  bool boolean(bool) override { return !at_network_; }
  bool number_integer(number_integer_t) override { return !at_network_; }
  bool number_unsigned(number_unsigned_t) override { return !at_network_; }
  bool number_float(number_float_t, const string_t&) override { return !at_network_; }
  bool binary(binary_t&) override { return !at_network_; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception&) override { return false; }

 private:
  bool Enter() {
    if (at_network_) return false;  // "network" must be a string
    ++depth_;
    return true;
  }
  bool Leave() {
    --depth_;
    return true;
  }
  int depth_ = 0;
  bool at_network_ = false;
};

}  // namespace

std::optional<ir::NetworkMode> PeekLaunchPlanNetwork(std::string_view text) {
  // LaunchPlanToJson's layout (2-space indent) starts each top-level key on
  // a line of its own after exactly two spaces; nested keys are indented
  // further, and no JSON string holds a raw newline. So in a plan this
  // program wrote, the top-level key is found by one search (~1 us instead
  // of the SAX pass's ~40); other layouts (a hand-edited compiled dir) take
  // the SAX pass. A plan laid out to fool the search only costs a second
  // child: Sandbox::Run checks the child against the parsed plan.
  constexpr std::string_view kTopLevelKey = "\n  \"network\": \"";
  if (size_t at = text.find(kTopLevelKey); at != std::string_view::npos) {
    size_t begin = at + kTopLevelKey.size();
    size_t end = text.find('"', begin);
    if (end != std::string_view::npos) {
      auto mode = EnumFromName(kNetworkModes, std::string(text.substr(begin, end - begin)), "network mode");
      if (mode.ok()) return *mode;
    }
  }
  NetworkPeek peek;
  // sax_parse reports "false" both for a stop and for an error; the value
  // tells them apart. No exceptions: parse_error returns false.
  (void)json::sax_parse(text.begin(), text.end(), &peek, json::input_format_t::json, false);
  if (!peek.value) return std::nullopt;
  auto mode = EnumFromName(kNetworkModes, *peek.value, "network mode");
  if (!mode.ok()) return std::nullopt;
  return *mode;
}

}  // namespace cocoon::backends
