// The hash chain and signatures: a clean round trip, then one test per attack
// the verifier must catch (issue 5), crash recovery, rotation, key rotation,
// sign_every, sinks and error paths.
#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include "audit/jcs.h"
#include "audit/record.h"
#include "tests/audit/audit_test_util.h"

namespace cocoon::audit::testing {
namespace {

using nlohmann::json;

// What an attacker with their own key can do: edit a line, recompute its hash
// and sign it (optionally claiming another key id).
std::string Resign(const std::string& line, const SigningKey& key, const std::string& claimed_key_id,
                   const std::function<void(json&)>& edit) {
  json j = json::parse(line);
  edit(j);
  json& integrity = j["cocoon"]["integrity"];
  integrity.erase("hash");
  integrity.erase("sig");
  integrity["key"] = claimed_key_id;
  Digest hash = LineHash(*Canonicalize(j));
  integrity["hash"] = HexEncode(hash.data(), hash.size());
  auto signature = key.Sign(hash);
  integrity["sig"] = Base64Encode(signature->data(), signature->size());
  return *Canonicalize(j);
}

class ChainTest : public AuditTempDir {
 protected:
  // Writes a sealed log with 8 events (10 lines), applies `mutate` to its
  // lines and returns the verification report.
  VerifyReport Tamper(const std::function<void(std::vector<std::string>&)>& mutate) {
    std::string path = WriteLog("log", 8);
    auto lines = SplitLines(ReadFile(path));
    EXPECT_EQ(lines.size(), 10u);
    mutate(lines);
    WriteFile(path, JoinLines(lines));
    return Verify({path});
  }

  // hec.json: one denial between the start and seal records, each line in
  // Splunk HEC's envelope.
  void WriteHecLog() {
    AuditLogOptions options = Options("hec.json");
    options.sink = SinkKind::kSplunkHecFile;
    auto log = AuditLog::Open(options);
    ASSERT_TRUE(log.ok());
    ASSERT_TRUE((*log)->Append(SampleDenial(1)).ok());
    ASSERT_TRUE((*log)->Close().ok());
  }
};

TEST_F(ChainTest, CleanLogIsSealed) {
  std::string path = WriteLog("log", 25);
  VerifyReport report = Verify({path});
  EXPECT_EQ(report.verdict, VerifyVerdict::kSealed) << FormatReport(report);
  EXPECT_EQ(report.lines, 27u);
  EXPECT_EQ(report.signatures, 27u);  // every line signed by default
  auto lines = SplitLines(ReadFile(path));
  EXPECT_NE(lines.front().find("\"kind\":\"start\""), std::string::npos);
  EXPECT_NE(lines.back().find("\"kind\":\"seal\""), std::string::npos);
  for (const auto& line : lines) EXPECT_TRUE(ScanCanonicalLine(line).ok()) << line;
}

TEST_F(ChainTest, EditedFieldIsCaught) {
  VerifyReport report = Tamper([](auto& lines) {
    auto at = lines[3].find("\"nr\":165");
    ASSERT_NE(at, std::string::npos);
    lines[3].replace(at, 8, "\"nr\":166");
  });
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered);
  EXPECT_EQ(report.line, 4u);
  EXPECT_NE(report.reason.find("hash mismatch"), std::string::npos) << report.reason;
}

TEST_F(ChainTest, EditedFieldWithRecomputedHashFailsTheSignature) {
  VerifyReport report = Tamper([this](auto& lines) {
    // The attacker recomputes the hash but can only sign with a key they own.
    auto other = SigningKey::Generate();
    lines[3] = Resign(lines[3], *other, key_.key_id(), [](json& j) { j["cocoon"]["syscall"]["nr"] = 1; });
  });
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered);
  EXPECT_EQ(report.line, 4u);
  EXPECT_NE(report.reason.find("signature"), std::string::npos) << report.reason;
}

TEST_F(ChainTest, DeletedLineIsCaught) {
  VerifyReport report = Tamper([](auto& lines) { lines.erase(lines.begin() + 4); });
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered);
  EXPECT_EQ(report.line, 5u);
  EXPECT_NE(report.reason.find("deleted"), std::string::npos) << report.reason;
}

TEST_F(ChainTest, InsertedLineIsCaught) {
  VerifyReport report = Tamper([](auto& lines) { lines.insert(lines.begin() + 5, lines[3]); });
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered);
  EXPECT_EQ(report.line, 6u);
  EXPECT_NE(report.reason.find("inserted"), std::string::npos) << report.reason;
}

TEST_F(ChainTest, SwappedPairIsCaught) {
  VerifyReport report = Tamper([](auto& lines) { std::swap(lines[4], lines[5]); });
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered);
  EXPECT_EQ(report.line, 5u);
}

TEST_F(ChainTest, TruncatedTailIsUnsealed) {
  VerifyReport report = Tamper([](auto& lines) { lines.resize(6); });
  EXPECT_EQ(report.verdict, VerifyVerdict::kUnsealed) << FormatReport(report);
  EXPECT_NE(report.reason.find("not sealed"), std::string::npos);
}

TEST_F(ChainTest, PartialLastLineIsCaught) {
  std::string path = WriteLog("log", 8);
  std::string data = ReadFile(path);
  WriteFile(path, data.substr(0, data.size() - 200));
  VerifyReport report = Verify({path});
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered);
  EXPECT_EQ(report.line, 10u);
  EXPECT_NE(report.reason.find("partial last line"), std::string::npos) << report.reason;
}

TEST_F(ChainTest, LineResignedWithUntrustedKeyIsCaught) {
  VerifyReport report = Tamper([](std::vector<std::string>& lines) {
    auto attacker = SigningKey::Generate();
    // Re-sign the edited line and everything after it, so the chain is whole.
    Digest prev{};
    for (size_t i = 3; i < lines.size(); ++i) {
      lines[i] = Resign(lines[i], *attacker, attacker->key_id(), [&](json& j) {
        if (i == 3) j["cocoon"]["syscall"]["action"] = "allow";
        if (i > 3) j["cocoon"]["integrity"]["prev"] = HexEncode(prev.data(), prev.size());
      });
      HexDecode(json::parse(lines[i])["cocoon"]["integrity"]["hash"].get<std::string>(), prev.data(), 32);
    }
  });
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered);
  EXPECT_EQ(report.line, 4u);
  EXPECT_NE(report.reason.find("not trusted"), std::string::npos) << report.reason;
}

TEST_F(ChainTest, ReplayedLineFromAnotherLogIsCaught) {
  std::string other = WriteLog("other", 8);
  auto other_lines = SplitLines(ReadFile(other));
  VerifyReport report = Tamper([&](auto& lines) { lines[4] = other_lines[4]; });
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered);
  EXPECT_EQ(report.line, 5u);
  EXPECT_NE(report.reason.find("another log"), std::string::npos) << report.reason;
}

TEST_F(ChainTest, ReplayedChainAppendedAfterSealIsCaught) {
  std::string other = WriteLog("other", 3);
  auto other_lines = SplitLines(ReadFile(other));
  VerifyReport report = Tamper([&](auto& lines) { lines.insert(lines.end(), other_lines.begin(), other_lines.end()); });
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered);
  EXPECT_EQ(report.line, 11u);
}

TEST_F(ChainTest, RemovedHeadIsCaught) {
  VerifyReport report = Tamper([](auto& lines) { lines.erase(lines.begin(), lines.begin() + 2); });
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered);
  EXPECT_EQ(report.line, 1u);
}

TEST_F(ChainTest, UntrustedKeyFailsEvenWhenIntact) {
  std::string path = WriteLog("log", 2);
  VerifyOptions options;
  options.trusted.push_back(SigningKey::Generate()->public_key());
  auto report = VerifyFiles({path}, options);
  ASSERT_TRUE(report.ok());
  EXPECT_EQ(report->verdict, VerifyVerdict::kTampered);
  EXPECT_EQ(report->line, 1u);
}

TEST_F(ChainTest, SignEveryNSignsCheckpointsOnlyAndStillChains) {
  std::string path = WriteLog("log", 250, /*sign_every=*/100);
  VerifyReport report = Verify({path});
  EXPECT_EQ(report.verdict, VerifyVerdict::kSealed) << FormatReport(report);
  EXPECT_EQ(report.signatures, 5u);  // start, two checkpoints, the batch's last line, seal
  auto lines = SplitLines(ReadFile(path));
  // Editing an unsigned line and fixing its hash still breaks the next prev.
  size_t victim = 50;
  ASSERT_EQ(lines[victim].find("\"sig\""), std::string::npos);
  json j = json::parse(lines[victim]);
  j["cocoon"]["syscall"]["action"] = "allow";
  j["cocoon"]["integrity"].erase("hash");
  Digest hash = LineHash(*Canonicalize(j));
  j["cocoon"]["integrity"]["hash"] = HexEncode(hash.data(), hash.size());
  lines[victim] = *Canonicalize(j);
  WriteFile(path, JoinLines(lines));
  report = Verify({path});
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered);
  EXPECT_EQ(report.line, victim + 2);
}

// Every write ends with a signed line, so unsigned lines at the end are
// either forged (no key needed to chain them) or a cut in the middle of a
// write: never "intact", which is what a live log that is merely unsealed says.
// Bare newlines appended to a log are tampered at the first one, and are
// not each turned into a line the verifier keeps (a few hundred bytes each:
// 100 MB of them cost it tens of GB before).
TEST_F(ChainTest, AppendedNewlinesAreTamperedWithoutALinePerNewline) {
  std::string path = WriteLog("log", 8);
  const size_t intact = SplitLines(ReadFile(path)).size();
  {
    std::ofstream out(path, std::ios::app | std::ios::binary);
    out << std::string(32 << 20, '\n');
  }
  VerifyReport report = Verify({path});
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered) << FormatReport(report);
  EXPECT_EQ(report.line, intact + 1);
  EXPECT_LE(report.lines, intact + 2) << "lines past the second short one were looked at";
}

TEST_F(ChainTest, SignEveryNUnsignedTailIsTampered) {
  std::string path = WriteLog("log", 150, /*sign_every=*/100);
  auto lines = SplitLines(ReadFile(path));
  lines.resize(lines.size() - 3);
  WriteFile(path, JoinLines(lines));
  VerifyReport report = Verify({path});
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered) << FormatReport(report);
  EXPECT_EQ(report.line, 102u) << "the first line after the last signature (the checkpoint at 101)";
  EXPECT_NE(report.reason.find("covered by no signature"), std::string::npos) << report.reason;
}

TEST_F(ChainTest, KeyRotationIsSignedByTheOldKey) {
  auto next = SigningKey::Generate();
  ASSERT_TRUE(WriteKeyPair(*next, Path("key2")).ok());
  auto log = AuditLog::Open(Options("log"));
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE((*log)->Append(SampleDenial(1)).ok());
  ASSERT_TRUE((*log)->RotateKey(Path("key2")).ok());
  ASSERT_TRUE((*log)->Append(SampleDenial(2)).ok());
  ASSERT_TRUE((*log)->Close().ok());
  VerifyReport report = Verify({Path("log")});  // only the old key is trusted
  EXPECT_EQ(report.verdict, VerifyVerdict::kSealed) << FormatReport(report);
  EXPECT_NE(FormatReport(report).find("rotated to " + next->key_id()), std::string::npos);
  VerifyOptions only_new;
  only_new.trusted.push_back(next->public_key());
  auto second = VerifyFiles({Path("log")}, only_new);
  EXPECT_EQ(second->verdict, VerifyVerdict::kTampered);
}

TEST_F(ChainTest, CrashedWriterIsRecoveredAndReported) {
  std::string path = WriteLog("log", 8);
  std::string data = ReadFile(path);
  size_t cut = data.size() - 150;  // mid-seal: what kill -9 during write(2) leaves
  WriteFile(path, data.substr(0, cut));
  EXPECT_EQ(Verify({path}).verdict, VerifyVerdict::kTampered);
  {
    auto log = AuditLog::Open(Options("log"));
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    ASSERT_TRUE((*log)->Append(SampleDenial(99)).ok());
    ASSERT_TRUE((*log)->Close().ok());
  }
  // The fragment is cut away (a SIEM never ingests it) and kept, signed, in
  // the recovery record; verify never calls that log OK.
  VerifyReport report = Verify({path});
  EXPECT_EQ(report.verdict, VerifyVerdict::kRecovered) << FormatReport(report);
  EXPECT_NE(FormatReport(report).find(std::to_string(cut - (data.rfind('\n', cut) + 1)) + " bytes without a newline"),
            std::string::npos) << FormatReport(report);
  auto lines = SplitLines(ReadFile(path));
  // 9 intact lines, recovery, start, event, seal: nothing else lost.
  ASSERT_EQ(lines.size(), 13u);
  size_t intact = data.rfind('\n', cut) + 1;
  EXPECT_EQ(data.substr(0, intact), ReadFile(path).substr(0, intact));
  json recovery = json::parse(lines[9])["cocoon"]["integrity"];
  EXPECT_EQ(recovery["kind"], "recovery");
  std::string fragment = data.substr(intact, cut - intact), kept;
  EXPECT_EQ(recovery["partial_bytes"], fragment.size());
  Digest digest = LineHash(fragment);
  EXPECT_EQ(recovery["partial_sha256"], HexEncode(digest.data(), digest.size()));
  ASSERT_TRUE(Base64Decode(recovery["partial_base64"].get<std::string>(), &kept));
  EXPECT_EQ(kept, fragment);
}

// An older cocoon ended a torn fragment with a newline, keeping it as a line
// of its own before the recovery record. A short one (a kill early in a
// line) is still recovered: the verifier's cut at short lines needs two in a
// row, and a recovery record is not short.
TEST_F(ChainTest, AShortFragmentLineOfAnOlderCocoonIsStillRecovered) {
  std::string path = WriteLog("log", 8);
  std::string data = ReadFile(path);
  size_t intact = data.rfind('\n', data.size() - 2) + 1;  // up to the seal
  const std::string fragment = data.substr(intact, 40);   // the seal's first 40 bytes
  WriteFile(path, data.substr(0, intact) + fragment);
  {
    auto log = AuditLog::Open(Options("log"));
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    ASSERT_TRUE((*log)->Append(SampleDenial(99)).ok());
    ASSERT_TRUE((*log)->Close().ok());
  }
  std::string recovered = ReadFile(path);
  WriteFile(path, recovered.substr(0, intact) + fragment + "\n" + recovered.substr(intact));  // the old layout
  VerifyReport report = Verify({path});
  EXPECT_EQ(report.verdict, VerifyVerdict::kRecovered) << FormatReport(report);
}

TEST_F(ChainTest, ForgedRecoveryClaimIsNotAccepted) {
  VerifyReport report = Tamper([](auto& lines) { lines[4] = lines[4].substr(0, 100); });
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered);
  EXPECT_EQ(report.line, 5u);
}

TEST_F(ChainTest, TwoWritersInterleaveThroughTheTail) {
  auto a = AuditLog::Open(Options("log"));
  auto b = AuditLog::Open(Options("log"));
  ASSERT_TRUE(a.ok() && b.ok());
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE((i % 3 ? *a : *b)->Append(SampleDenial(i)).ok());
  }
  ASSERT_TRUE((*a)->Close().ok());
  ASSERT_TRUE((*b)->Close().ok());
  VerifyReport report = Verify({Path("log")});
  EXPECT_EQ(report.verdict, VerifyVerdict::kSealed) << FormatReport(report);
  EXPECT_EQ(report.lines, 24u);
  EXPECT_EQ((*a)->chain_id(), (*b)->chain_id());
}

// A failed append must not leave a stale tail cached: after another writer's
// lines, the next append would reuse their sequence numbers and break the chain.
TEST_F(ChainTest, AFailedAppendDoesNotReuseAStaleTail) {
  auto a = AuditLog::Open(Options("log"));
  auto b = AuditLog::Open(Options("log"));
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_TRUE((*a)->Append(SampleDenial(1)).ok());
  ASSERT_TRUE((*b)->Append(SampleDenial(2)).ok());
  Event unwritable = SampleDenial(3);
  unwritable.fields = EventFields(unwritable);
  unwritable.rendered.reset();
  unwritable.fields["cocoon"]["ratio"] = 0.5;  // floats are refused (integers only)
  ASSERT_FALSE((*a)->Append(unwritable).ok());
  ASSERT_TRUE((*a)->Append(SampleDenial(4)).ok());
  ASSERT_TRUE((*b)->Append(SampleDenial(5)).ok());
  ASSERT_TRUE((*a)->Close().ok());
  ASSERT_TRUE((*b)->Close().ok());
  VerifyReport report = Verify({Path("log")});
  EXPECT_EQ(report.verdict, VerifyVerdict::kSealed) << FormatReport(report);
}

TEST_F(ChainTest, RotationContinuesTheChainAcrossFiles) {
  AuditLogOptions options = Options("log");
  options.rotate_bytes = 8000;
  auto log = AuditLog::Open(options);
  ASSERT_TRUE(log.ok());
  for (int i = 0; i < 40; ++i) ASSERT_TRUE((*log)->Append(SampleDenial(i)).ok());
  ASSERT_TRUE((*log)->Close().ok());
  std::vector<std::pair<uint64_t, std::string>> archives;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    std::string name = entry.path().filename();
    if (name.rfind("log.", 0) == 0)
      archives.emplace_back(std::stoull(name.substr(name.rfind('-') + 1)), entry.path());
  }
  ASSERT_GE(archives.size(), 2u);
  std::sort(archives.begin(), archives.end());
  std::vector<std::string> series;
  for (const auto& a : archives) series.push_back(a.second);
  series.push_back(Path("log"));
  VerifyReport report = Verify(series);
  EXPECT_EQ(report.verdict, VerifyVerdict::kSealed) << FormatReport(report);
  // Without the newest file the series ends with a rotate record: not sealed.
  std::vector<std::string> archives_only(series.begin(), series.end() - 1);
  VerifyReport cut = Verify(archives_only);
  EXPECT_EQ(cut.verdict, VerifyVerdict::kUnsealed) << FormatReport(cut);
  EXPECT_NE(cut.reason.find("continues in the next file"), std::string::npos) << cut.reason;
  VerifyReport alone = Verify({Path("log")});
  EXPECT_EQ(alone.verdict, VerifyVerdict::kSealed) << FormatReport(alone);
  EXPECT_NE(FormatReport(alone).find("earlier file that was not given"), std::string::npos);
  std::swap(series[0], series[1]);
  EXPECT_EQ(Verify(series).verdict, VerifyVerdict::kTampered);
}

TEST_F(ChainTest, SplunkHecEnvelopeVerifies) {
  WriteHecLog();
  auto lines = SplitLines(ReadFile(Path("hec.json")));
  ASSERT_EQ(lines.size(), 3u);
  json envelope = json::parse(lines[1]);
  EXPECT_EQ(envelope["sourcetype"], "cocoon:audit");
  EXPECT_EQ(envelope["event"]["class_uid"], 1003);
  EXPECT_EQ(Verify({Path("hec.json")}).verdict, VerifyVerdict::kSealed);
}

TEST_F(ChainTest, BrokenHecEnvelopeIsTampered) {
  // The envelope is outside the signed hash, but a line a SIEM cannot parse
  // must not pass as intact (audit_verify_fuzzer found this).
  WriteHecLog();
  const auto original = SplitLines(ReadFile(Path("hec.json")));
  const std::vector<std::pair<std::string, std::string>> breakages = {
      {",\"host\":", ",\"host\"("},                       // not JSON at all
      {"\"source\":\"cocoon\"", "\"source\":\"other\""},  // a different envelope
      {",\"time\":", ",\"extra\":1,\"time\":"},           // an unexpected key
  };
  for (const auto& [from, to] : breakages) {
    auto lines = original;
    size_t at = lines[1].find(from);
    ASSERT_NE(at, std::string::npos) << from;
    lines[1].replace(at, from.size(), to);
    WriteFile(Path("hec.json"), JoinLines(lines));
    EXPECT_EQ(Verify({Path("hec.json")}).verdict, VerifyVerdict::kTampered) << lines[1];
  }
}

TEST_F(ChainTest, ShipperAddedKeysNeedTheFlag) {
  std::string path = WriteLog("log", 3);
  std::vector<std::string> shipped;
  for (const auto& line : SplitLines(ReadFile(path))) {
    json j = json::parse(line);
    j["host"] = {{"name", "shipper-box"}};
    j["@version"] = "1";
    shipped.push_back(j.dump(2).size() ? j.dump() : "");  // nlohmann order, not JCS
  }
  WriteFile(path, JoinLines(shipped));
  EXPECT_EQ(Verify({path}).verdict, VerifyVerdict::kTampered);
  VerifyReport report = Verify({path}, /*ignore_extra_keys=*/true);
  EXPECT_EQ(report.verdict, VerifyVerdict::kSealed) << FormatReport(report);
  // ...but the flag never forgives an edit of Cocoon's own fields.
  auto lines = SplitLines(ReadFile(path));
  json j = json::parse(lines[2]);
  j["cocoon"]["syscall"]["count"] = 0;
  lines[2] = j.dump();
  WriteFile(path, JoinLines(lines));
  EXPECT_EQ(Verify({path}, true).verdict, VerifyVerdict::kTampered);
}

TEST_F(ChainTest, ClearErrorsForUnwritableLogs) {
  AuditLogOptions options = Options("x");
  options.path = "/proc/version";
  auto read_only = AuditLog::Open(options);
  ASSERT_FALSE(read_only.ok());
  EXPECT_NE(read_only.status().message().find("/proc/version"), std::string::npos);
  // A device is not a log file (ENOSPC itself: LogFileSafetyTest.FullDiskIsAClearError).
  options.path = "/dev/full";
  auto device = AuditLog::Open(options);
  ASSERT_FALSE(device.ok());
  EXPECT_NE(device.status().message().find("/dev/full is not a regular file"), std::string::npos)
      << device.status().message();
  options.path = Path("nodir/log");
  EXPECT_FALSE(AuditLog::Open(options).ok());
  options = Options("log");
  options.key_path = "";
  auto no_key = AuditLog::Open(options);
  ASSERT_FALSE(no_key.ok());
  EXPECT_NE(no_key.status().message().find("keygen"), std::string::npos);
}

TEST_F(ChainTest, KeyFilesArePrivateAndIdsDeriveFromThePublicKey) {
  struct stat st;
  ASSERT_EQ(stat(key_path_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto loaded = SigningKey::LoadPem(key_path_);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->key_id(), key_.key_id());
  EXPECT_EQ(loaded->key_id(), KeyIdFromRaw(key_.public_key().raw()));
  auto pub = LoadPublicKeys(key_path_ + ".pub");
  ASSERT_TRUE(pub.ok());
  EXPECT_EQ(pub->front().key_id(), key_.key_id());
  EXPECT_FALSE(WriteKeyPair(*loaded, key_path_).ok());  // never overwrites
  Digest hash = LineHash("x");
  auto signature = loaded->Sign(hash);
  ASSERT_TRUE(signature.ok());
  EXPECT_TRUE(pub->front().Verify(hash, *signature));
  (*signature)[0] ^= 1;
  EXPECT_FALSE(pub->front().Verify(hash, *signature));
}

TEST_F(ChainTest, CheckpointsEveryNLines) {
  AuditLogOptions options = Options("log");
  options.checkpoint_every_lines = 10;
  auto log = AuditLog::Open(options);
  ASSERT_TRUE(log.ok());
  for (int i = 0; i < 30; ++i) ASSERT_TRUE((*log)->Append(SampleDenial(i)).ok());
  ASSERT_TRUE((*log)->Close().ok());
  std::string data = ReadFile(Path("log"));
  size_t checkpoints = 0;
  for (size_t at = 0; (at = data.find("\"kind\":\"checkpoint\"", at)) != std::string::npos; ++at) ++checkpoints;
  EXPECT_EQ(checkpoints, 3u);
  EXPECT_EQ(Verify({Path("log")}).verdict, VerifyVerdict::kSealed);
}

// The verifier scans, hashes and checks signatures on a worker pool, then
// reports the lowest failing line. Every tampering below must give exactly the
// report of the single-threaded run (verdict, line, reason), including when
// two lines are broken and the later one lies in an earlier-finishing chunk.
class ParallelVerifyTest : public ChainTest {
 protected:
  VerifyReport VerifyWith(const std::string& path, unsigned threads) const {
    VerifyOptions options;
    options.trusted.push_back(key_.public_key());
    options.threads = threads;
    auto report = VerifyFiles({path}, options);
    EXPECT_TRUE(report.ok());
    return report.ok() ? *report : VerifyReport{};
  }

  // A log of 300 events (302 lines: several chunks of lines and of
  // signatures), mutated, verified on 1 and on 4 threads.
  VerifyReport CompareThreads(uint32_t sign_every, const std::function<void(std::vector<std::string>&)>& mutate) {
    std::string path = WriteLog("big" + std::to_string(++logs_), 300, sign_every);  // a fresh log each time
    auto lines = SplitLines(ReadFile(path));
    mutate(lines);
    WriteFile(path, JoinLines(lines));
    VerifyReport sequential = VerifyWith(path, 1);
    for (unsigned threads : {2u, 4u}) {
      VerifyReport parallel = VerifyWith(path, threads);
      EXPECT_EQ(parallel.verdict, sequential.verdict) << threads;
      EXPECT_EQ(parallel.line, sequential.line) << threads;
      EXPECT_EQ(parallel.reason, sequential.reason) << threads;
      EXPECT_EQ(parallel.signatures, sequential.signatures) << threads;
      EXPECT_EQ(parallel.notices, sequential.notices) << threads;
    }
    return sequential;
  }

  // Gives line i the signature of line j (valid base64, wrong signature).
  static void SwapSignature(std::vector<std::string>& lines, size_t i, size_t j) {
    auto sig = [](const std::string& line) { return line.find("\"sig\":\""); };
    ASSERT_NE(sig(lines[i]), std::string::npos);
    ASSERT_NE(sig(lines[j]), std::string::npos);
    lines[i].replace(sig(lines[i]) + 7, 88, lines[j].substr(sig(lines[j]) + 7, 88));
  }
  static void EditNr(std::string& line) {
    auto at = line.find("\"nr\":165");
    ASSERT_NE(at, std::string::npos);
    line.replace(at, 8, "\"nr\":166");
  }
  int logs_ = 0;
};

TEST_F(ParallelVerifyTest, CleanLogAgrees) {
  EXPECT_EQ(CompareThreads(1, [](auto&) {}).verdict, VerifyVerdict::kSealed);
  EXPECT_EQ(CompareThreads(7, [](auto&) {}).verdict, VerifyVerdict::kSealed);
}

TEST_F(ParallelVerifyTest, FirstBadSignatureIsReportedWhateverTheChunking) {
  VerifyReport report = CompareThreads(1, [](auto& lines) {
    SwapSignature(lines, 290, 10);
    SwapSignature(lines, 40, 41);
  });
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered);
  EXPECT_EQ(report.line, 41u);
  EXPECT_NE(report.reason.find("bad Ed25519 signature"), std::string::npos) << report.reason;
}

TEST_F(ParallelVerifyTest, EarlierBadSignatureWinsOverLaterChainBreak) {
  VerifyReport report = CompareThreads(1, [](auto& lines) {
    SwapSignature(lines, 20, 21);
    EditNr(lines[280]);
  });
  EXPECT_EQ(report.line, 21u);
  report = CompareThreads(1, [](auto& lines) {
    SwapSignature(lines, 280, 21);
    EditNr(lines[20]);
  });
  EXPECT_EQ(report.line, 21u);
  EXPECT_NE(report.reason.find("hash mismatch"), std::string::npos) << report.reason;
}

TEST_F(ParallelVerifyTest, ChainAttacksAgree) {
  EXPECT_EQ(CompareThreads(1, [](auto& l) { std::swap(l[150], l[151]); }).line, 151u);
  EXPECT_EQ(CompareThreads(1, [](auto& l) { l.erase(l.begin() + 260); }).line, 261u);
  EXPECT_EQ(CompareThreads(1, [](auto& l) { l.insert(l.begin() + 200, l[100]); }).line, 201u);
  EXPECT_EQ(CompareThreads(1, [](auto& l) { l.resize(250); }).verdict, VerifyVerdict::kUnsealed);
  EXPECT_EQ(CompareThreads(1, [](auto& l) { l[299] += " "; }).line, 300u);  // not canonical
  EXPECT_EQ(CompareThreads(7, [](auto& l) { EditNr(l[120]); }).line, 121u);
  EXPECT_EQ(CompareThreads(7, [](auto& l) { l.erase(l.begin() + 30); }).line, 31u);
}

// Signatures are made by OpenSSL (SigningKey::Sign) and checked by libsodium
// (PublicKey::Verify): every honest one must verify, any flipped bit must not.
TEST_F(ChainTest, OpenSslSignaturesVerifyUnderLibsodium) {
  auto other = SigningKey::Generate();
  ASSERT_TRUE(other.ok());
  for (int i = 0; i < 64; ++i) {
    Digest hash = LineHash("line " + std::to_string(i));
    auto mine = key_.Sign(hash);
    auto theirs = other->Sign(hash);
    ASSERT_TRUE(mine.ok() && theirs.ok());
    EXPECT_TRUE(key_.public_key().Verify(hash, *mine)) << i;
    EXPECT_TRUE(other->public_key().Verify(hash, *theirs)) << i;
    EXPECT_FALSE(key_.public_key().Verify(hash, *theirs)) << i;  // another key's signature
    Signature flipped = *mine;
    flipped[(i * 37) % 64] ^= static_cast<uint8_t>(1u << (i % 8));  // a bit of R or of S
    EXPECT_FALSE(key_.public_key().Verify(hash, flipped)) << i;
    Digest edited = hash;
    edited[i % 32] ^= 0x01;
    EXPECT_FALSE(key_.public_key().Verify(edited, *mine)) << i;
  }
  EXPECT_FALSE(PublicKey().Verify(LineHash("x"), *key_.Sign(LineHash("x"))));  // no key: nothing verifies
}

// S + L is the same scalar mod L, so a verifier that skipped RFC 8032's
// "0 <= S < L" check would accept a second spelling of every signature.
Signature AddGroupOrderToS(const Signature& signature) {
  static constexpr uint8_t kL[32] = {0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7,
                                     0xa2, 0xde, 0xf9, 0xde, 0x14, 0,    0,    0,    0,    0,    0,
                                     0,    0,    0,    0,    0,    0,    0,    0,    0,    0x10};
  Signature out = signature;
  unsigned carry = 0;
  for (int i = 0; i < 32; ++i) {  // little-endian; S < L < 2^253, so S + L < 2^256
    unsigned sum = signature[32 + i] + kL[i] + carry;
    out[32 + i] = static_cast<uint8_t>(sum);
    carry = sum >> 8;
  }
  return out;
}

TEST_F(ChainTest, NonCanonicalSignatureScalarIsRejected) {
  Digest hash = LineHash("line");
  auto signature = key_.Sign(hash);
  ASSERT_TRUE(signature.ok());
  ASSERT_TRUE(key_.public_key().Verify(hash, *signature));
  EXPECT_FALSE(key_.public_key().Verify(hash, AddGroupOrderToS(*signature)));
  // The same re-spelled signature in a log line is caught as a bad signature.
  VerifyReport report = Tamper([](auto& lines) {
    json j = json::parse(lines[4]);
    std::string sig = j["cocoon"]["integrity"]["sig"];
    Signature raw{};
    ASSERT_TRUE(Base64DecodeExact(sig, raw.data(), raw.size()));
    raw = AddGroupOrderToS(raw);
    j["cocoon"]["integrity"]["sig"] = Base64Encode(raw.data(), raw.size());
    lines[4] = *Canonicalize(j);
  });
  EXPECT_EQ(report.verdict, VerifyVerdict::kTampered);
  EXPECT_EQ(report.line, 5u);
  EXPECT_EQ(report.reason, "bad Ed25519 signature (line forged or re-signed)");
}

// The identity point as a key with R = identity and S = 0 satisfies the
// cofactorless equation [S]B = R + [k]A for every message; libsodium refuses
// small-order keys and R, so such a "key" in a trust file verifies nothing.
TEST(AuditSignatures, SmallOrderKeyCannotVerifyAnything) {
  std::string identity(32, '\0');
  identity[0] = 1;
  auto key = PublicKey::FromRaw(identity);
  ASSERT_TRUE(key.ok());
  Signature forged{};
  forged[0] = 1;  // R = identity, S = 0
  EXPECT_FALSE(key->Verify(LineHash("anything"), forged));
}

TEST(AuditEncoding, HexAndBase64AreStrict) {
  uint8_t out[2];
  EXPECT_TRUE(HexDecode("0aff", out, 2));
  EXPECT_EQ(out[0], 0x0a);
  EXPECT_EQ(out[1], 0xff);
  for (int byte = 0; byte < 256; ++byte) {
    bool digit = (byte >= '0' && byte <= '9') || (byte >= 'a' && byte <= 'f');
    std::string hex = "00" + std::string(1, static_cast<char>(byte)) + "0";
    EXPECT_EQ(HexDecode(hex, out, 2), digit) << byte;
  }
  EXPECT_FALSE(HexDecode("0aF0", out, 2));  // upper case is not canonical
  EXPECT_FALSE(HexDecode("0a0", out, 2));
  std::string decoded;
  EXPECT_TRUE(Base64Decode("+/9h", &decoded));
  EXPECT_EQ(decoded, "\xfb\xff\x61");
  EXPECT_TRUE(Base64Decode("YQ==", &decoded));
  EXPECT_EQ(decoded, "a");
  EXPECT_FALSE(Base64Decode("YR==", &decoded));  // non-zero pad bits: a second spelling
  EXPECT_FALSE(Base64Decode("Y Q=", &decoded));
  EXPECT_FALSE(Base64Decode(std::string("YQ\0=", 4), &decoded));
  EXPECT_FALSE(Base64Decode("YQ=a", &decoded));
  EXPECT_FALSE(Base64Decode("-_==", &decoded));
}

// HexDecode takes 16 digits at a time: every byte value at every position of
// a 64-digit digest, against a byte-at-a-time reference.
TEST(AuditEncoding, HexDecodeOfDigestsIsStrictAtEveryPosition) {
  const std::string digits = "0123456789abcdef";
  std::string hex;
  for (int i = 0; i < 64; ++i) hex += digits[(i * 7 + 3) % 16];
  for (size_t at = 0; at < hex.size(); ++at) {
    for (int byte = 0; byte < 256; ++byte) {
      std::string mutated = hex;
      mutated[at] = static_cast<char>(byte);
      bool valid = true;
      uint8_t expected[32];
      for (size_t i = 0; i < 32; ++i) {
        size_t hi = digits.find(mutated[2 * i]), lo = digits.find(mutated[2 * i + 1]);
        if (hi == std::string::npos || lo == std::string::npos) valid = false;
        else expected[i] = static_cast<uint8_t>(hi << 4 | lo);
      }
      uint8_t out[32];
      ASSERT_EQ(HexDecode(mutated, out, 32), valid) << "byte " << byte << " at " << at;
      if (valid) {
        EXPECT_EQ(std::memcmp(out, expected, 32), 0) << "byte " << byte << " at " << at;
      }
    }
  }
}

// The verifier decodes signatures with Base64DecodeExact (no allocation): it
// must accept exactly what Base64Decode accepts with the same length, for
// every byte value at every position of a real 64-byte signature's spelling
// and for every size from 0 to 66.
TEST(AuditEncoding, Base64DecodeExactAgreesWithBase64Decode) {
  std::string raw;
  for (int i = 0; i < 66; ++i) raw += static_cast<char>(i * 37 + 11);
  for (size_t size = 0; size <= raw.size(); ++size) {
    std::string text = Base64Encode(reinterpret_cast<const uint8_t*>(raw.data()), size);
    uint8_t out[66];
    ASSERT_TRUE(Base64DecodeExact(text, out, size)) << size;
    EXPECT_EQ(std::string(reinterpret_cast<char*>(out), size), raw.substr(0, size));
    EXPECT_FALSE(Base64DecodeExact(text, out, size + 1)) << size;
  }
  std::string text = Base64Encode(reinterpret_cast<const uint8_t*>(raw.data()), 64);
  for (size_t at = 0; at < text.size(); ++at) {
    for (int byte = 0; byte < 256; ++byte) {
      std::string mutated = text;
      mutated[at] = static_cast<char>(byte);
      std::string decoded;
      bool reference = Base64Decode(mutated, &decoded) && decoded.size() == 64;
      uint8_t out[64];
      ASSERT_EQ(Base64DecodeExact(mutated, out, 64), reference) << "byte " << byte << " at " << at;
      if (reference) {
        EXPECT_EQ(std::string(reinterpret_cast<char*>(out), 64), decoded);
      }
    }
  }
}

}  // namespace
}  // namespace cocoon::audit::testing
