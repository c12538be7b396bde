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
  const std::string expected = R"(/bin/echo $'safe\xe2\x80\xae\xe2\x81\xa6 txt.exe' $'x\'\n\x1b[1Aecho benign')";
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
// exact argv, in any locale. It used to write \uNNNN, which bash turns into
// a character through the locale: under LC_ALL=C `$'rlo\u202e1'` stayed
// the literal text \u202e. Non-ASCII is now written as its UTF-8 bytes.
TEST(ReadableTextTest, TheCommandLineIsTheExactArgvForAShell) {
  SandboxLaunchedInfo info;
  info.argv = kArgv;
  info.argv.push_back("back\\slash 'q' \x7f\xc2\x9b end");
  info.argv.push_back("rlo\u202e1 tag\U000E0041 vs\uFE0F caf\u00e9 \\x1b \xff");
  json e = EventFields(SandboxLaunched(info));
  const std::string command_line = e["process"]["command_line"];
  EXPECT_TRUE(Visible("command_line", command_line));
  EXPECT_EQ(command_line.find("\\u"), std::string::npos) << command_line;
  char script[] = "/tmp/cocoon-readable-XXXXXX";
  int fd = mkstemp(script);
  ASSERT_GE(fd, 0);
  const std::string text = "printf '%s\\0' " + command_line + "\n";
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  std::string expected;
  for (const auto& arg : info.argv) expected += arg + '\0';
  for (const char* locale : {"C.UTF-8", "C"}) {
    FILE* out = popen(("LC_ALL=" + std::string(locale) + " bash " + std::string(script)).c_str(), "r");
    ASSERT_NE(out, nullptr);
    std::string printed;
    char buffer[4096];
    for (size_t n; (n = fread(buffer, 1, sizeof buffer, out)) > 0;) printed.append(buffer, n);
    EXPECT_EQ(pclose(out), 0);
    EXPECT_EQ(printed, expected) << "LC_ALL=" << locale;
  }
  unlink(script);
}

// A backslash the sandbox wrote is shown as \\: a planted literal "\x1b"
// and a real ESC used to read the same ("/etc/\x1b[2Jx" twice).
TEST(ReadableTextTest, ALiteralBackslashEscapeAndARealControlCharacterReadDifferently) {
  json literal = EventFields(BreakoutFinding({"out/l", "symlink-escape", "/etc/\\x1b[2Jx", "p", "r"}));
  json real = EventFields(BreakoutFinding({"out/l", "symlink-escape", "/etc/\x1b[2Jx", "p", "r"}));
  EXPECT_EQ(literal["cocoon"]["breakout"]["target"], R"(/etc/\\x1b[2Jx)");
  EXPECT_EQ(real["cocoon"]["breakout"]["target"], R"(/etc/\x1b[2Jx)");
  EXPECT_NE(literal["message"], real["message"]);

  SandboxLaunchedInfo info;
  info.argv = {"/work/a\\x1b", "b\\c"};
  json e = EventFields(SandboxLaunched(info));
  EXPECT_EQ(e["process"]["file"]["path"], R"(/work/a\\x1b)");
  EXPECT_EQ(e["process"]["name"], R"(a\\x1b)");
  EXPECT_EQ(e["process"]["command_line"], R"('/work/a\x1b' 'b\c')") << "inside '...' a backslash is itself";
}

// The work dir's and the cwd's names are the sandbox's or the agent's
// choice: cocoon.sandbox.overrides and process.working_directory reached
// the log raw.
TEST(ReadableTextTest, OverridesAndTheWorkingDirectoryAreEscaped) {
  SandboxLaunchedInfo info;
  info.argv = {"/bin/true"};
  info.cwd = "/work/x\x1b[2J\u202eexe.txt";
  info.overrides = {"workdir=/tmp/w\x1b]0;owned\x07\u2066"};
  json e = EventFields(SandboxLaunched(info));
  EXPECT_EQ(e["process"]["working_directory"], R"(/work/x\x1b[2J\u202eexe.txt)");
  EXPECT_EQ(e["cocoon"]["sandbox"]["overrides"][0], R"(workdir=/tmp/w\x1b]0;owned\x07\u2066)");
  EXPECT_TRUE(Visible("working_directory", e["process"]["working_directory"]));
  EXPECT_TRUE(Visible("overrides", e["cocoon"]["sandbox"]["overrides"][0]));
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
