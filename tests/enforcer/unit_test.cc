// Pure enforcer pieces (LABELS unit): Outcome JSON, BPF validation, the
// seccomp sidecar, id maps, the artifact cache.
#include <linux/audit.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <set>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "audit/outcome_events.h"
#include "compiler/common/digest.h"
#include "enforcer/artifact_cache.h"
#include "enforcer/notify.h"
#include "enforcer/outcome.h"
#include "enforcer/seccomp_loader.h"
#include "enforcer/userns.h"
#include "tests/enforcer/test_util.h"

namespace cocoon::enforcer {
namespace {

TEST(OutcomeTest, JsonKeepsCallerFieldNames) {
  Outcome outcome;
  outcome.exit_code = 3;
  outcome.stdout_data = "ok\xff";  // invalid UTF-8 must not throw
  outcome.wall_ms = 12;
  outcome.peak_memory_kib = 2048;
  outcome.limits.push_back({"memory", 1024, "bytes", LimitMechanism::kCgroupV1, true, ""});
  std::string text = OutcomeToJsonText(outcome);
  auto j = nlohmann::json::parse(text);
  for (const char* key : {"exit_code", "stdout", "stderr", "duration_ms", "wall_ms", "timed_out", "oom_killed",
                          "termination_reason", "stdout_truncated", "stderr_truncated", "peak_memory_mb",
                          "peak_mem_kib", "signal", "user_cpu_ms", "system_cpu_ms", "stdout_bytes", "limits",
                          "policy", "denied_syscalls", "breakout"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["exit_code"], 3);
  EXPECT_EQ(j["peak_memory_mb"], 2.0);
  EXPECT_EQ(j["limits"][0]["mechanism"], "cgroup-v1");
  EXPECT_EQ(j["termination_reason"], "exited");
}

TEST(OutcomeTest, ShellExitStatus) {
  Outcome outcome;
  outcome.exit_code = 5;
  EXPECT_EQ(ShellExitStatus(outcome), 5);
  outcome.exit_code = -1;
  outcome.signal = 9;
  EXPECT_EQ(ShellExitStatus(outcome), 137);
  outcome.timed_out = true;
  EXPECT_EQ(ShellExitStatus(outcome), 124);
  outcome.timed_out = false;
  outcome.termination_reason = TerminationReason::kCancelled;
  EXPECT_EQ(ShellExitStatus(outcome), 130);
  // The command exited 0, then cocoon was cancelled during the commit.
  Outcome committed_cancelled;
  committed_cancelled.exit_code = 0;
  committed_cancelled.verification = "cancelled";
  EXPECT_EQ(ShellExitStatus(committed_cancelled), 130);
  // An unverified work dir outranks everything else.
  committed_cancelled.verification = "failed";
  committed_cancelled.verification_error = "disk quota";
  committed_cancelled.timed_out = true;
  EXPECT_EQ(ShellExitStatus(committed_cancelled), kExitWorkDirUnverified);
}

// A supervisor that failed after the command started (finish.cc): the
// Outcome says `failed` with the reason, exits 125 whatever else it holds,
// and the audit log's exit event carries the reason as cocoon.exit.error.
TEST(OutcomeTest, ASupervisorFailureIsFailedExits125AndIsAuditedWithItsReason) {
  Outcome outcome;
  outcome.exit_code = 0;
  outcome.termination_reason = TerminationReason::kFailed;
  outcome.supervisor_error = "wait4 sandbox init: No child processes: the supervisor failed after the command started";
  outcome.work_mode = "direct";
  outcome.verification = "after-the-fact";
  EXPECT_EQ(ShellExitStatus(outcome), kExitWorkDirUnverified);
  nlohmann::json j = OutcomeToJson(outcome);
  EXPECT_EQ(j["termination_reason"], "failed");
  EXPECT_EQ(j["supervisor_error"], outcome.supervisor_error);
  EXPECT_FALSE(OutcomeToJson(Outcome{}).contains("supervisor_error"));
  auto events = audit::EventsFromOutcome(outcome, 42, "run-1");
  ASSERT_FALSE(events.empty());
  nlohmann::json exited = audit::EventFields(events.back());
  EXPECT_EQ(exited["cocoon"]["exit"]["termination_reason"], "failed") << exited.dump(2);
  EXPECT_EQ(exited["cocoon"]["exit"]["error"], outcome.supervisor_error) << exited.dump(2);
  EXPECT_EQ(exited["cocoon"]["workdir"]["verified"], "after-the-fact") << exited.dump(2);
}

TEST(SeccompValidationTest, AcceptsAssembledFilter) {
  auto program = ValidateSeccompProgram(testing::AllowAllFilter());
  ASSERT_TRUE(program.ok()) << program.status().ToString();
  EXPECT_FALSE(ProgramUsesUserNotif(*program));
  auto notif = ValidateSeccompProgram(testing::AssembleFilter({{83, SECCOMP_RET_USER_NOTIF}}));
  ASSERT_TRUE(notif.ok());
  EXPECT_TRUE(ProgramUsesUserNotif(*notif));
}

TEST(SeccompValidationTest, RejectsBrokenPrograms) {
  EXPECT_FALSE(ValidateSeccompProgram("").ok());
  EXPECT_FALSE(ValidateSeccompProgram("1234567").ok());
  std::string bpf = testing::AllowAllFilter();
  EXPECT_FALSE(ValidateSeccompProgram(bpf.substr(0, bpf.size() - 8)).ok()) << "must end in RET";
  sock_filter jump = BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 200, 0);
  std::string bad = std::string(reinterpret_cast<const char*>(&jump), sizeof(jump)) + bpf;
  EXPECT_FALSE(ValidateSeccompProgram(bad).ok()) << "jump out of range";
}

TEST(NotifyTableTest, ParsesSidecar) {
  auto table = ParseSeccompSidecar(R"({"needs_listener":true,"default_action":{"action":"errno","errno":38},
    "supervised":[{"syscall":"ptrace","action":"kill","numbers":{"x86_64":101},
                   "conditions":[{"arg":0,"op":"masked_eq","value":8,"mask":8}]},
                  {"syscall":"exotic","action":"log","numbers":{}}]})");
  ASSERT_TRUE(table.ok()) << table.status().ToString();
  EXPECT_TRUE(table->needs_listener);
  ASSERT_EQ(table->rules.size(), 1u) << "entries without a number are skipped";
  EXPECT_EQ(table->rules[0].arch, AUDIT_ARCH_X86_64);
  EXPECT_EQ(table->rules[0].number, 101);
  EXPECT_EQ(table->rules[0].action, SupervisedAction::kKill);
  EXPECT_EQ(table->default_rule.action, SupervisedAction::kErrno);
  EXPECT_EQ(table->default_rule.errno_value, 38);
  // One rule per architecture, with the number that architecture reports.
  auto arches = ParseSeccompSidecar(R"({"default_action":{"action":"allow"},
    "supervised":[{"syscall":"uname","action":"kill","numbers":{"x86":122,"x86_64":63,"x32":63}}]})");
  ASSERT_TRUE(arches.ok()) << arches.status().ToString();
  ASSERT_EQ(arches->rules.size(), 3u);
  std::set<std::pair<uint32_t, int>> seen;
  for (const auto& rule : arches->rules) seen.insert({rule.arch, rule.number});
  EXPECT_EQ(seen, (std::set<std::pair<uint32_t, int>>{
                      {AUDIT_ARCH_I386, 122}, {AUDIT_ARCH_X86_64, 63}, {AUDIT_ARCH_X86_64, 63 | 0x40000000}}));
  EXPECT_FALSE(ParseSeccompSidecar("{").ok());
  EXPECT_FALSE(ParseSeccompSidecar(R"({"default_action":{"action":"yolo"}})").ok());
}

TEST(IdMapsTest, NeverMapsHostRootToTheSandboxUser) {
  IdMaps maps = PlanIdMaps(65534, 65534);
  if (geteuid() == 0) {
    EXPECT_EQ(maps.uid_map, "0 0 1\n65534 65534 1\n");
    EXPECT_FALSE(maps.deny_setgroups);
    EXPECT_EQ(maps.sandbox_host_uid, kRootSandboxHostUid);
    // `user 0:0`: the sandbox is 0 inside (host 65534); host root, which
    // builds the tree, takes inside id 65535.
    IdMaps zero = PlanIdMaps(0, 0);
    EXPECT_EQ(zero.uid_map, "0 65534 1\n65535 0 1\n");
    EXPECT_EQ(zero.gid_map, "0 65534 1\n65535 0 1\n");
  } else {
    EXPECT_EQ(maps.uid_map, "65534 " + std::to_string(geteuid()) + " 1\n");
    EXPECT_TRUE(maps.deny_setgroups);
  }
  EXPECT_NE(UserNamespaceUnavailableMessage(EPERM).find("kernel.unprivileged_userns_clone"), std::string::npos);
}

class CacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/cocoon-cache-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    chmod(dir_.c_str(), 0700);
    policy_ = dir_ + "/p.cocoon";
    std::ofstream(policy_) << "profile p {}\n";
  }
  void TearDown() override { system(("rm -rf " + dir_).c_str()); }
  // The digest the compiler would record for the policy as it is now.
  std::string PolicyDigest() const {
    std::ifstream in(policy_);
    return Sha256Hex(std::string(std::istreambuf_iterator<char>(in), {}));
  }
  std::string dir_, policy_;
};

TEST_F(CacheTest, StoreLookupAndInvalidation) {
  ArtifactCache cache(dir_ + "/cache");
  std::string key = ArtifactCache::KeyFor(policy_, "p");
  ASSERT_EQ(key.size(), 64u);
  EXPECT_NE(key, ArtifactCache::KeyFor(policy_, "other")) << "profile is part of the key";
  EXPECT_FALSE(cache.Lookup(key).has_value());
  CompiledLinuxArtifacts artifacts{"{plan}", std::string("\x06\0\0\0\0\0\xff\x7f", 8), "{}", {policy_}, {}, {PolicyDigest()}};
  ASSERT_TRUE(cache.Store(key, artifacts).ok());
  auto hit = cache.Lookup(key);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->plan_json, "{plan}");
  EXPECT_EQ(hit->seccomp_bpf, artifacts.seccomp_bpf);
  // An edited source file is a miss.
  std::ofstream(policy_, std::ios::app) << "# edit\n";
  EXPECT_FALSE(cache.Lookup(key).has_value());
}

// A regular file now where an include or import looked before the file it
// read is a miss: the policy would read that file now. Anything else there
// (a directory) changes nothing the loader reads. So is another
// $COCOON_POLICY_PATH, under which the same policy imports other files.
TEST_F(CacheTest, AFileWhereAnImportLookedFirstOrAnotherSearchPathIsAMiss) {
  ArtifactCache cache(dir_ + "/cache");
  unsetenv("COCOON_POLICY_PATH");
  std::string key = ArtifactCache::KeyFor(policy_, "p");
  setenv("COCOON_POLICY_PATH", dir_.c_str(), 1);
  EXPECT_NE(ArtifactCache::KeyFor(policy_, "p"), key);
  unsetenv("COCOON_POLICY_PATH");
  const std::string shadow = dir_ + "/strict.cocoon";
  CompiledLinuxArtifacts artifacts{"{plan}", "BPFBYTES", "{}", {policy_}, {shadow}, {PolicyDigest()}};
  ASSERT_TRUE(cache.Store(key, artifacts).ok());
  auto hit = cache.Lookup(key);
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->shadowing_paths, std::vector<std::string>{shadow});
  ASSERT_EQ(mkdir(shadow.c_str(), 0755), 0);
  EXPECT_TRUE(cache.Lookup(key).has_value()) << "a directory is not read";
  ASSERT_EQ(rmdir(shadow.c_str()), 0);
  std::ofstream(shadow) << "profile strict {}\n";
  EXPECT_FALSE(cache.Lookup(key).has_value()) << "`import \"strict\"` would read the new file";
}

// `import` reads a relative $COCOON_POLICY_PATH entry from the current
// directory: the key holds it made absolute, so runs from two directories
// never share an entry (with the raw text they did, and the second run got
// the first one's import).
TEST_F(CacheTest, ARelativeSearchPathIsKeyedByTheDirectoryItNamesFromHere) {
  ASSERT_EQ(mkdir((dir_ + "/a").c_str(), 0700), 0);
  ASSERT_EQ(mkdir((dir_ + "/b").c_str(), 0700), 0);
  char* here = getcwd(nullptr, 0);
  ASSERT_NE(here, nullptr);
  setenv("COCOON_POLICY_PATH", "p", 1);
  ASSERT_EQ(chdir((dir_ + "/a").c_str()), 0);
  const std::string from_a = ArtifactCache::KeyFor(policy_, "p");
  ASSERT_EQ(chdir((dir_ + "/b").c_str()), 0);
  const std::string from_b = ArtifactCache::KeyFor(policy_, "p");
  setenv("COCOON_POLICY_PATH", (dir_ + "/b/p").c_str(), 1);
  const std::string absolute_b = ArtifactCache::KeyFor(policy_, "p");
  unsetenv("COCOON_POLICY_PATH");
  ASSERT_EQ(chdir(here), 0);
  free(here);
  EXPECT_NE(from_a, from_b) << "p is " << dir_ << "/a/p from one and " << dir_ << "/b/p from the other";
  EXPECT_EQ(from_b, absolute_b) << "the same directories, the same key";
}

// A cache directory another user could change -- theirs, writable by
// others, or below a directory of theirs (they can rename it away and put
// their own in its place) -- is neither read nor written (Store once wrote
// into any of them).
TEST_F(CacheTest, ACacheDirAnotherUserCouldChangeIsNeitherReadNorWritten) {
  if (geteuid() != 0)
    GTEST_SKIP() << "SKIPPED, NOT PASSED (security check): needs root, to make a directory another user owns";
  const std::string theirs = dir_ + "/theirs", owned = dir_ + "/owned", open = dir_ + "/open";
  ASSERT_EQ(mkdir(theirs.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((theirs + "/cache").c_str(), 0700), 0);
  ASSERT_EQ(chown(theirs.c_str(), 65534, 65534), 0);
  ASSERT_EQ(mkdir(owned.c_str(), 0755), 0);
  ASSERT_EQ(chown(owned.c_str(), 65534, 65534), 0);
  ASSERT_EQ(mkdir(open.c_str(), 0700), 0);
  ASSERT_EQ(chmod(open.c_str(), 0777), 0);
  const std::string key = ArtifactCache::KeyFor(policy_, "p");
  CompiledLinuxArtifacts artifacts{"{plan}", "BPFBYTES", "{}", {}};
  for (const std::string& dir : {theirs + "/cache", owned, open, owned + "/below"}) {
    ArtifactCache cache(dir);
    EXPECT_FALSE(cache.Store(key, artifacts).ok()) << dir;
    EXPECT_NE(access((dir + "/" + key + ".entry").c_str(), F_OK), 0) << dir << ": written";
    EXPECT_NE(access((owned + "/below").c_str(), F_OK), 0) << "a directory made in " << owned;
  }
  // An entry that is there already (put before the directory above changed
  // hands, say) is not read either.
  ASSERT_EQ(chown(theirs.c_str(), 0, 0), 0);
  ASSERT_TRUE(ArtifactCache(theirs + "/cache").Store(key, artifacts).ok());
  ASSERT_TRUE(ArtifactCache(theirs + "/cache").Lookup(key).has_value());
  ASSERT_EQ(chown(theirs.c_str(), 65534, 65534), 0);
  EXPECT_FALSE(ArtifactCache(theirs + "/cache").Lookup(key).has_value());
}

TEST_F(CacheTest, TamperedOrWorldWritableEntriesAreIgnored) {
  ArtifactCache cache(dir_ + "/cache");
  std::string key = ArtifactCache::KeyFor(policy_, "p");
  CompiledLinuxArtifacts artifacts{"{plan}", "BPFBYTES", "{}", {}};
  ASSERT_TRUE(cache.Store(key, artifacts).ok());
  std::string entry = dir_ + "/cache/" + key + ".entry";
  chmod(entry.c_str(), 0666);
  EXPECT_FALSE(cache.Lookup(key).has_value()) << "writable by others";
  chmod(entry.c_str(), 0600);
  ASSERT_TRUE(cache.Lookup(key).has_value());
  {
    std::fstream f(entry, std::ios::in | std::ios::out);
    f.seekp(-3, std::ios::end);
    f << "XXX";
  }
  EXPECT_FALSE(cache.Lookup(key).has_value()) << "hash mismatch";
}

}  // namespace
}  // namespace cocoon::enforcer
