// windows.json: everything a Windows applier needs to confine one command,
// decided at compile time. The back end produces it (windows_backend.cc), the
// applier (windows_applier.cc) parses it with ParseWindowsPlan, which refuses
// anything that would fail open (breakaway flags, kill-on-close missing,
// allow ACEs before deny ACEs, invalid SIDs).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/common/status.h"
#include "compiler/ir/policy_ir.h"

namespace cocoon::backends::windows {

// winnt.h JOB_OBJECT_LIMIT_* (JOBOBJECT_BASIC_LIMIT_INFORMATION.LimitFlags).
inline constexpr uint32_t kLimitJobTime = 0x4;
inline constexpr uint32_t kLimitActiveProcess = 0x8;
inline constexpr uint32_t kLimitPriorityClass = 0x20;
inline constexpr uint32_t kLimitProcessMemory = 0x100;
inline constexpr uint32_t kLimitJobMemory = 0x200;
inline constexpr uint32_t kLimitDieOnUnhandledException = 0x400;
inline constexpr uint32_t kLimitBreakawayOk = 0x800;        // never emitted
inline constexpr uint32_t kLimitSilentBreakawayOk = 0x1000;  // never emitted
inline constexpr uint32_t kLimitKillOnJobClose = 0x2000;
// winnt.h JOB_OBJECT_UILIMIT_*: Chromium's JOB_LOCKDOWN level sets all eight.
inline constexpr uint32_t kUiAll = 0xFF;
inline constexpr uint32_t kBelowNormalPriorityClass = 0x4000;
// CreateRestrictedToken flags.
inline constexpr uint32_t kTokenDisableMaxPrivilege = 0x1;
inline constexpr uint32_t kTokenLuaToken = 0x4;
inline constexpr uint32_t kTokenWriteRestricted = 0x8;

inline constexpr std::string_view kLowIntegritySid = "S-1-16-4096";
inline constexpr std::string_view kWorkDirPlaceholder = "%COCOON_WORK_DIR%";
inline constexpr std::string_view kTempDirPlaceholder = "%COCOON_TEMP_DIR%";

struct JobSettings {
  uint32_t limit_flags = 0;
  std::vector<std::string> limit_flag_names;
  uint32_t active_process_limit = 0;
  uint64_t process_memory_limit = 0;
  uint64_t job_memory_limit = 0;
  uint64_t per_job_user_time_100ns = 0;
  uint32_t priority_class = 0;
  uint32_t ui_restrictions = 0;
  std::vector<std::string> ui_restriction_names;
  uint32_t cpu_rate_percent_of_one_cpu = 0;  // 0: no CPU rate control
};

struct TokenSettings {
  uint32_t restricted_token_flags = 0;
  std::vector<std::string> restricted_token_flag_names;
  std::vector<std::string> restricting_sids;
  std::string integrity_level;  // "low"
  std::string integrity_sid;    // S-1-16-4096
};

enum class PathRole { kWork, kTemp, kWritable, kReadOnly, kHidden };
std::string_view PathRoleName(PathRole role);

struct PathAcl {
  std::string policy_path;  // the path as the policy wrote it (POSIX)
  std::string location;     // placeholder for the launcher's dir, or the policy path to be mapped
  PathRole role = PathRole::kReadOnly;
  bool optional = false;
  std::vector<std::string> deny_aces;   // merged in FRONT of the existing DACL
  std::vector<std::string> allow_aces;  // merged after the existing deny ACEs
  std::string label_ace;                // SACL mandatory label, "" to keep the current one
  std::string sddl;                     // "D:<deny><allow>S:<label>" for review and tests
};

struct Endpoint {
  std::string host;
  uint16_t port = 0;
};

struct WindowsPlan {
  std::string profile;
  std::string sandbox_sid;
  JobSettings job;
  TokenSettings token;
  std::vector<PathAcl> paths;
  std::string network_mode;  // "off" | "on" | "allow_list"
  std::vector<Endpoint> network_allow;
  uint64_t wall_time_ms = 0;
  uint64_t output_bytes = 0;
  uint64_t disk_bytes = 0;
  // The work dir's quota (0: none), for a launcher: the applier writes the
  // work dir in place and caps nothing.
  uint64_t work_quota_bytes = 0;
  // Limits the policy marks required that no Windows mechanism enforces: the
  // applier refuses to run while this is not empty (fail closed).
  std::vector<std::string> unenforced_required_limits;
  std::vector<std::string> unenforced_best_effort_limits;
  // The policy's environment section (environment_plan.h): the launcher
  // builds the sandbox's environment block from it and its own.
  ir::Environment environment;
};

std::string WindowsPlanToJson(const WindowsPlan& plan);
Result<WindowsPlan> ParseWindowsPlan(std::string_view json);

}  // namespace cocoon::backends::windows
