// A key-rotate record retires the key that signs it: only the key it
// announces may sign the lines after it. `verify` refuses a later line under
// the old key even when the old key is trusted, and a writer that still
// holds the old key refuses to append (reviewer finding 2).
#include "audit/jcs.h"
#include "audit/record.h"
#include "tests/audit/audit_test_util.h"

namespace cocoon::audit::testing {
namespace {

using nlohmann::json;

class KeyRetirementTest : public AuditTempDir {
 protected:
  void SetUp() override {
    AuditTempDir::SetUp();
    auto next = SigningKey::Generate();
    ASSERT_TRUE(next.ok());
    next_ = *next;
    ASSERT_TRUE(WriteKeyPair(next_, Path("key2")).ok());
  }

  // start, event, key-rotate (old key), seal (new key): `cocoon audit
  // rotate-key` after a run. Returns the key-rotate record's line (1-based).
  size_t WriteRotatedLog(const AuditLogOptions& options) {
    auto log = AuditLog::Open(options);
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    EXPECT_TRUE((*log)->Append(SampleDenial(1)).ok());
    EXPECT_TRUE((*log)->RotateKey(Path("key2")).ok());
    EXPECT_TRUE((*log)->Close().ok());
    auto lines = SplitLines(ReadFile(options.path));
    for (size_t i = 0; i < lines.size(); ++i)
      if (lines[i].find("\"kind\":\"key-rotate\"") != std::string::npos) return i + 1;
    ADD_FAILURE() << "no key-rotate record";
    return 0;
  }

  // An event line chained after the log's last line and signed with `key`:
  // what a writer that kept the retired key appended before this fix.
  std::string ChainedEvent(const std::string& path, const SigningKey& key) {
    auto lines = SplitLines(ReadFile(path));
    json last = json::parse(lines.back());
    json line = json::parse(lines[1]);  // the denial
    json& integrity = line["cocoon"]["integrity"];
    const uint64_t seq = last["cocoon"]["integrity"]["seq"].get<uint64_t>() + 1;
    line["metadata"]["sequence"] = seq;
    line["event"]["sequence"] = seq;
    line["metadata"]["uid"] = last["cocoon"]["integrity"]["chain"].get<std::string>() + ":" + std::to_string(seq);
    integrity["seq"] = seq;
    integrity["prev"] = last["cocoon"]["integrity"]["hash"];
    integrity["key"] = key.key_id();
    integrity.erase("hash");
    integrity.erase("sig");
    Digest hash = LineHash(*Canonicalize(line));
    integrity["hash"] = HexEncode(hash.data(), hash.size());
    auto signature = key.Sign(hash);
    integrity["sig"] = Base64Encode(signature->data(), signature->size());
    return *Canonicalize(line);
  }

  SigningKey next_;
};

// The reviewer's case: lines signed by the old key after the rotation used
// to verify with --trust OLD.pub. They are tampered now, naming the retired
// key and the rotation line; the same line signed by the new key is fine.
TEST_F(KeyRetirementTest, ALineSignedWithTheRetiredKeyIsTampered) {
  const size_t rotation = WriteRotatedLog(Options("log"));
  ASSERT_EQ(rotation, 3u);
  EXPECT_EQ(Verify({Path("log")}).verdict, VerifyVerdict::kSealed);
  const std::string intact = ReadFile(Path("log"));
  const std::string by_old = ChainedEvent(Path("log"), key_), by_new = ChainedEvent(Path("log"), next_);
  WriteFile(Path("log"), intact + by_old + "\n");
  VerifyReport report = Verify({Path("log")});  // only the old key is trusted
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered) << FormatReport(report);
  EXPECT_EQ(report.line, 5u);
  EXPECT_NE(report.reason.find("claims key " + key_.key_id() + ", which the key-rotate record at " + Path("log") +
                               ":3 retired in favour of " + next_.key_id()),
            std::string::npos)
      << report.reason;
  VerifyOptions both;  // trusting the old key explicitly changes nothing
  both.trusted = {key_.public_key(), next_.public_key()};
  EXPECT_EQ(VerifyFiles({Path("log")}, both)->verdict, VerifyVerdict::kTampered);

  WriteFile(Path("log"), intact + by_new + "\n");
  VerifyReport by_new_key = Verify({Path("log")});
  EXPECT_NE(by_new_key.verdict, VerifyVerdict::kTampered) << FormatReport(by_new_key);
}

// A key-rotate record that announces a retired key (or the signer's own)
// does not bring it back.
TEST_F(KeyRetirementTest, RotatingBackToARetiredKeyIsTampered) {
  WriteRotatedLog(Options("log"));
  std::vector<std::string> lines = SplitLines(ReadFile(Path("log")));
  json rotate = json::parse(lines[2]);
  rotate["cocoon"]["integrity"]["seq"] = 4;
  rotate["cocoon"]["integrity"]["key"] = next_.key_id();
  rotate["cocoon"]["integrity"]["new_key"] = key_.public_key().Base64();
  rotate["cocoon"]["integrity"]["new_key_id"] = key_.key_id();
  rotate["metadata"]["sequence"] = 4;
  rotate["event"]["sequence"] = 4;
  rotate["metadata"]["uid"] = rotate["cocoon"]["integrity"]["chain"].get<std::string>() + ":4";
  json& integrity = rotate["cocoon"]["integrity"];
  integrity["prev"] = json::parse(lines[3])["cocoon"]["integrity"]["hash"];
  integrity.erase("hash");
  integrity.erase("sig");
  Digest hash = LineHash(*Canonicalize(rotate));
  integrity["hash"] = HexEncode(hash.data(), hash.size());
  auto signature = next_.Sign(hash);
  integrity["sig"] = Base64Encode(signature->data(), signature->size());
  lines.push_back(*Canonicalize(rotate));
  WriteFile(Path("log"), JoinLines(lines));
  VerifyReport report = Verify({Path("log")});
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered) << FormatReport(report);
  EXPECT_EQ(report.line, 5u);
  EXPECT_NE(report.reason.find("a key already retired"), std::string::npos) << report.reason;
}

// A writer opened with the old key after the rotation refuses, naming the
// rotation and the new key; nothing is written. With the new key it works.
TEST_F(KeyRetirementTest, AWriterWithTheRetiredKeyRefusesToAppend) {
  WriteRotatedLog(Options("log"));
  const std::string before = ReadFile(Path("log"));
  auto old_key = AuditLog::Open(Options("log"));
  ASSERT_FALSE(old_key.ok());
  EXPECT_NE(old_key.status().message().find("its signing key " + key_.key_id() +
                                            " was rotated out by the key-rotate record at seq 2 (the new key is " +
                                            next_.key_id() + ")"),
            std::string::npos)
      << old_key.status().message();
  EXPECT_NE(old_key.status().message().find("Use the new key"), std::string::npos) << old_key.status().message();
  EXPECT_EQ(ReadFile(Path("log")), before);
  AuditLogOptions with_new = Options("log");
  with_new.key_path = Path("key2");
  ASSERT_TRUE(AuditLog::Open(with_new).ok());
  EXPECT_EQ(Verify({Path("log")}).verdict, VerifyVerdict::kSealed);
}

// A writer that was already running with the old key when another process
// rotated it stops at its next append (its session then stays unsealed,
// which verify reports honestly).
TEST_F(KeyRetirementTest, ARunningWriterStopsAfterAnotherProcessRotatesItsKey) {
  auto running = AuditLog::Open(Options("log"));
  ASSERT_TRUE(running.ok());
  ASSERT_TRUE((*running)->Append(SampleDenial(1)).ok());
  WriteRotatedLog(Options("log"));
  auto appended = (*running)->Append(SampleDenial(2));
  ASSERT_FALSE(appended.ok());
  EXPECT_NE(appended.status().message().find("was rotated out by the key-rotate record"), std::string::npos)
      << appended.status().message();
  EXPECT_FALSE((*running)->Close().ok());
  VerifyReport report = Verify({Path("log")});
  EXPECT_EQ(report.verdict, VerifyVerdict::kUnsealed) << FormatReport(report);
  EXPECT_NE(report.reason.find(Path("log") + ":1 "), std::string::npos) << report.reason;
}

// The retirement rides on the last line of every write, across file
// rotation too: the continue record of the new file carries it, for
// writers and for a verify of that file alone.
TEST_F(KeyRetirementTest, TheRetirementSurvivesLaterWritersAndFileRotation) {
  AuditLogOptions rotating = Options("log");
  WriteRotatedLog(rotating);
  rotating.key_path = Path("key2");
  rotating.rotate_bytes = 1;  // every write rotates the file
  for (int run = 0; run < 3; ++run) {
    auto log = AuditLog::Open(rotating);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    ASSERT_TRUE((*log)->Append(SampleDenial(run)).ok());
    ASSERT_TRUE((*log)->Close().ok());
  }
  auto first = SplitLines(ReadFile(Path("log"))).front();
  ASSERT_NE(first.find("\"kind\":\"continue\""), std::string::npos);
  auto old_key = AuditLog::Open(Options("log"));
  ASSERT_FALSE(old_key.ok());
  EXPECT_NE(old_key.status().message().find("rotated out by the key-rotate record at seq 2"), std::string::npos)
      << old_key.status().message();
  // verify of the newest file alone cannot see the key-rotate record, but
  // its signed continue record names the retirement.
  WriteFile(Path("log"), ReadFile(Path("log")) + ChainedEvent(Path("log"), key_) + "\n");
  VerifyOptions both;  // the announcement of the new key is in an earlier file too
  both.trusted = {key_.public_key(), next_.public_key()};
  VerifyReport report = *VerifyFiles({Path("log")}, both);
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered) << FormatReport(report);
  EXPECT_NE(report.reason.find("claims key " + key_.key_id() + ", which the key-rotate record at seq 2 (in an "
                               "earlier file, named by " + Path("log") + ":1) retired in favour of " + next_.key_id()),
            std::string::npos)
      << report.reason;
}

TEST_F(KeyRetirementTest, RotatingToARetiredOrTheSameKeyIsRefused) {
  AuditLogOptions options = Options("log");
  WriteRotatedLog(options);
  options.key_path = Path("key2");
  auto log = AuditLog::Open(options);
  ASSERT_TRUE(log.ok());
  Status back = (*log)->RotateKey(key_path_);
  ASSERT_FALSE(back.ok());
  EXPECT_NE(back.message().find("cannot rotate to key " + key_.key_id() + ", which the key-rotate record at seq 2 "
                                "retired"),
            std::string::npos)
      << back.message();
  Status same = (*log)->RotateKey(Path("key2"));
  ASSERT_FALSE(same.ok());
  EXPECT_NE(same.message().find("is the key the log is signed with already"), std::string::npos) << same.message();
}

}  // namespace
}  // namespace cocoon::audit::testing
