// Text an agent or a sandbox chose reaches the audit log's human-readable
// fields (message, process.command_line, cocoon.mcp.client_name, breakout
// paths): JSON escaping alone left it decoded for `jq -r .message`, so a
// terminal acted on cursor escapes and showed text a bidi override reordered
// ("Trojan Source"; reviewer finding). Those fields now show such characters
// as visible escapes; process.args keeps the exact argv.
#include <stdio.h>

#include "compiler/common/hidden_characters.h"
#include "tests/audit/audit_test_util.h"

namespace cocoon::audit::testing {
namespace {

using nlohmann::json;

// The reviewer's argv.
const std::vector<std::string> kArgv = {"/bin/echo", "safe\u202e\u2066 txt.exe", "x'\n\x1b[1Aecho benign"};

// Nothing a terminal acts on (C0, DEL, C1) or hides (bidi, zero-width).
::testing::AssertionResult Visible(const std::string& field, const std::string& text) {
  for (size_t i = 0; i < text.size(); ++i) {
    auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x20 || c == 0x7F) return ::testing::AssertionFailure() << field << " has control byte " << int(c) << ": " << text;
    if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) <= 0x9F)
      return ::testing::AssertionFailure() << field << " has a C1 control: " << text;
  }
  if (!FindHiddenCharacters(text).empty())
    return ::testing::AssertionFailure() << field << " has " << FindHiddenCharacters(text)[0].name << ": " << text;
  return ::testing::AssertionSuccess();
}

TEST(ReadableTextTest, TheLaunchEventShowsControlAndBidiCharactersAsEscapes) {
  SandboxLaunchedInfo info;
  info.argv = kArgv;
  info.run_id = "run-1";
  info.mcp = {"run_in_sandbox", "7\u202e", "agent\x1b]0;owned\x07\u2067"};
  json e = EventFields(SandboxLaunched(info));
  const std::string expected = R"(/bin/echo $'safe\u202e\u2066 txt.exe' $'x\'\n\x1b[1Aecho benign')";
  EXPECT_EQ(e["process"]["command_line"], expected);
  EXPECT_EQ(e["process"]["cmd_line"], expected);
  EXPECT_EQ(e["message"], "sandbox launched: " + expected);
  EXPECT_EQ(e["process"]["args"], json(kArgv)) << "the exact argv stays in process.args";
  EXPECT_EQ(e["cocoon"]["mcp"]["client_name"], R"(agent\x1b]0;owned\x07\u2067)");
  EXPECT_EQ(e["cocoon"]["mcp"]["request_id"], R"(7\u202e)");
  for (const char* field : {"command_line", "cmd_line"}) EXPECT_TRUE(Visible(field, e["process"][field]));
  EXPECT_TRUE(Visible("message", e["message"]));
}

// The $'...' form is bash's: a shell reads the command line back as the
// exact argv (in a UTF-8 locale, for \uNNNN).
TEST(ReadableTextTest, TheCommandLineIsTheExactArgvForAShell) {
  SandboxLaunchedInfo info;
  info.argv = kArgv;
  info.argv.push_back("back\\slash 'q' \x7f\xc2\x9b end");
  json e = EventFields(SandboxLaunched(info));
  const std::string command_line = e["process"]["command_line"];
  EXPECT_TRUE(Visible("command_line", command_line));
  char script[] = "/tmp/cocoon-readable-XXXXXX";
  int fd = mkstemp(script);
  ASSERT_GE(fd, 0);
  const std::string text = "printf '%s\\0' " + command_line + "\n";
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  FILE* out = popen(("LC_ALL=C.UTF-8 bash " + std::string(script)).c_str(), "r");
  ASSERT_NE(out, nullptr);
  std::string printed;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, out)) > 0;) printed.append(buffer, n);
  EXPECT_EQ(pclose(out), 0);
  unlink(script);
  std::string expected;
  for (const auto& arg : info.argv) expected += arg + '\0';
  EXPECT_EQ(printed, expected);
}

TEST(ReadableTextTest, BreakoutToolCallAndExitTextIsEscaped) {
  json breakout = EventFields(BreakoutFinding({"out/\u202egpj.exe", "symlink-escape", "/etc/\x1b[2Jshadow", "p", "r"}));
  EXPECT_EQ(breakout["cocoon"]["breakout"]["path"], R"(out/\u202egpj.exe)");
  EXPECT_EQ(breakout["cocoon"]["breakout"]["target"], R"(/etc/\x1b[2Jshadow)");
  EXPECT_EQ(breakout["message"], R"(breakout finding: symlink-escape at out/\u202egpj.exe -> /etc/\x1b[2Jshadow)");
  EXPECT_TRUE(Visible("finding_info.uid", breakout["finding_info"]["uid"]));

  ToolCallInfo call;
  call.call = {"run_in_sandbox", "1", "client\u200b"};
  call.refused = true;
  call.kind = "bad_input";
  call.detail = "bad path \"a\nINFO forged line\"";
  json tool = EventFields(ToolCall(call));
  EXPECT_EQ(tool["status_detail"], R"(bad path "a\nINFO forged line")");
  EXPECT_EQ(tool["message"], R"(MCP tool call run_in_sandbox refused: bad path "a\nINFO forged line")");
  EXPECT_EQ(tool["cocoon"]["mcp"]["client_name"], R"(client\u200b)");

  ProcessExitedInfo exited;
  exited.termination_reason = "failed";
  exited.error = "execve /work/\x1b[31mx: No such file or directory";
  exited.work_mode = "copy";
  exited.verification_error = "symlink out/\u202ecod.exe escapes";
  json exit = EventFields(ProcessExited(exited));
  EXPECT_EQ(exit["cocoon"]["exit"]["error"], R"(execve /work/\x1b[31mx: No such file or directory)");
  EXPECT_EQ(exit["cocoon"]["workdir"]["error"], R"(symlink out/\u202ecod.exe escapes)");
}

// OCSF type_name is "class: activity_name" for every activity-99 event.
TEST(ReadableTextTest, AToolCallsTypeNameIsItsActivityName) {
  json tool = EventFields(ToolCall(ToolCallInfo{}));
  EXPECT_EQ(tool["activity_id"], 99);
  EXPECT_EQ(tool["activity_name"], "MCP tool call");
  EXPECT_EQ(tool["type_name"], "Process Activity: MCP tool call");
}

}  // namespace
}  // namespace cocoon::audit::testing
