#include "compiler/backends/windows/windows_plan.h"

#include "compiler/backends/environment_plan.h"

#include <nlohmann/json.hpp>

#include "compiler/backends/windows/sddl.h"

namespace cocoon::backends::windows {
namespace {

using nlohmann::ordered_json;

constexpr std::string_view kRoleNames[] = {"work", "temp", "writable", "readonly", "hidden"};

const char* kRollbackNote =
    "Before changing a path's DACL or label the applier saves the original SDDL "
    "(GetNamedSecurityInfoW + ConvertSecurityDescriptorToStringSecurityDescriptorW) "
    "to <run dir>/rollback.json and restores it when the run ends, even on failure.";

ordered_json JobToJson(const JobSettings& job) {
  ordered_json j;
  j["limit_flags"] = job.limit_flag_names;
  j["limit_flags_value"] = job.limit_flags;
  j["active_process_limit"] = job.active_process_limit;
  j["process_memory_limit"] = job.process_memory_limit;
  j["job_memory_limit"] = job.job_memory_limit;
  j["per_job_user_time_limit_100ns"] = job.per_job_user_time_100ns;
  j["priority_class_value"] = job.priority_class;
  j["ui_restrictions"] = job.ui_restriction_names;
  j["ui_restrictions_value"] = job.ui_restrictions;
  j["cpu_rate_percent_of_one_cpu"] = job.cpu_rate_percent_of_one_cpu;
  return j;
}

ordered_json PathToJson(const PathAcl& path) {
  ordered_json j;
  j["policy_path"] = path.policy_path;
  j["location"] = path.location;
  j["role"] = PathRoleName(path.role);
  j["optional"] = path.optional;
  j["deny_aces"] = path.deny_aces;
  j["allow_aces"] = path.allow_aces;
  j["label_ace"] = path.label_ace;
  j["sddl"] = path.sddl;
  return j;
}

Result<PathRole> RoleFromName(const std::string& name) {
  for (size_t i = 0; i < std::size(kRoleNames); ++i) {
    if (kRoleNames[i] == name) return static_cast<PathRole>(i);
  }
  return InvalidArgumentError("windows.json: unknown path role '" + name + "'");
}

// Refuses every setting that would make the job or the ACLs fail open.
Status Validate(const WindowsPlan& plan) {
  const uint32_t flags = plan.job.limit_flags;
  if (flags & (kLimitBreakawayOk | kLimitSilentBreakawayOk)) {
    return InvalidArgumentError("windows.json: breakaway flags would let processes leave the job");
  }
  if (!(flags & kLimitKillOnJobClose)) {
    return InvalidArgumentError("windows.json: KILL_ON_JOB_CLOSE is required");
  }
  if (!IsValidSid(plan.sandbox_sid) || plan.sandbox_sid.size() < 4) {
    return InvalidArgumentError("windows.json: invalid sandbox_sid");
  }
  for (const PathAcl& path : plan.paths) {
    for (const auto& ace : path.deny_aces) {
      if (ace.rfind("(D;", 0) != 0) return InvalidArgumentError("windows.json: non-deny ACE in deny_aces");
    }
    for (const auto& ace : path.allow_aces) {
      if (ace.rfind("(A;", 0) != 0) return InvalidArgumentError("windows.json: non-allow ACE in allow_aces");
      // Writable grants go to the sandbox SID only, never to Everyone.
      if (ace.find(";WD)") != std::string::npos || ace.find(";S-1-1-0)") != std::string::npos) {
        return InvalidArgumentError("windows.json: allow ACE for Everyone");
      }
    }
  }
  return Status::Ok();
}

Result<WindowsPlan> FromJson(const ordered_json& doc) {
  if (doc.at("schema") != "cocoon.windows/v1") return InvalidArgumentError("windows.json: unknown schema");
  WindowsPlan plan;
  plan.profile = doc.at("profile").get<std::string>();
  plan.sandbox_sid = doc.at("sandbox_sid").get<std::string>();
  const auto& job = doc.at("job");
  plan.job.limit_flags = job.at("limit_flags_value").get<uint32_t>();
  plan.job.limit_flag_names = job.at("limit_flags").get<std::vector<std::string>>();
  plan.job.active_process_limit = job.at("active_process_limit").get<uint32_t>();
  plan.job.process_memory_limit = job.at("process_memory_limit").get<uint64_t>();
  plan.job.job_memory_limit = job.at("job_memory_limit").get<uint64_t>();
  plan.job.per_job_user_time_100ns = job.at("per_job_user_time_limit_100ns").get<uint64_t>();
  plan.job.priority_class = job.at("priority_class_value").get<uint32_t>();
  plan.job.ui_restrictions = job.at("ui_restrictions_value").get<uint32_t>();
  plan.job.ui_restriction_names = job.at("ui_restrictions").get<std::vector<std::string>>();
  plan.job.cpu_rate_percent_of_one_cpu = job.at("cpu_rate_percent_of_one_cpu").get<uint32_t>();
  const auto& token = doc.at("token");
  plan.token.restricted_token_flags = token.at("restricted_token_flags_value").get<uint32_t>();
  plan.token.restricted_token_flag_names = token.at("restricted_token_flags").get<std::vector<std::string>>();
  plan.token.restricting_sids = token.at("restricting_sids").get<std::vector<std::string>>();
  plan.token.integrity_level = token.at("integrity_level").get<std::string>();
  plan.token.integrity_sid = token.at("integrity_sid").get<std::string>();
  for (const auto& item : doc.at("paths")) {
    PathAcl path;
    path.policy_path = item.at("policy_path").get<std::string>();
    path.location = item.at("location").get<std::string>();
    COCOON_ASSIGN_OR_RETURN(path.role, RoleFromName(item.at("role").get<std::string>()));
    path.optional = item.at("optional").get<bool>();
    path.deny_aces = item.at("deny_aces").get<std::vector<std::string>>();
    path.allow_aces = item.at("allow_aces").get<std::vector<std::string>>();
    path.label_ace = item.at("label_ace").get<std::string>();
    path.sddl = item.at("sddl").get<std::string>();
    plan.paths.push_back(std::move(path));
  }
  const auto& network = doc.at("network");
  plan.network_mode = network.at("mode").get<std::string>();
  for (const auto& e : network.at("allow")) plan.network_allow.push_back({e.at("host"), e.at("port")});
  const auto& supervisor = doc.at("supervisor");
  plan.wall_time_ms = supervisor.at("wall_time_ms").get<uint64_t>();
  plan.output_bytes = supervisor.at("output_bytes").get<uint64_t>();
  plan.disk_bytes = supervisor.at("disk_bytes").get<uint64_t>();
  plan.work_quota_bytes = supervisor.at("work_quota_bytes").get<uint64_t>();
  plan.unenforced_required_limits = doc.at("unenforced_required_limits").get<std::vector<std::string>>();
  plan.unenforced_best_effort_limits = doc.at("unenforced_best_effort_limits").get<std::vector<std::string>>();
  COCOON_ASSIGN_OR_RETURN(plan.environment, ParseEnvironmentPlan(doc.at("environment")));
  COCOON_RETURN_IF_ERROR(Validate(plan));
  return plan;
}

}  // namespace

std::string_view PathRoleName(PathRole role) { return kRoleNames[static_cast<size_t>(role)]; }

std::string WindowsPlanToJson(const WindowsPlan& plan) {
  ordered_json doc;
  doc["schema"] = "cocoon.windows/v1";
  doc["profile"] = plan.profile;
  doc["sandbox_sid"] = plan.sandbox_sid;
  doc["job"] = JobToJson(plan.job);
  ordered_json token;
  token["restricted_token_flags"] = plan.token.restricted_token_flag_names;
  token["restricted_token_flags_value"] = plan.token.restricted_token_flags;
  token["restricting_sids"] = plan.token.restricting_sids;
  token["integrity_level"] = plan.token.integrity_level;
  token["integrity_sid"] = plan.token.integrity_sid;
  doc["token"] = std::move(token);
  ordered_json paths = ordered_json::array();
  for (const PathAcl& path : plan.paths) paths.push_back(PathToJson(path));
  doc["paths"] = std::move(paths);
  doc["rollback"] = kRollbackNote;
  ordered_json allow = ordered_json::array();
  for (const Endpoint& e : plan.network_allow) allow.push_back({{"host", e.host}, {"port", e.port}});
  // Job objects do not cover the network; the applier installs Windows
  // Filtering Platform filters keyed on the sandbox SID (see docs/targets.md).
  doc["network"] = {{"mode", plan.network_mode}, {"enforced_by", "wfp"}, {"allow", std::move(allow)}};
  doc["supervisor"] = {{"wall_time_ms", plan.wall_time_ms},
                       {"output_bytes", plan.output_bytes},
                       {"disk_bytes", plan.disk_bytes},
                       {"work_quota_bytes", plan.work_quota_bytes}};
  doc["unenforced_required_limits"] = plan.unenforced_required_limits;
  doc["unenforced_best_effort_limits"] = plan.unenforced_best_effort_limits;
  doc["environment"] = EnvironmentPlanJson(plan.environment);
  return doc.dump(2) + "\n";
}

Result<WindowsPlan> ParseWindowsPlan(std::string_view json) {
  try {
    return FromJson(ordered_json::parse(json));
  } catch (const nlohmann::json::exception& e) {
    return InvalidArgumentError(std::string("windows.json: ") + e.what());
  }
}

}  // namespace cocoon::backends::windows
