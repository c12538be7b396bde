// Every event type Cocoon writes, validated against the OCSF 1.8.0 required
// attributes of its class (trimmed schema copy in data/) and the ECS fields
// SIEMs key on.
#include <set>

#include "audit/record.h"
#include "tests/audit/audit_test_util.h"

namespace cocoon::audit::testing {
namespace {

using nlohmann::json;

json Schema() {
  return json::parse(ReadFile(std::string(COCOON_AUDIT_TEST_DATA) + "/ocsf-1.8.0-trimmed.json"));
}

std::vector<Event> OneOfEach() {
  std::vector<Event> events;
  events.push_back(PolicyCompiled({"p", "policies/p.cocoon", std::string(64, 'a'), "compile", true, 0, 0,
                                   {{"linux-seccomp", std::string(64, 'b')}}}));
  events.push_back(PolicyCompiled({"p", "policies/p.cocoon", std::string(64, 'a'), "check", false, 2, 0, {}}));
  SandboxLaunchedInfo launch;
  launch.argv = {"/bin/sh", "-c", "echo \xff\xfe; exit 3"};  // invalid UTF-8 from a stranger
  launch.pid = 77;
  launch.namespaces = {"user", "pid"};
  launch.limits = {{"memory", ~0ULL, "bytes", "cgroup-v1", true}};
  events.push_back(SandboxLaunched(launch));
  events.push_back(SyscallDenied({"ptrace", 101, {~0ULL, 1}, "errno(EPERM)", 12, "p", 77, "r"}));
  events.push_back(SyscallDenied({"socket", 41, {}, "log", 1, "p", 0, "r"}));
  events.push_back(SyscallDenied({"unshare", 272, {}, "kill", 1, "", 77, "r"}));
  for (auto kind : {LimitKind::kTimeout, LimitKind::kOom, LimitKind::kProcessCap, LimitKind::kDiskQuota,
                    LimitKind::kOutputTruncated})
    events.push_back(LimitHit({kind, 10, 11, "count", "", "p", "r"}));
  events.push_back(BreakoutFinding({"a/b", "symlink-escape", "/etc/shadow", "p", "r"}));
  ProcessExitedInfo exited;
  exited.pid = 77;
  exited.exit_code = 3;
  exited.termination_reason = "exited";
  events.push_back(ProcessExited(exited));
  events.push_back(ToolCall({{"execute_code", "7", "claude-code"}, true, "bad_input", "bad input: unknown argument 'bogus'", 4242}));
  events.push_back(ToolCall({{"inspect_runtimes", "\"abc\"", ""}, false, "", "15 runtimes, 6 installed", 4242}));
  return events;
}

class OcsfTest : public AuditTempDir {
 protected:
  std::vector<json> WriteEverything() {
    auto next = SigningKey::Generate();
    EXPECT_TRUE(WriteKeyPair(*next, Path("key2")).ok());
    AuditLogOptions options = Options("log");
    options.rotate_bytes = 1;  // one rotation right after the first batch
    options.key_path = Path("key2");  // the key rotated to (the first one is retired)
    auto log = AuditLog::Open(Options("log"));
    EXPECT_TRUE(log.ok());
    EXPECT_TRUE((*log)->AppendBatch(OneOfEach()).ok());
    EXPECT_TRUE((*log)->Checkpoint().ok());
    EXPECT_TRUE((*log)->RotateKey(Path("key2")).ok());
    EXPECT_TRUE((*log)->Close().ok());
    WriteFile(Path("log"), ReadFile(Path("log")) + "{\"torn");  // force a recovery record
    auto rotating = AuditLog::Open(options);
    EXPECT_TRUE(rotating.ok());
    EXPECT_TRUE((*rotating)->Append(SampleDenial(1)).ok());
    EXPECT_TRUE((*rotating)->Close().ok());
    std::vector<json> out;
    for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
      std::string name = entry.path().filename();
      if (name.rfind("log", 0) != 0) continue;
      for (const auto& line : SplitLines(ReadFile(entry.path()))) {
        if (line.rfind("{\"torn", 0) == 0) continue;
        out.push_back(json::parse(line));
      }
    }
    return out;
  }
};

void CheckObject(const json& schema, const std::string& name, const json& value, const std::string& where) {
  const json& object = schema["objects"][name];
  ASSERT_TRUE(value.is_object()) << where << ": " << name;
  for (const auto& required : object["required"]) EXPECT_TRUE(value.contains(required)) << where << "." << required;
  if (object["constraints"].is_object() && object["constraints"].contains("at_least_one")) {
    bool any = false;
    for (const auto& k : object["constraints"]["at_least_one"]) any = any || value.contains(k);
    EXPECT_TRUE(any) << where << ": " << name << " needs at least one of " << object["constraints"].dump();
  }
}

// Wazuh's JSON decoder drops arrays of objects: a Cocoon line has none.
bool HasArrayOfObjects(const json& value) {
  if (value.is_array()) {
    for (const auto& element : value)
      if (element.is_object() || element.is_array() || HasArrayOfObjects(element)) return true;
  }
  if (value.is_object()) {
    for (const auto& [key, member] : value.items())
      if (HasArrayOfObjects(member)) return true;
  }
  return false;
}

void CheckEvent(const json& schema, const json& e) {
  EXPECT_FALSE(HasArrayOfObjects(e)) << e.dump();
  std::string where = e.dump().substr(0, 160);
  const json* klass = nullptr;
  for (const auto& [name, c] : schema["classes"].items())
    if (c["class_uid"] == e["class_uid"]) klass = &c;
  ASSERT_NE(klass, nullptr) << "class not in the trimmed schema: " << where;
  for (const auto& attribute : (*klass)["required"]) EXPECT_TRUE(e.contains(attribute)) << where << " lacks " << attribute;
  EXPECT_EQ(e["category_uid"], (*klass)["category_uid"]);
  EXPECT_TRUE((*klass)["activities"].contains(std::to_string(e["activity_id"].get<int>()))) << where;
  EXPECT_EQ(e["type_uid"].get<int>(), e["class_uid"].get<int>() * 100 + e["activity_id"].get<int>());
  EXPECT_TRUE(e["severity_id"].is_number_integer());
  EXPECT_TRUE(e["time"].is_number_integer());
  EXPECT_GT(e["time"].get<int64_t>(), 1'000'000'000'000);  // epoch milliseconds
  CheckObject(schema, "metadata", e["metadata"], where);
  EXPECT_EQ(e["metadata"]["version"], "1.8.0");
  CheckObject(schema, "product", e["metadata"]["product"], where);
  EXPECT_TRUE(e["metadata"]["uid"].is_string());
  EXPECT_EQ(e["metadata"]["sequence"], e["cocoon"]["integrity"]["seq"]);
  if (e["category_uid"] == 1) {  // System Activity requires actor and device
    CheckObject(schema, "actor", e["actor"], where);
    CheckObject(schema, "device", e["device"], where);
    CheckObject(schema, "os", e["device"]["os"], where);
  }
  if (e.contains("process")) CheckObject(schema, "process", e["process"], where);
  if (e.contains("kernel")) {
    CheckObject(schema, "kernel", e["kernel"], where);
    EXPECT_EQ(e["kernel"]["type_id"], 2);  // System Call
  }
  if (e.contains("finding_info")) CheckObject(schema, "finding_info", e["finding_info"], where);
  if (e.contains("file")) CheckObject(schema, "file", e["file"], where);
  const json& profiles = e["metadata"]["profiles"];
  if (std::find(profiles.begin(), profiles.end(), "security_control") != profiles.end()) {
    for (const auto& attribute : schema["profiles"]["security_control"]["attributes"])
      EXPECT_TRUE(e.contains(attribute)) << where << " lacks " << attribute;
    CheckObject(schema, "policy", e["policy"], where);
  }
  if (e["class_uid"] == 1003) {
    EXPECT_NE(std::find(profiles.begin(), profiles.end(), "security_control"), profiles.end());
  }
  // ECS.
  EXPECT_TRUE(e["@timestamp"].is_string());
  EXPECT_TRUE(e["ecs"]["version"].is_string());
  for (const char* key : {"kind", "action", "outcome"}) EXPECT_TRUE(e["event"][key].is_string()) << where << key;
  EXPECT_TRUE(e["event"]["category"].is_array());
  EXPECT_TRUE(e["event"]["type"].is_array());
  EXPECT_EQ(e["event"]["sequence"], e["metadata"]["sequence"]);
  // Integrity: flat scalars only (Wazuh drops arrays of objects).
  for (const auto& [key, value] : e["cocoon"]["integrity"].items())
    EXPECT_TRUE(value.is_primitive()) << key;
}

TEST_F(OcsfTest, EveryEventTypeHasItsClassRequiredAttributes) {
  json schema = Schema();
  auto events = WriteEverything();
  std::set<std::string> kinds;
  std::set<int> classes;
  for (const auto& e : events) {
    CheckEvent(schema, e);
    kinds.insert(e["cocoon"]["integrity"]["kind"].get<std::string>());
    classes.insert(e["class_uid"].get<int>());
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"checkpoint", "continue", "event", "key-rotate", "recovery", "rotate",
                                          "seal", "start"}));
  EXPECT_EQ(classes, (std::set<int>{1003, 1007, 1008, 2004, 6002}));
}

// The builders render their body once; it must be exactly what the DOM path
// (a hand-made Event with the same fields) renders.
TEST_F(OcsfTest, PrerenderedBuildersMatchTheirFields) {
  for (const auto& event : OneOfEach()) {
    ASSERT_TRUE(event.rendered);
    json fields = EventFields(event);
    EXPECT_TRUE(fields.contains("class_uid")) << fields.dump();
    EXPECT_FALSE(fields.contains("time"));
    auto again = RenderEvent(fields);
    ASSERT_TRUE(again.ok()) << again.status().ToString();
    EXPECT_EQ((*again)->body, event.rendered->body);
    EXPECT_EQ((*again)->severity_id, event.rendered->severity_id);
  }
}

// SyscallDenied writes canonical text directly (no DOM): byte for byte what
// the DOM path renders, splice points included, for every branch.
TEST_F(OcsfTest, PrerenderedSyscallDeniedMatchesTheDomPath) {
  std::vector<SyscallDeniedInfo> cases = {
      {"ptrace", 101, {~0ULL, 1, 0, 0, 0, 0, 7}, "errno(EPERM)", 12, "p", 77, "r"},
      {"socket", 41, {}, "log", 1, "p", 0, "r"},
      {"unshare", 272, {}, "kill", ~0ULL, "", 77, ""},
      {"ioctl\xff\"\n", -1, {16}, "trace", 3, "pol\xc3\xa9 \"q\"", -5, "run\x01"}};
  for (const auto& info : cases) {
    Event direct = SyscallDenied(info);
    auto reference = RenderEvent(SyscallDeniedFields(info));
    ASSERT_TRUE(reference.ok()) << reference.status().ToString();
    ASSERT_TRUE(direct.rendered);
    EXPECT_EQ(direct.rendered->body, (*reference)->body);
    EXPECT_EQ(direct.rendered->severity_id, (*reference)->severity_id);
    ASSERT_EQ(direct.rendered->splices.size(), (*reference)->splices.size());
    for (size_t i = 0; i < direct.rendered->splices.size(); ++i) {
      EXPECT_EQ(direct.rendered->splices[i].offset, (*reference)->splices[i].offset) << i;
      EXPECT_EQ(direct.rendered->splices[i].id, (*reference)->splices[i].id) << i;
    }
  }
}

// Editing `fields` of a builder's (already rendered) event would be lost on
// write; Append refuses it, and the hand-made route keeps the edit.
TEST_F(OcsfTest, EditedBuilderEventIsRefusedNotSilentlyDropped) {
  auto log = AuditLog::Open(Options("log"));
  ASSERT_TRUE(log.ok());
  Event edited = SyscallDenied({"ptrace", 101, {}, "errno(EPERM)", 1, "p", 1, "r"});
  edited.fields["labels"] = {{"team", "red"}};
  EXPECT_FALSE((*log)->Append(std::move(edited)).ok());
  Event hand{EventFields(SyscallDenied({"ptrace", 101, {}, "errno(EPERM)", 1, "p", 1, "r"})), nullptr};
  hand.fields["labels"] = {{"team", "red"}};
  EXPECT_TRUE((*log)->Append(std::move(hand)).ok());
  EXPECT_TRUE((*log)->Close().ok());
  std::string text = ReadFile(Path("log"));
  EXPECT_NE(text.find("\"labels\":{\"team\":\"red\"}"), std::string::npos);
}

TEST_F(OcsfTest, SecurityControlFieldsForDenials) {
  json denied = EventFields(SyscallDenied({"ptrace", 101, {}, "errno(EPERM)", 1, "p", 1, "r"}));
  EXPECT_EQ(denied["action_id"], 2);
  EXPECT_EQ(denied["disposition_id"], 2);
  EXPECT_EQ(denied["policy"]["name"], "p");
  json logged = EventFields(SyscallDenied({"ptrace", 101, {}, "log", 1, "p", 1, "r"}));
  EXPECT_EQ(logged["action_id"], 1);
  EXPECT_EQ(logged["disposition_id"], 17);
  // uint64 arguments are hex strings: integers above 2^53 have no exact JSON form.
  json big = EventFields(SyscallDenied({"ioctl", 16, {~0ULL}, "kill", 1, "p", 1, "r"}));
  EXPECT_EQ(big["cocoon"]["syscall"]["args"][0], "0xffffffffffffffff");
}

}  // namespace
}  // namespace cocoon::audit::testing
