// Every writer (one `cocoon run`/`enforce` process, one `cocoon mcp` call)
// writes its own start ... seal into the shared chain, and the sessions of
// concurrent writers interleave. A log is sealed only when every session in
// it is: a cut just after one writer's seal, or a writer killed before its
// own, must not verify as "intact and sealed" (reviewer finding 1).
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>

#include "audit/jcs.h"
#include "audit/record.h"
#include "tests/audit/audit_test_util.h"

namespace cocoon::audit::testing {
namespace {

using nlohmann::json;

class WriterSessionsTest : public AuditTempDir {
 protected:
  // A writes its start and an event, B a whole session (start, event, seal),
  // then A an event and its seal: lines 1-2 A, 3-5 B, 6-7 A.
  std::vector<std::string> WriteInterleaved() {
    auto a = AuditLog::Open(Options("log"));
    EXPECT_TRUE(a.ok());
    EXPECT_TRUE((*a)->Append(SampleDenial(1)).ok());
    {
      auto b = AuditLog::Open(Options("log"));
      EXPECT_TRUE(b.ok());
      EXPECT_TRUE((*b)->Append(SampleDenial(2)).ok());
      EXPECT_TRUE((*b)->Close().ok());
    }
    EXPECT_TRUE((*a)->Append(SampleDenial(3)).ok());
    EXPECT_TRUE((*a)->Close().ok());
    return SplitLines(ReadFile(Path("log")));
  }

  static std::string KindOf(const std::string& line) {
    return json::parse(line)["cocoon"]["integrity"]["kind"].get<std::string>();
  }

  // Re-chains and re-signs `lines` with `key` after `edit`: what a log written
  // by an older cocoon (no log_session) looks like, with the same key.
  static void Rechain(std::vector<std::string>& lines, const SigningKey& key, const std::function<void(json&)>& edit) {
    Digest prev{};
    for (auto& line : lines) {
      json j = json::parse(line);
      edit(j);
      json& integrity = j["cocoon"]["integrity"];
      const bool had_sig = integrity.contains("sig");
      integrity.erase("hash");
      integrity.erase("sig");
      integrity["prev"] = HexEncode(prev.data(), prev.size());
      Digest hash = LineHash(*Canonicalize(j));
      integrity["hash"] = HexEncode(hash.data(), hash.size());
      if (had_sig) {
        auto signature = key.Sign(hash);
        integrity["sig"] = Base64Encode(signature->data(), signature->size());
      }
      line = *Canonicalize(j);
      prev = hash;
    }
  }
};

TEST_F(WriterSessionsTest, EveryLifecycleRecordNamesItsWritersSession) {
  auto lines = WriteInterleaved();
  ASSERT_EQ(lines.size(), 7u);
  auto session = [&](size_t i) {
    return json::parse(lines[i])["cocoon"]["integrity"].value("log_session", std::string());
  };
  EXPECT_EQ(session(0).size(), 32u);
  EXPECT_EQ(session(0), session(6));  // A's start and seal
  EXPECT_EQ(session(2), session(4));  // B's
  EXPECT_NE(session(0), session(2));
  EXPECT_EQ(session(1), "") << "event lines do not carry it";
  EXPECT_EQ(Verify({Path("log")}).verdict, VerifyVerdict::kSealed);
}

// The reviewer's repro: the log cut just after B's seal ends in a seal, but
// A's session (started at line 1) is still open.
TEST_F(WriterSessionsTest, ACutAtAnotherWritersSealIsUnsealed) {
  auto lines = WriteInterleaved();
  ASSERT_EQ(KindOf(lines[4]), "seal");
  lines.resize(5);
  WriteFile(Path("log"), JoinLines(lines));
  VerifyReport report = Verify({Path("log")});
  EXPECT_EQ(report.verdict, VerifyVerdict::kUnsealed) << FormatReport(report);
  EXPECT_NE(report.reason.find("the writer session started at " + Path("log") + ":1 (cocoon pid " +
                               std::to_string(getpid())),
            std::string::npos)
      << report.reason;
  EXPECT_NE(report.reason.find("was never sealed: its writer died or the log was cut"), std::string::npos)
      << report.reason;
}

// A writer killed with SIGKILL never writes its seal: its session stays
// unsealed for good, even after later writers seal theirs. The evidence is
// incomplete, and verify says so (exit 2), naming the dead writer's pid.
TEST_F(WriterSessionsTest, AKilledWritersSessionStaysUnsealed) {
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto log = AuditLog::Open(Options("log"));
    if (!log.ok() || !(*log)->Append(SampleDenial(1)).ok()) _exit(1);
    raise(SIGKILL);  // no Close(), no destructor: what kill -9 leaves
    _exit(2);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  WriteLog("log", 2);  // a later writer's whole session
  VerifyReport report = Verify({Path("log")});
  EXPECT_EQ(report.verdict, VerifyVerdict::kUnsealed) << FormatReport(report);
  EXPECT_NE(report.reason.find(Path("log") + ":1 (cocoon pid " + std::to_string(child)), std::string::npos)
      << report.reason;
  EXPECT_NE(report.reason.find("its writer died"), std::string::npos) << report.reason;
  EXPECT_EQ(KindOf(SplitLines(ReadFile(Path("log"))).back()), "seal");
}

// Several unsealed sessions: the first is named, the others counted and listed.
TEST_F(WriterSessionsTest, EveryUnsealedSessionIsListed) {
  auto a = AuditLog::Open(Options("log"));
  auto b = AuditLog::Open(Options("log"));
  auto c = AuditLog::Open(Options("log"));
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  ASSERT_TRUE((*b)->Close().ok());
  auto lines = SplitLines(ReadFile(Path("log")));
  WriteFile(Path("log.cut"), JoinLines(lines));
  VerifyReport report = Verify({Path("log.cut")});
  EXPECT_EQ(report.verdict, VerifyVerdict::kUnsealed) << FormatReport(report);
  EXPECT_NE(report.reason.find("started at " + Path("log.cut") + ":1 "), std::string::npos) << report.reason;
  EXPECT_NE(report.reason.find("1 more session(s) never sealed, started at " + Path("log.cut") + ":3 "),
            std::string::npos)
      << report.reason;
  ASSERT_TRUE((*a)->Close().ok());
  ASSERT_TRUE((*c)->Close().ok());
  EXPECT_EQ(Verify({Path("log")}).verdict, VerifyVerdict::kSealed);
}

// Logs of an older cocoon have no log_session: each writer is its pid and
// host, and their starts and seals are counted (two writers in one process
// share them).
TEST_F(WriterSessionsTest, OlderLogsArePairedByPidAndHost) {
  auto lines = WriteInterleaved();
  Rechain(lines, key_, [](json& j) { j["cocoon"]["integrity"].erase("log_session"); });
  ASSERT_EQ(lines[0].find("log_session"), std::string::npos);
  WriteFile(Path("log"), JoinLines(lines));
  VerifyReport whole = Verify({Path("log")});
  EXPECT_EQ(whole.verdict, VerifyVerdict::kSealed) << FormatReport(whole);
  lines.resize(5);  // cut at B's seal: A and B share the pid, one start is left open
  WriteFile(Path("log"), JoinLines(lines));
  VerifyReport cut = Verify({Path("log")});
  EXPECT_EQ(cut.verdict, VerifyVerdict::kUnsealed) << FormatReport(cut);
  EXPECT_NE(cut.reason.find("was never sealed"), std::string::npos) << cut.reason;
}

// Sessions span a rotated series: B starts in the first file and seals in
// the last. The series verifies sealed; the last file alone too (B's start is
// in a file not given, which verify notes as it always did); a series whose
// last file lost its seals does not.
TEST_F(WriterSessionsTest, SessionsSpanARotatedSeries) {
  AuditLogOptions rotating = Options("log");
  rotating.rotate_bytes = 6000;
  auto a = AuditLog::Open(rotating);
  ASSERT_TRUE(a.ok());
  auto b = AuditLog::Open(Options("log"));
  ASSERT_TRUE(b.ok());
  for (int i = 0; i < 12; ++i) ASSERT_TRUE((*a)->Append(SampleDenial(i)).ok());
  ASSERT_TRUE((*b)->Close().ok());
  ASSERT_TRUE((*a)->Close().ok());
  std::vector<std::string> series;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    std::string name = entry.path().filename();
    if (name.rfind("log.", 0) == 0) series.push_back(entry.path());
  }
  ASSERT_GE(series.size(), 1u);
  std::sort(series.begin(), series.end(), [](const std::string& x, const std::string& y) {
    return std::stoull(x.substr(x.rfind('-') + 1)) < std::stoull(y.substr(y.rfind('-') + 1));
  });
  series.push_back(Path("log"));
  VerifyReport report = Verify(series);
  EXPECT_EQ(report.verdict, VerifyVerdict::kSealed) << FormatReport(report);
  VerifyReport alone = Verify({Path("log")});
  EXPECT_EQ(alone.verdict, VerifyVerdict::kSealed) << FormatReport(alone);
  auto last = SplitLines(ReadFile(Path("log")));
  ASSERT_EQ(KindOf(last.back()), "seal");
  ASSERT_EQ(KindOf(last[last.size() - 2]), "seal");
  last.resize(last.size() - 2);  // both seals gone: A and B are open
  WriteFile(Path("log"), JoinLines(last));
  VerifyReport cut = Verify(series);
  EXPECT_EQ(cut.verdict, VerifyVerdict::kUnsealed) << FormatReport(cut);
  EXPECT_NE(cut.reason.find(series.front() + ":1 "), std::string::npos) << cut.reason;
  EXPECT_NE(cut.reason.find("1 more session(s)"), std::string::npos) << cut.reason;
}

// A seal that takes the file past rotate_bytes used to be followed by
// rotate and continue records: an honestly closed log then ended in a
// continue record and never verified as sealed (reviewer finding 6). The
// file is now left a seal over the size; the next writer rotates it.
TEST_F(WriterSessionsTest, ASealThatCrossesRotateBytesStaysTheLastLine) {
  auto write = [&](uint64_t rotate_bytes) {
    AuditLogOptions options = Options("log");
    options.rotate_bytes = rotate_bytes;
    auto log = AuditLog::Open(options);
    EXPECT_TRUE(log.ok());
    for (int i = 0; i < 5; ++i) EXPECT_TRUE((*log)->Append(SampleDenial(i)).ok());
    const uint64_t before_seal = std::filesystem::file_size(Path("log"));
    EXPECT_TRUE((*log)->Close().ok());
    return before_seal;
  };
  const uint64_t size = write(0);  // the same lines, measured without rotation
  std::filesystem::remove(Path("log"));
  ASSERT_EQ(write(size + 1), size) << "the rehearsal and the real run wrote different sizes";
  auto lines = SplitLines(ReadFile(Path("log")));
  EXPECT_EQ(KindOf(lines.back()), "seal");
  for (const auto& entry : std::filesystem::directory_iterator(dir_))
    EXPECT_EQ(entry.path().filename().string().rfind("log.", 0), std::string::npos) << entry.path();
  VerifyReport report = Verify({Path("log")});
  EXPECT_EQ(report.verdict, VerifyVerdict::kSealed) << FormatReport(report);
  // The next writer rotates the oversized file after its start record.
  AuditLogOptions next = Options("log");
  next.rotate_bytes = size + 1;
  {
    auto log = AuditLog::Open(next);
    ASSERT_TRUE(log.ok());
    ASSERT_TRUE((*log)->Close().ok());
  }
  std::vector<std::string> series;
  for (const auto& entry : std::filesystem::directory_iterator(dir_))
    if (entry.path().filename().string().rfind("log.", 0) == 0) series.push_back(entry.path());
  ASSERT_EQ(series.size(), 1u);
  series.push_back(Path("log"));
  VerifyReport rotated = Verify(series);
  EXPECT_EQ(rotated.verdict, VerifyVerdict::kSealed) << FormatReport(rotated);
}

}  // namespace
}  // namespace cocoon::audit::testing
