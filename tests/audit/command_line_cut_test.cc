// A padded command line must not hide what ran (reviewer finding 5):
// `sh -c "true <17,000 spaces>; echo EVIL"` cut at 16 KiB lost the EVIL.
#include "audit/event_common.h"
#include "compiler/common/digest.h"
#include "tests/audit/audit_test_util.h"

namespace cocoon::audit::testing {
namespace {

using nlohmann::json;

json Launched(std::vector<std::string> argv) {
  SandboxLaunchedInfo info;
  info.argv = std::move(argv);
  return EventFields(SandboxLaunched(info));
}

std::string NulJoined(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& arg : argv) out += arg + '\0';
  return out;
}

TEST(CommandLineCutTest, PaddedCommandKeepsItsTailAndSaysItWasCut) {
  std::vector<std::string> argv = {"/bin/sh", "-c", "true " + std::string(17000, ' ') + "; echo EVIL"};
  json e = Launched(argv);
  for (const char* field : {"cmd_line", "command_line"}) {
    std::string text = e["process"][field].get<std::string>();
    EXPECT_LE(text.size(), kMaxStringBytes) << field;
    EXPECT_NE(text.find("echo EVIL"), std::string::npos) << field;
    EXPECT_NE(text.find("bytes cut"), std::string::npos) << field;
  }
  std::string arg = e["process"]["args"][2].get<std::string>();
  EXPECT_LE(arg.size(), kMaxStringBytes);
  EXPECT_NE(arg.find("echo EVIL"), std::string::npos);
  EXPECT_NE(e["message"].get<std::string>().find("echo EVIL"), std::string::npos);
  EXPECT_NE(e["message"].get<std::string>().find("truncated"), std::string::npos);
  const json& summary = e["cocoon"]["sandbox"]["argv"];
  EXPECT_EQ(summary["truncated"], true);
  EXPECT_EQ(summary["count"], 3);
  EXPECT_EQ(summary["bytes"], NulJoined(argv).size());
  EXPECT_EQ(summary["sha256"], Sha256Hex(NulJoined(argv)));
}

TEST(CommandLineCutTest, ShortCommandIsWholeAndNotMarked) {
  std::vector<std::string> argv = {"/bin/echo", "hi there"};
  json e = Launched(argv);
  EXPECT_EQ(e["process"]["cmd_line"], "/bin/echo 'hi there'");
  EXPECT_EQ(e["message"], "sandbox launched: /bin/echo 'hi there'");
  EXPECT_EQ(e["cocoon"]["sandbox"]["argv"]["truncated"], false);
  EXPECT_EQ(e["cocoon"]["sandbox"]["argv"]["sha256"], Sha256Hex(NulJoined(argv)));
}

// Many short arguments: each is whole, but the joined command line is cut.
TEST(CommandLineCutTest, LongJoinedCommandLineIsMarked) {
  std::vector<std::string> argv(3000, "argument");
  argv.push_back("EVIL");
  json e = Launched(argv);
  EXPECT_EQ(e["cocoon"]["sandbox"]["argv"]["truncated"], true);
  EXPECT_NE(e["process"]["cmd_line"].get<std::string>().find("EVIL"), std::string::npos);
  EXPECT_EQ(e["process"]["args"].size(), argv.size());
}

// Many long arguments (a raised stack limit allows several MiB): the args
// array stops at 256 KiB, so the launch line stays far below the 16 MiB a
// writer reads back as the log's tail; the summary still counts and hashes
// every argument.
TEST(CommandLineCutTest, ManyLongArgumentsKeepTheLaunchLineBounded) {
  std::vector<std::string> argv(400, std::string(16 << 10, '\x01'));  // each escapes to 6x its size
  json e = Launched(argv);
  EXPECT_LT(e["process"]["args"].size(), argv.size());
  EXPECT_LT(e.dump().size(), size_t{4} << 20);  // 256 KiB of \x01 escapes to 1.5 MiB
  const json& summary = e["cocoon"]["sandbox"]["argv"];
  EXPECT_EQ(summary["truncated"], true);
  EXPECT_EQ(summary["count"], 400);
  EXPECT_EQ(summary["sha256"], Sha256Hex(NulJoined(argv)));
}

// The cut never splits a UTF-8 sequence: the line stays valid JCS.
TEST(CommandLineCutTest, CutKeepsUtf8Whole) {
  std::string snowmen;
  while (snowmen.size() < 20000) snowmen += "\xE2\x98\x83";
  json e = Launched({"/bin/echo", snowmen});
  std::string arg = e["process"]["args"][1].get<std::string>();
  EXPECT_EQ(SanitizeUtf8(arg), arg);
  EXPECT_EQ(arg.find("\xEF\xBF\xBD"), std::string::npos);
}

}  // namespace
}  // namespace cocoon::audit::testing
