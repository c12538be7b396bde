// What a writer does with a log tail it did not write: a line nobody signed
// or a fragment without a newline must never become trusted just because the
// next writer chained onto it (reviewer findings 1 and 2).
#include "audit/jcs.h"
#include "audit/record.h"
#include "tests/audit/audit_test_util.h"

namespace cocoon::audit::testing {
namespace {

using nlohmann::json;

class TailTrustTest : public AuditTempDir {
 protected:
  // An event line correctly chained after the log's last line, with no sig:
  // what anyone who can append to the file can forge without a key.
  std::string ForgeUnsignedEvent(const std::string& path, const std::string& action) {
    auto lines = SplitLines(ReadFile(path));
    json last = json::parse(lines.back());
    json forged = json::parse(lines[1]);  // a real denial as the template
    json& integrity = forged["cocoon"]["integrity"];
    uint64_t seq = last["cocoon"]["integrity"]["seq"].get<uint64_t>() + 1;
    forged["cocoon"]["syscall"]["action"] = action;
    forged["metadata"]["sequence"] = seq;
    forged["event"]["sequence"] = seq;
    forged["metadata"]["uid"] = last["cocoon"]["integrity"]["chain"].get<std::string>() + ":" + std::to_string(seq);
    integrity["seq"] = seq;
    integrity["kind"] = "event";
    integrity["prev"] = last["cocoon"]["integrity"]["hash"];
    integrity.erase("sig");
    integrity.erase("hash");
    Digest hash = LineHash(*Canonicalize(forged));
    integrity["hash"] = HexEncode(hash.data(), hash.size());
    return *Canonicalize(forged);
  }

  size_t RecoveryRecords(const std::string& path) {
    size_t count = 0;
    for (const auto& line : SplitLines(ReadFile(path))) count += line.find("\"kind\":\"recovery\"") != std::string::npos;
    return count;
  }

  void AppendRaw(const std::string& path, const std::string& bytes) {
    WriteFile(path, ReadFile(path) + bytes);
  }

  // One ordinary writer run, as `cocoon audit demo` does.
  Status RunWriter(uint32_t sign_every = 1) {
    auto log = AuditLog::Open(Options("log", sign_every));
    if (!log.ok()) return log.status();
    std::vector<Event> batch;
    batch.push_back(SampleDenial(7));
    batch.push_back(SampleDenial(8));
    COCOON_RETURN_IF_ERROR((*log)->AppendBatch(std::move(batch)).status());
    return (*log)->Close();
  }
};

// Finding 1, every line signed (the default): an unsigned line is a forgery
// on its own, and stays one after another writer extends the log.
TEST_F(TailTrustTest, UnsignedLineInALogThatSignsEveryLineIsTampered) {
  std::string path = WriteLog("log", 3);
  AppendRaw(path, ForgeUnsignedEvent(path, "allow-everything") + "\n");
  VerifyReport forged = Verify({path});
  EXPECT_EQ(forged.verdict, VerifyVerdict::kTampered) << FormatReport(forged);
  EXPECT_EQ(forged.line, 6u);
  EXPECT_NE(forged.reason.find("unsigned event line"), std::string::npos) << forged.reason;

  ASSERT_TRUE(RunWriter().ok());
  VerifyReport after = Verify({path});
  EXPECT_EQ(after.verdict, VerifyVerdict::kTampered) << FormatReport(after);
  EXPECT_EQ(after.line, 6u);
}

// Finding 1 with sign_every > 1, where unsigned lines are legitimate: the
// next writer cannot vouch for an unsigned tail, says so in a signed
// recovery record, and verify exits non-zero naming it.
TEST_F(TailTrustTest, UnsignedTailInASignEveryLogIsNamedByTheNextWriter) {
  std::string path = WriteLog("log", 20, /*sign_every=*/100);
  AppendRaw(path, ForgeUnsignedEvent(path, "allow-everything") + "\n");
  VerifyReport forged = Verify({path});
  EXPECT_EQ(forged.verdict, VerifyVerdict::kTampered) << FormatReport(forged);
  EXPECT_EQ(forged.line, 23u);  // start, 20 events, seal, forged

  ASSERT_TRUE(RunWriter(100).ok());
  VerifyReport after = Verify({path});
  EXPECT_EQ(after.verdict, VerifyVerdict::kRecovered) << FormatReport(after);
  EXPECT_NE(after.reason.find("no signature"), std::string::npos) << after.reason;
  auto lines = SplitLines(ReadFile(path));
  json recovery = json::parse(lines[23]);  // start, 20 events, seal, forged, recovery, start
  EXPECT_EQ(recovery["cocoon"]["integrity"]["kind"], "recovery");
  EXPECT_EQ(recovery["cocoon"]["integrity"]["last_unverified"], true);
  EXPECT_EQ(RecoveryRecords(path), 1u) << "the writer's own later writes need none";
}

// An honest sign_every writer never leaves an unsigned tail: the last line of
// every write is signed, so writers in several processes never trip the rule above.
TEST_F(TailTrustTest, SignEveryWritersInTurnNeedNoRecovery) {
  for (int run = 0; run < 3; ++run) ASSERT_TRUE(RunWriter(100).ok());
  VerifyReport report = Verify({Path("log")});
  EXPECT_EQ(report.verdict, VerifyVerdict::kSealed) << FormatReport(report);
}

// A tail claiming the writer's own key id with a signature that does not
// verify is a forgery the writer can see: it refuses to extend the log.
TEST_F(TailTrustTest, TailForgedUnderOurKeyIdIsRefused) {
  std::string path = WriteLog("log", 2);
  std::string forged = ForgeUnsignedEvent(path, "allow-everything");
  json j = json::parse(forged);
  auto other = SigningKey::Generate();
  auto signature = other->Sign(Digest{});  // any well-formed signature that is not ours
  j["cocoon"]["integrity"]["sig"] = Base64Encode(signature->data(), signature->size());
  AppendRaw(path, *Canonicalize(j) + "\n");
  Status status = RunWriter();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("signature does not verify"), std::string::npos) << status.message();
  EXPECT_EQ(Verify({path}).verdict, VerifyVerdict::kTampered);
}

// Finding 2: a whole JSON line appended without its newline. The next writer
// cuts it away (no SIEM ingests it), keeps its bytes in the signed recovery
// record, and verify exits non-zero.
TEST_F(TailTrustTest, AppendedFragmentIsCutKeptAndReported) {
  std::string path = WriteLog("log", 3);
  std::string intact = ReadFile(path);
  std::string fragment = ForgeUnsignedEvent(path, "allow-everything");
  AppendRaw(path, fragment);

  ASSERT_TRUE(RunWriter().ok());
  std::string after = ReadFile(path);
  EXPECT_EQ(after.substr(0, intact.size()), intact);
  EXPECT_EQ(after.find("allow-everything"), std::string::npos) << "the fragment is still a line of the log";
  VerifyReport report = Verify({path});
  EXPECT_EQ(report.verdict, VerifyVerdict::kRecovered) << FormatReport(report);
  EXPECT_NE(FormatReport(report).find("RECOVERED"), std::string::npos);
  json recovery = json::parse(SplitLines(after)[5])["cocoon"]["integrity"];
  ASSERT_EQ(recovery["kind"], "recovery");
  EXPECT_EQ(recovery["partial_bytes"], fragment.size());
  std::string kept;
  ASSERT_TRUE(Base64Decode(recovery["partial_base64"].get<std::string>(), &kept));
  EXPECT_EQ(kept, fragment);
  EXPECT_EQ(RecoveryRecords(path), 1u) << "the writer's own later writes need none";
}

// Only the first 4 KiB of a long fragment are kept; its length and SHA-256
// still describe all of it.
TEST_F(TailTrustTest, LongFragmentKeepsItsHeadAndDigest) {
  std::string path = WriteLog("log", 1);
  std::string fragment(100000, 'x');
  AppendRaw(path, fragment);
  ASSERT_TRUE(RunWriter().ok());
  json recovery = json::parse(SplitLines(ReadFile(path))[3])["cocoon"]["integrity"];
  ASSERT_EQ(recovery["kind"], "recovery");
  EXPECT_EQ(recovery["partial_bytes"], fragment.size());
  Digest digest = LineHash(fragment);
  EXPECT_EQ(recovery["partial_sha256"], HexEncode(digest.data(), digest.size()));
  std::string kept;
  ASSERT_TRUE(Base64Decode(recovery["partial_base64"].get<std::string>(), &kept));
  EXPECT_EQ(kept, fragment.substr(0, 4096));
}

// A file holding only a fragment of a first record (a writer killed in its
// first write): the fresh chain still begins with its start record (seq 0),
// then the recovery. (A file that is not the beginning of a record is not
// an audit log at all: LogFileSafetyTest.NonLogFileIsRefusedAndLeftAlone.)
TEST_F(TailTrustTest, FragmentOnlyFileStartsAChainThenRecovers) {
  WriteFile(Path("log"), "{\"@timestamp\":\"2026-12-01T00:00:00.000Z\",\"activity_id\":6,\"acti");
  ASSERT_TRUE(RunWriter().ok());
  auto lines = SplitLines(ReadFile(Path("log")));
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(json::parse(lines[0])["cocoon"]["integrity"]["kind"], "start");
  EXPECT_EQ(json::parse(lines[1])["cocoon"]["integrity"]["kind"], "recovery");
  VerifyReport report = Verify({Path("log")});
  EXPECT_EQ(report.verdict, VerifyVerdict::kRecovered) << FormatReport(report);
}

}  // namespace
}  // namespace cocoon::audit::testing
