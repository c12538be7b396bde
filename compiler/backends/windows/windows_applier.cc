// Windows applier. Order (Chromium sandbox/win/src/broker_services.cc):
// save and rewrite ACLs, create the job with its limits, create the restricted
// Low-integrity token, create the process suspended, assign it to the job,
// resume, wait with the wall-time limit, terminate the job, restore ACLs.
#include "compiler/backends/windows/windows_applier.h"

#ifdef _WIN32
#include <windows.h>
#include <aclapi.h>
#include <sddl.h>
#endif

namespace cocoon::backends::windows {
namespace {

Status CheckRunnable(const WindowsPlan& plan) {
  if (!plan.unenforced_required_limits.empty()) {
    std::string names;
    for (const auto& n : plan.unenforced_required_limits) names += (names.empty() ? "" : ", ") + n;
    return FailedPreconditionError("windows: required limits cannot be enforced on Windows: " + names);
  }
  if (plan.network_mode != "on") {
    return UnimplementedError("not implemented: Windows Filtering Platform rules for network '" + plan.network_mode +
                              "'; refusing to run with the network open");
  }
  return Status::Ok();
}

}  // namespace

Result<std::vector<ResolvedPathAcl>> ResolvePlanPaths(const WindowsPlan& plan, const WindowsLaunchRequest& request) {
  std::vector<ResolvedPathAcl> out;
  for (const PathAcl& acl : plan.paths) {
    std::string where;
    if (acl.location == kWorkDirPlaceholder) {
      where = request.work_dir;
    } else if (acl.location == kTempDirPlaceholder) {
      where = request.temp_dir;
    } else if (auto it = request.path_map.find(acl.policy_path); it != request.path_map.end()) {
      where = it->second;
    } else if (acl.role == PathRole::kReadOnly || acl.role == PathRole::kHidden) {
      continue;  // no such path on Windows: nothing to protect
    } else {
      return InvalidArgumentError("windows: writable path " + acl.policy_path + " has no Windows mapping");
    }
    if (where.empty()) return InvalidArgumentError("windows: no directory given for " + acl.location);
    out.push_back({where, &acl});
  }
  return out;
}

#ifdef _WIN32
namespace {

std::wstring Wide(const std::string& utf8) {
  if (utf8.empty()) return {};
  int n = MultiByteToWideChar(CP_UTF8, 0, utf8.data(), static_cast<int>(utf8.size()), nullptr, 0);
  std::wstring out(n, L'\0');
  MultiByteToWideChar(CP_UTF8, 0, utf8.data(), static_cast<int>(utf8.size()), out.data(), n);
  return out;
}

Status Win32Error(const std::string& what) {
  return PermissionDeniedError(what + " failed: Win32 error " + std::to_string(GetLastError()));
}

// New DACL = our deny ACEs, the existing ACEs, our allow ACEs.
Status MergeAcl(const std::wstring& path, const PathAcl& acl) {
  PACL old_dacl = nullptr;
  PSECURITY_DESCRIPTOR old_sd = nullptr;
  if (GetNamedSecurityInfoW(path.c_str(), SE_FILE_OBJECT, DACL_SECURITY_INFORMATION, nullptr, nullptr, &old_dacl,
                            nullptr, &old_sd) != ERROR_SUCCESS) {
    return Win32Error("GetNamedSecurityInfoW");
  }
  PSECURITY_DESCRIPTOR ours = nullptr;
  std::wstring sddl = Wide(acl.sddl);
  if (!ConvertStringSecurityDescriptorToSecurityDescriptorW(sddl.c_str(), SDDL_REVISION_1, &ours, nullptr)) {
    LocalFree(old_sd);
    return Win32Error("ConvertStringSecurityDescriptorToSecurityDescriptorW");
  }
  BOOL present = FALSE, defaulted = FALSE;
  PACL our_dacl = nullptr;
  GetSecurityDescriptorDacl(ours, &present, &our_dacl, &defaulted);
  const DWORD size = (old_dacl ? old_dacl->AclSize : 0) + (our_dacl ? our_dacl->AclSize : 0) + sizeof(ACL);
  std::vector<BYTE> buffer(size);
  PACL merged = reinterpret_cast<PACL>(buffer.data());
  InitializeAcl(merged, size, ACL_REVISION);
  auto copy = [&](PACL from, bool want_deny) {
    for (DWORD i = 0; from && i < from->AceCount; ++i) {
      ACE_HEADER* ace = nullptr;
      if (!GetAce(from, i, reinterpret_cast<void**>(&ace))) continue;
      const bool is_deny = ace->AceType == ACCESS_DENIED_ACE_TYPE;
      if (is_deny == want_deny) AddAce(merged, ACL_REVISION, MAXDWORD, ace, ace->AceSize);
    }
  };
  copy(our_dacl, true);
  copy(old_dacl, true);
  copy(old_dacl, false);
  copy(our_dacl, false);
  DWORD rc = SetNamedSecurityInfoW(const_cast<wchar_t*>(path.c_str()), SE_FILE_OBJECT, DACL_SECURITY_INFORMATION,
                                   nullptr, nullptr, merged, nullptr);
  LocalFree(ours);
  LocalFree(old_sd);
  return rc == ERROR_SUCCESS ? Status::Ok() : Win32Error("SetNamedSecurityInfoW");
}

Result<HANDLE> CreateSandboxJob(const JobSettings& settings) {
  HANDLE job = CreateJobObjectW(nullptr, nullptr);
  if (!job) return Win32Error("CreateJobObjectW");
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits = {};
  limits.BasicLimitInformation.LimitFlags = settings.limit_flags;
  limits.BasicLimitInformation.ActiveProcessLimit = settings.active_process_limit;
  limits.BasicLimitInformation.PriorityClass = settings.priority_class;
  limits.BasicLimitInformation.PerJobUserTimeLimit.QuadPart = static_cast<LONGLONG>(settings.per_job_user_time_100ns);
  limits.ProcessMemoryLimit = static_cast<SIZE_T>(settings.process_memory_limit);
  limits.JobMemoryLimit = static_cast<SIZE_T>(settings.job_memory_limit);
  JOBOBJECT_BASIC_UI_RESTRICTIONS ui = {settings.ui_restrictions};
  if (!SetInformationJobObject(job, JobObjectExtendedLimitInformation, &limits, sizeof(limits)) ||
      !SetInformationJobObject(job, JobObjectBasicUIRestrictions, &ui, sizeof(ui))) {
    CloseHandle(job);
    return Win32Error("SetInformationJobObject");
  }
  return job;
}

Result<HANDLE> CreateSandboxToken(const TokenSettings& settings) {
  HANDLE self = nullptr;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_ALL_ACCESS, &self)) return Win32Error("OpenProcessToken");
  std::vector<PSID> sids;
  std::vector<SID_AND_ATTRIBUTES> restrict;
  for (const auto& text : settings.restricting_sids) {
    PSID sid = nullptr;
    if (!ConvertStringSidToSidW(Wide(text).c_str(), &sid)) return Win32Error("ConvertStringSidToSidW");
    sids.push_back(sid);
    restrict.push_back({sid, 0});
  }
  HANDLE token = nullptr;
  BOOL ok = CreateRestrictedToken(self, settings.restricted_token_flags, 0, nullptr, 0, nullptr,
                                  static_cast<DWORD>(restrict.size()), restrict.data(), &token);
  for (PSID sid : sids) LocalFree(sid);
  CloseHandle(self);
  if (!ok) return Win32Error("CreateRestrictedToken");
  PSID integrity = nullptr;
  ConvertStringSidToSidW(Wide(settings.integrity_sid).c_str(), &integrity);
  TOKEN_MANDATORY_LABEL label = {{integrity, SE_GROUP_INTEGRITY}};
  ok = SetTokenInformation(token, TokenIntegrityLevel, &label, sizeof(label) + GetLengthSid(integrity));
  LocalFree(integrity);
  if (!ok) {
    CloseHandle(token);
    return Win32Error("SetTokenInformation(TokenIntegrityLevel)");
  }
  return token;
}

}  // namespace

Result<int> RunInWindowsSandbox(const WindowsLaunchRequest& request) {
  COCOON_ASSIGN_OR_RETURN(WindowsPlan plan, ParseWindowsPlan(request.plan_json));
  COCOON_RETURN_IF_ERROR(CheckRunnable(plan));
  COCOON_ASSIGN_OR_RETURN(auto paths, ResolvePlanPaths(plan, request));
  for (const auto& path : paths) COCOON_RETURN_IF_ERROR(MergeAcl(Wide(path.windows_path), *path.acl));
  COCOON_ASSIGN_OR_RETURN(HANDLE job, CreateSandboxJob(plan.job));
  COCOON_ASSIGN_OR_RETURN(HANDLE token, CreateSandboxToken(plan.token));
  STARTUPINFOW startup = {sizeof(startup)};
  PROCESS_INFORMATION process = {};
  std::wstring command = Wide(request.command_line);
  std::wstring cwd = Wide(request.work_dir);
  if (!CreateProcessAsUserW(token, nullptr, command.data(), nullptr, nullptr, FALSE,
                            CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT, nullptr, cwd.c_str(), &startup, &process)) {
    CloseHandle(token);
    CloseHandle(job);
    return Win32Error("CreateProcessAsUserW");
  }
  if (!AssignProcessToJobObject(job, process.hProcess)) {
    TerminateProcess(process.hProcess, 1);
    return Win32Error("AssignProcessToJobObject");
  }
  ResumeThread(process.hThread);
  DWORD wait = WaitForSingleObject(process.hProcess, plan.wall_time_ms ? static_cast<DWORD>(plan.wall_time_ms) : INFINITE);
  if (wait == WAIT_TIMEOUT) TerminateJobObject(job, 124);
  DWORD exit_code = 1;
  GetExitCodeProcess(process.hProcess, &exit_code);
  CloseHandle(process.hThread);
  CloseHandle(process.hProcess);
  CloseHandle(token);
  CloseHandle(job);  // KILL_ON_JOB_CLOSE: any straggler dies here
  return static_cast<int>(exit_code);
}

#else

Result<int> RunInWindowsSandbox(const WindowsLaunchRequest& request) {
  COCOON_ASSIGN_OR_RETURN(WindowsPlan plan, ParseWindowsPlan(request.plan_json));
  COCOON_RETURN_IF_ERROR(CheckRunnable(plan));
  return UnimplementedError("not implemented: the Windows applier only runs on Windows");
}

#endif

}  // namespace cocoon::backends::windows
