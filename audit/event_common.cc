#include "audit/event_common.h"

#include <array>
#include <map>

#include "cocoon_version.h"

namespace cocoon::audit {
namespace {

using nlohmann::json;

struct ClassInfo {
  int category_uid;
  const char* category_name;
  const char* class_name;
};

ClassInfo Describe(OcsfClass klass) {
  switch (klass) {
    case OcsfClass::kKernelActivity: return {1, "System Activity", "Kernel Activity"};
    case OcsfClass::kProcessActivity: return {1, "System Activity", "Process Activity"};
    case OcsfClass::kEventLogActivity: return {1, "System Activity", "Event Log Activity"};
    case OcsfClass::kDetectionFinding: return {2, "Findings", "Detection Finding"};
    case OcsfClass::kApplicationLifecycle: return {6, "Application Activity", "Application Lifecycle"};
  }
  return {0, "Uncategorized", "Base Event"};
}

const char* ActivityName(OcsfClass klass, int activity_id) {
  static const std::map<std::pair<int, int>, const char*> kNames = {
      {{1003, 4}, "Invoke"}, {{1007, 1}, "Launch"}, {{1007, 2}, "Terminate"}, {{1008, 5}, "Rotate"},
      {{1008, 6}, "Start"},  {{1008, 7}, "Stop"},   {{2004, 1}, "Create"},    {{6002, 3}, "Start"}};
  auto it = kNames.find({static_cast<int>(klass), activity_id});
  return it == kNames.end() ? "Other" : it->second;
}

const char* SeverityName(int severity_id) {
  static constexpr std::array<const char*, 7> kNames = {"Unknown", "Informational", "Low", "Medium",
                                                        "High",    "Critical",      "Fatal"};
  return severity_id >= 0 && severity_id < 7 ? kNames[severity_id] : "Other";
}

}  // namespace

std::string ProductVersion() { return COCOON_VERSION_STRING; }

json OcsfBase(OcsfClass klass, int activity_id, int severity_id) {
  ClassInfo info = Describe(klass);
  int class_uid = static_cast<int>(klass);
  json e = json::object();
  e["class_uid"] = class_uid;
  e["class_name"] = info.class_name;
  e["category_uid"] = info.category_uid;
  e["category_name"] = info.category_name;
  e["activity_id"] = activity_id;
  e["activity_name"] = ActivityName(klass, activity_id);
  e["type_uid"] = class_uid * 100 + activity_id;
  e["type_name"] = std::string(info.class_name) + ": " + ActivityName(klass, activity_id);
  e["severity_id"] = severity_id;
  e["severity"] = SeverityName(severity_id);
  e["metadata"] = {{"version", kOcsfVersion},
                   {"product", {{"name", "Cocoon"}, {"vendor_name", "Cocoon"}, {"version", ProductVersion()}}},
                   {"log_name", "cocoon-audit"},
                   {"profiles", {"host"}}};
  e["ecs"] = {{"version", kEcsVersion}};
  return e;
}

void EcsEvent(json& e, std::string_view kind, std::initializer_list<const char*> categories,
              std::initializer_list<const char*> types, std::string_view action, std::string_view outcome) {
  json& event = e["event"];
  event["kind"] = kind;
  event["category"] = json::array();
  for (const char* c : categories) event["category"].push_back(c);
  event["type"] = json::array();
  for (const char* t : types) event["type"].push_back(t);
  event["action"] = action;
  event["outcome"] = outcome;
  event["module"] = "cocoon";
  event["dataset"] = "cocoon.audit";
}

bool IsCocoonTopLevelKey(std::string_view key) {
  // tests/audit/ocsf_test.cc (EveryTopLevelKeyIsKnownToTheVerifier) builds
  // every event and fails when a builder writes a key missing here.
  static constexpr std::array<std::string_view, 36> kKeys = {
      "@timestamp", "action", "action_id", "activity_id", "activity_name", "actor", "app",
      "category_name", "category_uid", "class_name", "class_uid", "cocoon", "device", "disposition",
      "disposition_id", "ecs", "event", "exit_code", "file", "finding_info", "is_alert", "kernel",
      "log_name", "log_provider", "message", "metadata", "policy", "process", "severity", "severity_id",
      "status", "status_detail", "status_id", "time", "type_name", "type_uid"};
  for (auto k : kKeys) if (k == key) return true;
  return false;
}

json LifecycleEvent(std::string_view kind, std::string_view log_path, std::string_view message) {
  int activity = 99;  // checkpoint, key-rotate, recovery: "Other"
  const char* ecs_type = "info";
  if (kind == "start" || kind == "continue") { activity = 6; ecs_type = "creation"; }
  if (kind == "rotate") { activity = 5; ecs_type = "change"; }
  if (kind == "seal") activity = 7;
  json e = OcsfBase(OcsfClass::kEventLogActivity, activity, kind == "recovery" ? 3 : 1);
  if (activity == 99) {
    std::string name = kind == "checkpoint" ? "Checkpoint" : kind == "key-rotate" ? "Key Rotate" : "Recovery";
    e["activity_name"] = name;
    e["type_name"] = "Event Log Activity: " + name;
  }
  e["log_name"] = "cocoon-audit";
  e["log_provider"] = "cocoon";
  std::string path(log_path);
  auto slash = path.rfind('/');
  e["file"] = {{"path", path}, {"name", slash == std::string::npos ? path : path.substr(slash + 1)},
               {"type_id", 1}};
  e["message"] = message;
  EcsEvent(e, "event", {"file"}, {ecs_type}, std::string("log-") + std::string(kind),
           kind == "recovery" ? "failure" : "success");
  return e;
}

}  // namespace cocoon::audit
