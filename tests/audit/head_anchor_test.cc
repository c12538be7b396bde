// A hash chain cannot show that lines were cut from its end at a clean point:
// every finished writer session (every `cocoon mcp` tool call) ends with a
// seal, and a log cut right after one is intact and sealed. verify therefore
// prints the head (last seq and hash) for the operator to keep elsewhere, and
// --expect-seq/--expect-head fail when the log no longer reaches that head
// (reviewer finding: `head -n 4 orig.log` verified "OK ... intact and sealed").
#include "audit/keys.h"
#include "tests/audit/audit_test_util.h"

namespace cocoon::audit::testing {
namespace {

class HeadAnchorTest : public AuditTempDir {
 protected:
  VerifyReport VerifyAnchored(const std::vector<std::string>& paths, std::optional<uint64_t> seq,
                              const std::string& head_hex) const {
    VerifyOptions options;
    options.trusted.push_back(key_.public_key());
    options.expect_seq = seq;
    if (!head_hex.empty()) {
      Digest head{};
      EXPECT_TRUE(HexDecode(head_hex, head.data(), head.size())) << head_hex;
      options.expect_head = head;
    }
    auto report = VerifyFiles(paths, options);
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    return report.ok() ? *report : VerifyReport{};
  }

  // Two whole writer sessions (start, 1 event, seal: lines 1-3 and 4-6).
  std::vector<std::string> TwoSessions() {
    WriteLog("log", 1);
    WriteLog("log", 1);
    return SplitLines(ReadFile(Path("log")));
  }
};

TEST_F(HeadAnchorTest, VerifyReportsAndPrintsTheHead) {
  auto lines = TwoSessions();
  ASSERT_EQ(lines.size(), 6u);
  VerifyReport report = Verify({Path("log")});
  ASSERT_EQ(report.verdict, VerifyVerdict::kSealed) << FormatReport(report);
  ASSERT_TRUE(report.has_head);
  EXPECT_EQ(report.head_seq, 5u);
  auto last = nlohmann::json::parse(lines.back());
  EXPECT_EQ(report.head_hash, last["cocoon"]["integrity"]["hash"].get<std::string>());
  EXPECT_NE(FormatReport(report).find("head: seq 5 hash " + report.head_hash), std::string::npos)
      << FormatReport(report);
  EXPECT_NE(FormatReport(report).find("--expect-seq 5 --expect-head " + report.head_hash), std::string::npos);
}

// The reviewer's repro: the log cut right after the first session's seal.
// Without an anchor it is indistinguishable from a complete log (documented);
// with the head recorded from the whole log, verify says what is missing.
TEST_F(HeadAnchorTest, ACutAtASealIsCaughtOnlyWithTheRecordedHead) {
  auto lines = TwoSessions();
  VerifyReport whole = Verify({Path("log")});
  ASSERT_EQ(whole.verdict, VerifyVerdict::kSealed);
  lines.resize(3);
  ASSERT_NE(lines.back().find("\"kind\":\"seal\""), std::string::npos);
  WriteFile(Path("cut"), JoinLines(lines));

  EXPECT_EQ(Verify({Path("cut")}).verdict, VerifyVerdict::kSealed) << "the chain alone cannot see this cut";

  VerifyReport both = VerifyAnchored({Path("cut")}, whole.head_seq, whole.head_hash);
  EXPECT_EQ(both.verdict, VerifyVerdict::kUnsealed) << FormatReport(both);
  EXPECT_NE(both.reason.find("the log ends at seq 2, hash "), std::string::npos) << both.reason;
  EXPECT_NE(both.reason.find("but the recorded head (seq 5, hash " + whole.head_hash +
                             ") is 3 line(s) further on: those lines are missing"),
            std::string::npos)
      << both.reason;
  EXPECT_NE(FormatReport(both).find("UNSEALED: 3 lines intact; "), std::string::npos) << FormatReport(both);
  EXPECT_EQ(FormatReport(both).find("head: "), std::string::npos) << "a head short of the recorded one is not offered";

  VerifyReport seq_only = VerifyAnchored({Path("cut")}, whole.head_seq, "");
  EXPECT_EQ(seq_only.verdict, VerifyVerdict::kUnsealed) << FormatReport(seq_only);

  VerifyReport hash_only = VerifyAnchored({Path("cut")}, std::nullopt, whole.head_hash);
  EXPECT_EQ(hash_only.verdict, VerifyVerdict::kUnsealed) << FormatReport(hash_only);
  EXPECT_NE(hash_only.reason.find("the recorded head (hash " + whole.head_hash +
                                  ") is not in the log, which holds seq 0 to 2"),
            std::string::npos)
      << hash_only.reason;
}

// The log as recorded, and the log grown since, both hold the head.
TEST_F(HeadAnchorTest, TheRecordedHeadAndLaterGrowthVerify) {
  TwoSessions();
  VerifyReport whole = Verify({Path("log")});
  EXPECT_EQ(VerifyAnchored({Path("log")}, whole.head_seq, whole.head_hash).verdict, VerifyVerdict::kSealed);
  WriteLog("log", 2);
  VerifyReport grown = VerifyAnchored({Path("log")}, whole.head_seq, whole.head_hash);
  EXPECT_EQ(grown.verdict, VerifyVerdict::kSealed) << FormatReport(grown);
  EXPECT_EQ(grown.head_seq, 9u);
  EXPECT_EQ(VerifyAnchored({Path("log")}, std::nullopt, whole.head_hash).verdict, VerifyVerdict::kSealed);
}

// Another log (or this one rewritten) with a different line at the head's seq.
TEST_F(HeadAnchorTest, ADifferentLineAtTheRecordedSeqIsTampered) {
  TwoSessions();
  VerifyReport whole = Verify({Path("log")});
  WriteLog("other", 1);
  WriteLog("other", 1);
  VerifyReport other = VerifyAnchored({Path("other")}, whole.head_seq, whole.head_hash);
  EXPECT_EQ(other.verdict, VerifyVerdict::kTampered) << FormatReport(other);
  EXPECT_EQ(other.line, 6u);
  EXPECT_NE(other.reason.find("the line at seq 5 has hash "), std::string::npos) << other.reason;
  EXPECT_NE(other.reason.find("not the log the head was recorded from"), std::string::npos) << other.reason;
  EXPECT_EQ(FormatReport(other).find("head: "), std::string::npos) << "no head for a tampered log";
}

// Dropping the oldest rotated files: the recorded head lies before what is given.
TEST_F(HeadAnchorTest, AHeadInADroppedOlderFileIsNamed) {
  AuditLogOptions options = Options("log");
  options.rotate_bytes = 1;  // every write rotates the file
  {
    auto log = AuditLog::Open(options);
    ASSERT_TRUE(log.ok());
    ASSERT_TRUE((*log)->Append(SampleDenial(1)).ok());
    ASSERT_TRUE((*log)->Close().ok());
  }
  VerifyReport alone = Verify({Path("log")});
  ASSERT_EQ(alone.verdict, VerifyVerdict::kSealed) << FormatReport(alone);
  VerifyReport anchored = VerifyAnchored({Path("log")}, 0, "");
  EXPECT_EQ(anchored.verdict, VerifyVerdict::kUnsealed) << FormatReport(anchored);
  EXPECT_NE(anchored.reason.find("the recorded head (seq 0) is before the first line given"), std::string::npos)
      << anchored.reason;
}

}  // namespace
}  // namespace cocoon::audit::testing
