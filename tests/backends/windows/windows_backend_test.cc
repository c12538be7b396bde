// The Windows back end: every SDDL string must parse, deny ACEs come before
// allow ACEs, read-only means deny write + deny delete, writable roots are
// granted to the sandbox SID only (never Everyone), and the job never allows
// breakaway.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>
#include <set>

#include "compiler/backends/artifact.h"
#include "compiler/backends/windows/sddl.h"
#include "compiler/backends/windows/windows_applier.h"
#include "compiler/backends/windows/windows_plan.h"
#include "tests/backends/driver/test_policy.h"

namespace cocoon {
namespace {

using backends::windows::PathRole;

// ------------------------------------------------------------ SDDL parser
struct ParsedAce {
  std::string type, flags, rights, sid;
};
struct ParsedSddl {
  std::vector<ParsedAce> dacl, sacl;
};

const std::set<std::string> kRightCodes = {"FA", "FR", "FW", "FX", "SD", "DT", "WD", "WO", "RC",
                                           "GA", "GR", "GW", "GX", "NR", "NW", "NX"};
const std::set<std::string> kFlagCodes = {"OI", "CI", "NP", "IO", "ID"};

// Parses "D:(...)(...)S:(...)"; returns an error message or "".
std::string ParseSddl(const std::string& text, ParsedSddl& out) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (pos + 2 > text.size() || text[pos + 1] != ':' || (text[pos] != 'D' && text[pos] != 'S')) {
      return "expected D: or S: at " + std::to_string(pos);
    }
    auto& list = text[pos] == 'D' ? out.dacl : out.sacl;
    pos += 2;
    while (pos < text.size() && text[pos] == '(') {
      size_t end = text.find(')', pos);
      if (end == std::string::npos) return "unterminated ACE";
      std::vector<std::string> fields;
      std::string body = text.substr(pos + 1, end - pos - 1), field;
      for (char c : body) {
        if (c == ';') {
          fields.push_back(field);
          field.clear();
        } else {
          field += c;
        }
      }
      fields.push_back(field);
      if (fields.size() != 6) return "ACE needs 6 fields: " + body;
      if (fields[0] != "A" && fields[0] != "D" && fields[0] != "ML") return "bad ACE type " + fields[0];
      for (size_t i = 0; i < fields[1].size(); i += 2) {
        if (!kFlagCodes.count(fields[1].substr(i, 2))) return "bad ACE flag in " + fields[1];
      }
      if (fields[2].empty() || fields[2].size() % 2) return "bad rights " + fields[2];
      for (size_t i = 0; i < fields[2].size(); i += 2) {
        if (!kRightCodes.count(fields[2].substr(i, 2))) return "bad right in " + fields[2];
      }
      if (!fields[3].empty() || !fields[4].empty()) return "object GUIDs are not used";
      if (!backends::windows::IsValidSid(fields[5])) return "bad SID " + fields[5];
      list.push_back({fields[0], fields[1], fields[2], fields[5]});
      pos = end + 1;
    }
  }
  return "";
}

backends::windows::WindowsPlan CompilePlan(const ir::Policy& policy, std::vector<std::string>* warnings = nullptr) {
  auto artifacts = backends::CompileWindows(policy);
  EXPECT_TRUE(artifacts.ok()) << artifacts.status().ToString();
  EXPECT_EQ((*artifacts)[0].path, "windows.json");
  if (warnings) *warnings = (*artifacts)[0].warnings;
  auto plan = backends::windows::ParseWindowsPlan((*artifacts)[0].bytes);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return *plan;
}

TEST(SddlParser, AcceptsReferenceFormsAndRejectsJunk) {
  ParsedSddl parsed;
  EXPECT_EQ(ParseSddl("D:(D;OICI;FA;;;S-1-5-21-1-2-3)(A;OICI;FRFX;;;S-1-15-3-1)S:(ML;OICI;NW;;;LW)", parsed), "");
  EXPECT_EQ(parsed.dacl.size(), 2u);
  EXPECT_EQ(parsed.sacl.size(), 1u);
  ParsedSddl junk;
  EXPECT_NE(ParseSddl("D:(A;OICI;FA;;;S-1-x)", junk), "");
  EXPECT_NE(ParseSddl("D:(A;OICI;ZZ;;;WD)", junk), "");
  EXPECT_NE(ParseSddl("D:(A;OICI;FA;;WD)", junk), "");
  EXPECT_NE(ParseSddl("D:(A;OICI;FA;;;WD", junk), "");
}

TEST(WindowsBackend, EverySddlParsesWithDenyBeforeAllow) {
  auto plan = CompilePlan(testing::StrictPolicy());
  ASSERT_FALSE(plan.paths.empty());
  for (const auto& path : plan.paths) {
    ParsedSddl parsed;
    ASSERT_EQ(ParseSddl(path.sddl, parsed), "") << path.sddl;
    bool seen_allow = false;
    for (const auto& ace : parsed.dacl) {
      if (ace.type == "A") seen_allow = true;
      EXPECT_FALSE(ace.type == "D" && seen_allow) << "deny after allow in " << path.sddl;
      EXPECT_EQ(ace.sid, plan.sandbox_sid) << "ACE not bound to the sandbox SID: " << path.sddl;
      EXPECT_EQ(ace.flags, "OICI");
    }
  }
}

TEST(WindowsBackend, ReadOnlyIsDenyWriteAndDenyDelete) {
  auto plan = CompilePlan(testing::StrictPolicy());
  int readonly = 0;
  for (const auto& path : plan.paths) {
    if (path.role != PathRole::kReadOnly) continue;
    ++readonly;
    ParsedSddl parsed;
    ASSERT_EQ(ParseSddl(path.sddl, parsed), "");
    std::set<std::string> denied;
    for (const auto& ace : parsed.dacl) {
      if (ace.type == "D") denied.insert(ace.rights);
      if (ace.type == "A") {
        EXPECT_EQ(ace.rights.find("FW"), std::string::npos) << "read-only grants write";
      }
    }
    EXPECT_TRUE(denied.count("FW")) << path.sddl;
    EXPECT_TRUE(denied.count("SDDT")) << path.sddl;
  }
  EXPECT_EQ(readonly, 5);
}

TEST(WindowsBackend, WorkDirIsBoundToTheSandboxSidNeverEveryone) {
  auto plan = CompilePlan(testing::StrictPolicy());
  const auto& work = plan.paths[0];
  EXPECT_EQ(work.role, PathRole::kWork);
  EXPECT_EQ(work.location, "%COCOON_WORK_DIR%");
  ParsedSddl parsed;
  ASSERT_EQ(ParseSddl(work.sddl, parsed), "");
  for (const auto& ace : parsed.dacl) {
    EXPECT_NE(ace.sid, "WD");
    EXPECT_NE(ace.sid, "S-1-1-0");
    EXPECT_EQ(ace.sid, plan.sandbox_sid);
    // The sandbox must never be able to rewrite the ACL it is confined by.
    if (ace.type == "A") {
      EXPECT_EQ(ace.rights.find("WD"), std::string::npos);
    }
  }
  ASSERT_EQ(parsed.sacl.size(), 1u);
  EXPECT_EQ(parsed.sacl[0].sid, "LW");
  EXPECT_EQ(plan.sandbox_sid.rfind("S-1-15-3-1024-", 0), 0u);
}

TEST(WindowsBackend, HiddenPathsGetNoReadUpLabel) {
  auto plan = CompilePlan(testing::StrictPolicy());
  int hidden = 0;
  for (const auto& path : plan.paths) {
    if (path.role != PathRole::kHidden) continue;
    ++hidden;
    EXPECT_EQ(path.label_ace, "(ML;OICI;NRNWNX;;;ME)");
    EXPECT_EQ(path.deny_aces.size(), 1u);
  }
  EXPECT_EQ(hidden, 2);
}

// Windows has no mounts: the ACL of a path hidden under an aliased bind
// (`readonly /opt/app as /app`, `hide /app/secrets`) goes on the host path.
TEST(WindowsBackend, HiddenPathsUnderAnAliasGetTheirAclOnTheHostPath) {
  ir::Policy policy = testing::StrictPolicy();
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kReadOnly, "/opt/app", "/app", 0, false});
  policy.filesystem.hidden = {"/app/secrets", "/etc/shadow", "/tmp/x"};
  auto plan = CompilePlan(policy);
  std::map<std::string, std::string> hidden;  // policy path -> where the ACL goes
  for (const auto& path : plan.paths) {
    if (path.role == PathRole::kHidden) hidden[path.policy_path] = path.location;
  }
  EXPECT_EQ(hidden["/app/secrets"], "/opt/app/secrets");
  EXPECT_EQ(hidden["/etc/shadow"], "/etc/shadow");
  EXPECT_EQ(hidden["/tmp/x"], "/tmp/x") << "a tmpfs has no host counterpart";
}

// The launcher builds the sandbox's environment block: windows.json carries
// the policy's environment for it (cocoon-windows-run applies it).
TEST(WindowsBackend, ThePlanCarriesThePolicysEnvironment) {
  backends::windows::WindowsPlan plan = CompilePlan(testing::StrictPolicy());
  EXPECT_TRUE(plan.environment.clear);
  EXPECT_EQ(plan.environment.set, testing::StrictPolicy().environment.set);
  EXPECT_EQ(plan.environment.pass, (std::vector<std::string>{"LANG", "TERM"}));
}

TEST(WindowsBackend, JobLimitsMatchThePolicyAndNeverBreakaway) {
  namespace w = backends::windows;
  // StrictPolicy's filter refuses every fork/clone call (its default), which
  // is a limit of 1 here (syscall_fidelity.h); allow clone to see the policy's.
  ir::Policy policy = testing::StrictPolicy();
  policy.syscalls.rules.push_back(testing::Rule("clone", ir::ActionKind::kAllow));
  auto plan = CompilePlan(policy);
  const uint32_t flags = plan.job.limit_flags;
  EXPECT_TRUE(flags & w::kLimitKillOnJobClose);
  EXPECT_TRUE(flags & w::kLimitDieOnUnhandledException);
  EXPECT_TRUE(flags & w::kLimitActiveProcess);
  EXPECT_TRUE(flags & w::kLimitProcessMemory);
  EXPECT_TRUE(flags & w::kLimitJobMemory);
  EXPECT_TRUE(flags & w::kLimitJobTime);
  EXPECT_TRUE(flags & w::kLimitPriorityClass);
  EXPECT_FALSE(flags & (w::kLimitBreakawayOk | w::kLimitSilentBreakawayOk));
  EXPECT_EQ(plan.job.active_process_limit, 32u);
  EXPECT_EQ(plan.job.job_memory_limit, 128u << 20);
  EXPECT_EQ(plan.job.per_job_user_time_100ns, 5000u * 10000u);
  EXPECT_EQ(plan.job.ui_restrictions, 0xFFu);
  EXPECT_EQ(plan.job.ui_restriction_names.size(), 8u);
  EXPECT_EQ(plan.token.integrity_sid, "S-1-16-4096");
  EXPECT_EQ(plan.token.restricted_token_flags, 0x1u | 0x4u | 0x8u);
  EXPECT_EQ(plan.token.restricting_sids, std::vector<std::string>{plan.sandbox_sid});
  EXPECT_EQ(plan.wall_time_ms, 5000u);
}

TEST(WindowsBackend, RequiredLimitsWithoutAMechanismMakeTheApplierRefuse) {
  std::vector<std::string> warnings;
  auto plan = CompilePlan(testing::StrictPolicy(), &warnings);
  EXPECT_EQ(plan.unenforced_required_limits, (std::vector<std::string>{"open_files", "file_size"}));
  size_t required = 0;
  for (const std::string& w : warnings) required += w.find("required limit '") != std::string::npos;
  EXPECT_EQ(required, 2u);
  auto artifacts = backends::CompileWindows(testing::StrictPolicy());
  auto result = backends::windows::RunInWindowsSandbox({(*artifacts)[0].bytes, "cmd", "C:\\w", "C:\\t", {}, {}});
  EXPECT_EQ(result.status().code(), ErrorCode::kFailedPrecondition);
}

// Windows has no device nodes: each device the policy turns on is reported
// at its line, never dropped silently, and none when all are off.
TEST(WindowsBackend, DevicesItCannotGrantAreWarnedAboutAtThePolicyLine) {
  ir::Policy policy = testing::StrictPolicy();
  policy.filesystem.devices = {ir::DeviceAccess::kAllowed, ir::DeviceAccess::kAllowed, ir::DeviceAccess::kAllowed};
  policy.provenance["filesystem.devices.gpu"] = {"strict", "dev.cocoon", 4};
  policy.provenance["filesystem.devices.tty"] = {"strict", "dev.cocoon", 5};
  policy.provenance["filesystem.devices.kvm"] = {"strict", "dev.cocoon", 6};
  std::vector<std::string> warnings;
  CompilePlan(policy, &warnings);
  std::string all;
  for (const std::string& w : warnings) all += w + "\n";
  EXPECT_NE(all.find("windows: 'devices { gpu on }' (at dev.cocoon:4) is not granted"), std::string::npos) << all;
  EXPECT_NE(all.find("windows: 'devices { tty on }' (at dev.cocoon:5) has no Windows equivalent"), std::string::npos)
      << all;
  EXPECT_NE(all.find("windows: 'devices { kvm on }' (at dev.cocoon:6) has no Windows equivalent"), std::string::npos)
      << all;
  std::vector<std::string> quiet;
  CompilePlan(testing::StrictPolicy(), &quiet);
  for (const std::string& w : quiet) EXPECT_EQ(w.find("devices {"), std::string::npos) << w;
}

// The token is write-restricted at Low integrity: its sandbox SID is
// checked for writes only, and Low may read Medium files, so reads are not
// confined to the read-only paths under `root host` either. That is said at
// the root's line (it used to be said for `root rootfs` only), with the
// hide paths' no-read-up label as the one exception.
TEST(WindowsBackend, RootHostSaysReadsAreNotConfined) {
  ir::Policy policy = testing::StrictPolicy();
  policy.provenance["filesystem.root"] = {"strict", "win.cocoon", 3};
  std::vector<std::string> warnings;
  CompilePlan(policy, &warnings);
  std::string all;
  for (const std::string& w : warnings) all += w + "\n";
  EXPECT_NE(all.find("windows: 'root host' (at win.cocoon:3) does not confine reads on Windows: the sandbox can "
                     "read every file the user can (e.g. %USERPROFILE%\\.ssh), not only the read-only paths"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("only the 'hide' paths (a Medium no-read-up label) are unreadable"), std::string::npos) << all;
  policy.filesystem.root = ir::RootKind::kRootfs;
  policy.filesystem.rootfs = "/srv/busybox";
  CompilePlan(policy, &warnings);
  all.clear();
  for (const std::string& w : warnings) all += w + "\n";
  EXPECT_NE(all.find("windows: 'root rootfs /srv/busybox' (at win.cocoon:3) has no Windows equivalent; the host "
                     "file system stays visible, and the sandbox can read every file the user can"),
            std::string::npos)
      << all;
}

// Every tmpfs is the one %COCOON_TEMP_DIR% and the work dir is written in
// place: Linux's staging, quota and separate tmpfs sizes are gone. The
// quota travels in supervisor.work_quota_bytes (it used to be lost: a
// policy with a quota and no disk limit had disk_bytes 0 and nothing else),
// and each line says what the target does not do.
TEST(WindowsBackend, WorkQuotaAndTmpfsSizesItCannotEnforceAreWarnedAboutAtTheirLines) {
  ir::Policy policy = testing::StrictPolicy();
  policy.filesystem.work.quota_bytes = 16 << 20;
  policy.limits.disk_bytes = {};
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kTmpfs, "", "/scratch", 32 << 20, false});
  policy.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kTmpfs, "", "/work/cache", 4 << 20, false});
  std::sort(policy.filesystem.mounts.begin(), policy.filesystem.mounts.end(),
            [](const ir::Mount& a, const ir::Mount& b) { return a.target < b.target; });
  policy.provenance["filesystem.work"] = {"strict", "w.cocoon", 5};
  policy.provenance["filesystem.mount:/tmp"] = {"strict", "w.cocoon", 6};
  std::vector<std::string> warnings;
  auto plan = CompilePlan(policy, &warnings);
  EXPECT_EQ(plan.work_quota_bytes, 16u << 20);
  EXPECT_EQ(plan.disk_bytes, 0u);
  size_t temp_paths = 0;
  for (const auto& path : plan.paths) temp_paths += path.location == backends::windows::kTempDirPlaceholder;
  EXPECT_EQ(temp_paths, 3u);
  std::string all;
  for (const std::string& w : warnings) all += w + "\n";
  EXPECT_NE(all.find("windows: 'work /work quota 16MiB' (at w.cocoon:5): the sandbox writes %COCOON_WORK_DIR% "
                     "directly, not a staged copy, with no size cap"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("windows: 'tmpfs /tmp size 64MiB' (at w.cocoon:6) is the run's %COCOON_TEMP_DIR%, a "
                     "directory with no size cap, and the same directory as /scratch, /work/cache"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find("windows: 'tmpfs /scratch size 32MiB' is the run's %COCOON_TEMP_DIR%"), std::string::npos)
      << all;
}

TEST(WindowsBackend, HostilePathsStayOutOfSddlAndRoundTrip) {
  ir::Policy policy = testing::HostilePolicy();
  auto plan = CompilePlan(policy);
  for (const auto& path : plan.paths) {
    ParsedSddl parsed;
    EXPECT_EQ(ParseSddl(path.sddl, parsed), "") << path.sddl;
  }
  bool found = false;
  for (const auto& path : plan.paths) found |= path.policy_path == "/secret\"(D;;FA;;;WD)";
  EXPECT_TRUE(found);
}

TEST(WindowsPlan, ParserRefusesBreakawayAndEveryone) {
  auto artifacts = backends::CompileWindows(testing::StrictPolicy());
  auto doc = nlohmann::json::parse((*artifacts)[0].bytes);
  auto breakaway = doc;
  breakaway["job"]["limit_flags_value"] = doc["job"]["limit_flags_value"].get<uint32_t>() | 0x800;
  EXPECT_FALSE(backends::windows::ParseWindowsPlan(breakaway.dump()).ok());
  auto no_kill = doc;
  no_kill["job"]["limit_flags_value"] = doc["job"]["limit_flags_value"].get<uint32_t>() & ~0x2000u;
  EXPECT_FALSE(backends::windows::ParseWindowsPlan(no_kill.dump()).ok());
  auto everyone = doc;
  everyone["paths"][0]["allow_aces"].push_back("(A;OICI;FA;;;WD)");
  EXPECT_FALSE(backends::windows::ParseWindowsPlan(everyone.dump()).ok());
  EXPECT_FALSE(backends::windows::ParseWindowsPlan("[1,2").ok());
}

TEST(WindowsApplier, ResolvesPlaceholdersAndMappings) {
  ir::Policy policy = testing::StrictPolicy();
  policy.limits.open_files.enforcement = ir::Enforcement::kBestEffort;
  policy.limits.file_size_bytes.enforcement = ir::Enforcement::kBestEffort;
  auto plan = CompilePlan(policy);
  backends::windows::WindowsLaunchRequest request{"", "cmd", "C:\\runs\\1", "C:\\runs\\1-tmp", {{"/usr", "C:\\usr"}}, {}};
  auto resolved = backends::windows::ResolvePlanPaths(plan, request);
  ASSERT_TRUE(resolved.ok()) << resolved.status().ToString();
  ASSERT_EQ(resolved->size(), 3u);  // work, /tmp, mapped /usr
  EXPECT_EQ((*resolved)[0].windows_path, "C:\\runs\\1");
#ifndef _WIN32
  auto artifacts = backends::CompileWindows(policy);
  request.plan_json = (*artifacts)[0].bytes;
  // network off: the WFP step is not implemented, so the applier refuses.
  EXPECT_EQ(backends::windows::RunInWindowsSandbox(request).status().code(), ErrorCode::kUnimplemented);
#endif
}

}  // namespace
}  // namespace cocoon
