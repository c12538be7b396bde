// Shared helpers for the audit tests: a private temp dir with a key pair,
// writing logs, editing their lines, and verifying.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "audit/audit_log.h"
#include "audit/events.h"
#include "audit/keys.h"
#include "audit/verifier.h"

namespace cocoon::audit::testing {

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

inline std::vector<std::string> SplitLines(const std::string& data) {
  std::vector<std::string> lines;
  std::stringstream in(data);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

inline std::string JoinLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) out += line + "\n";
  return out;
}

inline Event SampleDenial(uint64_t i) {
  return SyscallDenied({"mount", 165, {i, 0, 0, 0, 0, 0}, "errno(EPERM)", 1, "test-policy", 100, "run-test"});
}

class AuditTempDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/cocoon-audit-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    key_path_ = dir_ + "/key";
    auto key = SigningKey::Generate();
    ASSERT_TRUE(key.ok());
    ASSERT_TRUE(WriteKeyPair(*key, key_path_).ok());
    key_ = *key;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  AuditLogOptions Options(const std::string& name, uint32_t sign_every = 1) const {
    AuditLogOptions options;
    options.path = Path(name);
    options.key_path = key_path_;
    options.sign_every = sign_every;
    options.fsync = FsyncPolicy::kNone;
    return options;
  }

  // A sealed log: start, `events` denials, seal. With sign_every > 1 the
  // denials go in one batch (the last line of every write is signed, so one
  // Append per event would sign them all).
  std::string WriteLog(const std::string& name, int events, uint32_t sign_every = 1) {
    auto log = AuditLog::Open(Options(name, sign_every));
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    if (!log.ok()) return "";
    if (sign_every > 1) {
      std::vector<Event> batch;
      for (int i = 0; i < events; ++i) batch.push_back(SampleDenial(i));
      EXPECT_TRUE((*log)->AppendBatch(std::move(batch)).ok());
    } else {
      for (int i = 0; i < events; ++i) EXPECT_TRUE((*log)->Append(SampleDenial(i)).ok());
    }
    EXPECT_TRUE((*log)->Close().ok());
    return Path(name);
  }

  VerifyReport Verify(const std::vector<std::string>& paths, bool ignore_extra_keys = false) const {
    VerifyOptions options;
    options.trusted.push_back(key_.public_key());
    options.ignore_extra_keys = ignore_extra_keys;
    auto report = VerifyFiles(paths, options);
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    return report.ok() ? *report : VerifyReport{};
  }

  std::string dir_;
  std::string key_path_;
  SigningKey key_;
};

}  // namespace cocoon::audit::testing
