// `verify --ignore-extra-keys` re-parses lines a shipper may have rewritten:
// it must not read a different line than a SIEM does, crash on hostile
// nesting, or fail Cocoon's own fields (reviewer finding 3).
#include <set>

#include "audit/event_common.h"
#include "tests/audit/audit_test_util.h"

namespace cocoon::audit::testing {
namespace {

using nlohmann::json;

class IgnoreExtraKeysTest : public AuditTempDir {
 protected:
  // Writes a sealed log with `event` between start and seal; returns its lines.
  std::vector<std::string> WriteWith(Event event) {
    auto log = AuditLog::Open(Options("log"));
    EXPECT_TRUE(log.ok());
    EXPECT_TRUE((*log)->Append(std::move(event)).ok());
    EXPECT_TRUE((*log)->Close().ok());
    return SplitLines(ReadFile(Path("log")));
  }
};

// nlohmann keeps the last of two equal keys, a SIEM may keep the first: the
// line the hash covers and the line an analyst sees would differ.
TEST_F(IgnoreExtraKeysTest, DuplicateKeyAtAnyDepthIsTampered) {
  auto lines = WriteWith(SampleDenial(1));
  const std::string real = "\"syscall\":{\"action\":\"errno(EPERM)\"";
  size_t at = lines[1].find(real);
  ASSERT_NE(at, std::string::npos);
  lines[1].insert(at + std::string("\"syscall\":{").size(), "\"action\":\"allow\",");
  WriteFile(Path("log"), JoinLines(lines));
  VerifyReport report = Verify({Path("log")}, /*ignore_extra_keys=*/true);
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered) << FormatReport(report);
  EXPECT_EQ(report.line, 2u);
  EXPECT_NE(report.reason.find("duplicate"), std::string::npos) << report.reason;

  lines = WriteWith(SampleDenial(1));  // a top-level duplicate too
  lines[1].insert(1, "\"message\":\"all fine\",");
  WriteFile(Path("log"), JoinLines(lines));
  EXPECT_EQ(Verify({Path("log")}, true).verdict, VerifyVerdict::kTampered);
}

// A key holding U+0000 is not one of Cocoon's, so it used to be ignored as
// a shipper's; a SIEM that ends keys at a NUL reads "message\u0000" as a
// second "message" and shows its value instead of the signed one.
TEST_F(IgnoreExtraKeysTest, AKeyHoldingANulIsTampered) {
  auto lines = WriteWith(SampleDenial(1));
  lines[1].insert(1, "\"message\\u0000\":\"all fine\",");
  WriteFile(Path("log"), JoinLines(lines));
  VerifyReport report = Verify({Path("log")}, /*ignore_extra_keys=*/true);
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered) << FormatReport(report);
  EXPECT_EQ(report.line, 2u);
  EXPECT_NE(report.reason.find("U+0000"), std::string::npos) << report.reason;
}

// 100,000 nested arrays inside a Cocoon object overflowed the stack of the
// re-canonicalisation (a crash, not a verdict); in a shipper's own key they
// were silently dropped. Both are refused before anything is parsed.
TEST_F(IgnoreExtraKeysTest, DeepNestingIsRefusedNotACrash) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  for (bool inside_cocoon : {true, false}) {
    auto lines = WriteWith(SampleDenial(1));
    if (inside_cocoon) lines[1].insert(lines[1].find("\"cocoon\":{") + 10, "\"deep\":" + deep + ",");
    else lines[1].insert(lines[1].size() - 1, ",\"zzz\":" + deep);
    WriteFile(Path("log"), JoinLines(lines));
    VerifyReport report = Verify({Path("log")}, /*ignore_extra_keys=*/true);
    EXPECT_EQ(report.verdict, VerifyVerdict::kTampered) << FormatReport(report);
    EXPECT_NE(report.reason.find("nesting too deep"), std::string::npos) << report.reason;
  }
}

// Elasticsearch, Splunk and Wazuh read a dotted key as the nested field of
// that path: "event.outcome" beside the signed {"event":{"outcome":...}}
// would override it in the SIEM while the signature still checks, and so
// would "severity.x" (through the signed string). A dotted key that only
// adds a field inside one of Cocoon's namespaces is no better: an unsigned
// "cocoon.breakout.verdict" or "event.severity" shows up among the signed
// fields (reviewer finding 7). Every such key is tampering; only a key
// outside Cocoon's namespaces (a shipper's "log.offset", "host.name") is
// dropped.
TEST_F(IgnoreExtraKeysTest, ADottedKeyInACocoonNamespaceIsTampered) {
  const std::vector<std::pair<std::string, json>> added = {
      {"event.outcome", "allow"},               // overrides a signed field
      {"cocoon.syscall.action", "allow"},
      {"severity.x", "allow"},                  // runs through a signed value
      {"cocoon.breakout.verdict", "false positive"},  // adds beside signed fields
      {"event.severity", 0},
      {"event.ingested", "2026-12-02T00:00:00Z"},
      {"process.parent.pid", 1},                // a namespace this line lacks, but Cocoon's
      {"finding_info.title", "nothing"},
      {"metadata.product.name", "x"},
  };
  for (const auto& [key, value] : added) {
    std::filesystem::remove(Path("log"));
    auto lines = WriteWith(BreakoutFinding({"out/link", "symlink-escape", "/etc/shadow", "p", "r"}));
    json j = json::parse(lines[1]);
    j[key] = value;
    lines[1] = j.dump();
    WriteFile(Path("log"), JoinLines(lines));
    VerifyReport report = Verify({Path("log")}, /*ignore_extra_keys=*/true);
    EXPECT_EQ(report.verdict, VerifyVerdict::kTampered) << key << ": " << FormatReport(report);
    EXPECT_EQ(report.line, 2u) << key;
    EXPECT_NE(report.reason.find("extra key \"" + key + "\" is in Cocoon's signed namespace \"" +
                                 key.substr(0, key.find('.')) + "\""),
              std::string::npos)
        << report.reason;
  }
  std::filesystem::remove(Path("log"));
  auto lines = WriteWith(SampleDenial(1));
  for (auto& line : lines) {
    json j = json::parse(line);
    j["log.offset"] = 1234;
    j["host.name"] = "shipper-box";
    j["host"] = {{"hostname", "shipper-box"}};
    j["agent.type"] = "filebeat";
    j["@version"] = "1";
    line = j.dump();
  }
  WriteFile(Path("log"), JoinLines(lines));
  VerifyReport shipper = Verify({Path("log")}, true);
  EXPECT_EQ(shipper.verdict, VerifyVerdict::kSealed) << FormatReport(shipper);
}

// An MCP log (ToolCall writes status_detail) verifies after a shipper added keys.
TEST_F(IgnoreExtraKeysTest, ToolCallLogVerifiesWithShipperKeys) {
  auto lines = WriteWith(ToolCall({{"execute_code", "7", ""}, true, "bad_input", "bad input", 4242}));
  ASSERT_NE(lines[1].find("\"status_detail\""), std::string::npos);
  for (auto& line : lines) {
    json j = json::parse(line);
    j["agent"] = {{"name", "filebeat"}};
    line = j.dump();
  }
  WriteFile(Path("log"), JoinLines(lines));
  VerifyReport report = Verify({Path("log")}, /*ignore_extra_keys=*/true);
  EXPECT_EQ(report.verdict, VerifyVerdict::kSealed) << FormatReport(report);
}

// Every builder and every lifecycle record, with optional fields set: any
// top-level key one of them writes must be on the verifier's allow-list, or
// --ignore-extra-keys would drop it and call every such line tampered.
TEST_F(IgnoreExtraKeysTest, EveryTopLevelKeyWrittenIsOnTheAllowList) {
  std::vector<Event> events;
  events.push_back(PolicyCompiled({"p", "p.cocoon", std::string(64, 'a'), "compile", true, 0, 0, {{"oci", "x"}}}));
  SandboxLaunchedInfo launch;
  launch.argv = {"/bin/true"};
  launch.cwd = "/w";
  launch.pid = 7;
  launch.policy_sha256 = std::string(64, 'a');
  events.push_back(SandboxLaunched(launch));
  events.push_back(SyscallDenied({"ptrace", 101, {1}, "errno(EPERM)", 1, "p", 7, "r"}));
  events.push_back(SyscallDenied({"ptrace", 101, {1}, "log", 1, "", 0, ""}));
  events.push_back(LimitHit({LimitKind::kOom, 1, 2, "bytes", "d", "p", "r"}));
  events.push_back(BreakoutFinding({"a", "hardlink", "/etc/passwd", "p", "r"}));
  ProcessExitedInfo exited;
  exited.error = "e";
  exited.work_mode = "copy";
  exited.breakout_findings = 1;
  events.push_back(ProcessExited(exited));
  events.push_back(ToolCall({{"execute_code", "1", ""}, true, "busy", "refused", 1}));
  events.push_back(ToolCall({{"inspect_runtimes", "2", ""}, false, "", "ok", 1}));
  auto next = SigningKey::Generate();
  ASSERT_TRUE(WriteKeyPair(*next, Path("key2")).ok());
  AuditLogOptions options = Options("log");
  options.rotate_bytes = 1;  // rotate and continue records too
  {
    auto log = AuditLog::Open(options);
    ASSERT_TRUE(log.ok());
    ASSERT_TRUE((*log)->AppendBatch(std::move(events)).ok());
    ASSERT_TRUE((*log)->Checkpoint().ok());
    ASSERT_TRUE((*log)->RotateKey(Path("key2")).ok());
    ASSERT_TRUE((*log)->Close().ok());
  }
  WriteFile(Path("log"), ReadFile(Path("log")) + "{\"torn");  // and a recovery record
  AuditLogOptions after_rotation = Options("log");
  after_rotation.key_path = Path("key2");  // the first key is retired
  ASSERT_TRUE(AuditLog::Open(after_rotation).ok());
  std::set<std::string> kinds;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    if (entry.path().filename().string().rfind("log", 0) != 0) continue;
    for (const auto& line : SplitLines(ReadFile(entry.path()))) {
      json j = json::parse(line);
      kinds.insert(j["cocoon"]["integrity"]["kind"].get<std::string>());
      for (const auto& [key, value] : j.items()) EXPECT_TRUE(IsCocoonTopLevelKey(key)) << key << " in " << line;
    }
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"checkpoint", "continue", "event", "key-rotate", "recovery", "rotate",
                                          "seal", "start"}));
}

}  // namespace
}  // namespace cocoon::audit::testing

namespace cocoon::audit::testing {
namespace {

// --ignore-extra-keys dropped a shipper's keys without a word: a key added
// to every line (or one an attacker hoped a SIEM would show) went unseen.
// Now the report counts the keys and the lines, names the first 8 distinct
// keys (JSON-escaped, each cut to 64 bytes), and prints it as a note; the
// verdict is unchanged. Seen failing with the reporting disabled (no note,
// zero counts).
TEST_F(IgnoreExtraKeysTest, WhatItDroppedIsCountedAndNamed) {
  auto log = AuditLog::Open(Options("log"));
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE((*log)->Append(SampleDenial(1)).ok());
  ASSERT_TRUE((*log)->Close().ok());
  auto lines = SplitLines(ReadFile(Path("log")));
  ASSERT_EQ(lines.size(), 3u);
  for (auto& line : lines) line.insert(1, "\"agent\":\"filebeat\",\"host.name\":\"h\",");
  lines[1].insert(1, "\"x\\u001b[31m\":1,\"" + std::string(100, 'k') + "\":2,");
  WriteFile(Path("log"), JoinLines(lines));
  VerifyReport report = Verify({Path("log")}, /*ignore_extra_keys=*/true);
  EXPECT_EQ(report.verdict, VerifyVerdict::kSealed) << FormatReport(report);
  const std::string text = FormatReport(report);
  EXPECT_NE(text.find("note: --ignore-extra-keys dropped 8 keys from 3 lines before checking"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\"x\\u001b[31m\""), std::string::npos) << "the ESC is shown escaped: " << text;
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << "a raw ESC reached the report";
  EXPECT_EQ(report.extra_keys_dropped, 8u);
  EXPECT_EQ(report.lines_with_extra_keys, 3u);
  std::set<std::string> names(report.extra_key_names.begin(), report.extra_key_names.end());
  EXPECT_EQ(names, (std::set<std::string>{"agent", "host.name", "x\x1b[31m", std::string(64, 'k')}));

  // Many distinct keys: at most 8 names, the count is whole.
  std::string many;
  for (int i = 0; i < 20; ++i) many += "\"extra" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  lines = SplitLines(ReadFile(Path("log")));
  lines[1].insert(1, many);
  WriteFile(Path("log"), JoinLines(lines));
  report = Verify({Path("log")}, true);
  EXPECT_EQ(report.verdict, VerifyVerdict::kSealed) << FormatReport(report);
  EXPECT_EQ(report.extra_keys_dropped, 28u);
  EXPECT_EQ(report.extra_key_names.size(), 8u);
  EXPECT_NE(FormatReport(report).find("the first names: "), std::string::npos) << FormatReport(report);

  // Without extra keys: nothing said.
  ASSERT_TRUE(std::filesystem::remove(Path("log")));
  auto clean = AuditLog::Open(Options("log"));
  ASSERT_TRUE(clean.ok());
  ASSERT_TRUE((*clean)->Close().ok());
  report = Verify({Path("log")}, true);
  EXPECT_EQ(report.extra_keys_dropped, 0u);
  EXPECT_EQ(FormatReport(report).find("--ignore-extra-keys"), std::string::npos) << FormatReport(report);
}

}  // namespace
}  // namespace cocoon::audit::testing
