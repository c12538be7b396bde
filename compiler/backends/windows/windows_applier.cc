// Windows applier. Order (Chromium sandbox/win/src/broker_services.cc):
// save and rewrite ACLs, create the job with its limits, create the restricted
// Low-integrity token, create the process suspended, assign it to the job,
// resume, wait with the wall-time limit, terminate the job, restore ACLs.
// Not compiled on Linux except by the MinGW cross-compile test
// (tests/backends/windows), which builds it against the real Win32 headers.
#include "compiler/backends/windows/windows_applier.h"

#ifdef _WIN32
#include <windows.h>
#include <aclapi.h>
#include <sddl.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>
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

// Owns a kernel HANDLE for the life of one run.
class UniqueHandle {
 public:
  explicit UniqueHandle(HANDLE handle = nullptr) : handle_(handle) {}
  UniqueHandle(UniqueHandle&& other) noexcept : handle_(std::exchange(other.handle_, nullptr)) {}
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  ~UniqueHandle() {
    if (handle_ != nullptr && handle_ != INVALID_HANDLE_VALUE) CloseHandle(handle_);
  }
  HANDLE get() const { return handle_; }

 private:
  HANDLE handle_;
};

// Owns memory the security APIs allocate with LocalAlloc.
struct LocalFreeDeleter {
  void operator()(void* memory) const { LocalFree(memory); }
};
using LocalMemory = std::unique_ptr<void, LocalFreeDeleter>;

std::wstring Wide(const std::string& utf8) {
  if (utf8.empty()) return {};
  int n = MultiByteToWideChar(CP_UTF8, 0, utf8.data(), static_cast<int>(utf8.size()), nullptr, 0);
  std::wstring out(static_cast<size_t>(n), L'\0');
  MultiByteToWideChar(CP_UTF8, 0, utf8.data(), static_cast<int>(utf8.size()), out.data(), n);
  return out;
}

Status Win32Error(const std::string& what, DWORD code = GetLastError()) {
  return PermissionDeniedError(what + " failed: Win32 error " + std::to_string(code));
}

bool IsDenyAce(const ACE_HEADER* ace) {
  return ace->AceType == ACCESS_DENIED_ACE_TYPE || ace->AceType == ACCESS_DENIED_OBJECT_ACE_TYPE ||
         ace->AceType == ACCESS_DENIED_CALLBACK_ACE_TYPE || ace->AceType == ACCESS_DENIED_CALLBACK_OBJECT_ACE_TYPE;
}

// Appends the ACEs of `from` that are explicit (inherited ones are recomputed
// by SetNamedSecurityInfoW from the parent) and are deny or allow as asked.
bool CopyAces(PACL from, bool want_deny, PACL into) {
  for (DWORD i = 0; from != nullptr && i < from->AceCount; ++i) {
    ACE_HEADER* ace = nullptr;
    if (!GetAce(from, i, reinterpret_cast<void**>(&ace))) return false;
    if ((ace->AceFlags & INHERITED_ACE) != 0 || IsDenyAce(ace) != want_deny) continue;
    if (!AddAce(into, ACL_REVISION_DS, MAXDWORD, ace, ace->AceSize)) return false;
  }
  return true;
}

// Rewrites the DACL (and, when the plan says so, the mandatory label) of each
// path, and puts every original back when the run ends, on every path out of
// RunInWindowsSandbox: the host must not keep the sandbox's ACEs.
class AclTransaction {
 public:
  AclTransaction() = default;
  AclTransaction(const AclTransaction&) = delete;
  AclTransaction& operator=(const AclTransaction&) = delete;
  ~AclTransaction() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) Restore(*it);
  }

  Status Apply(const std::wstring& path, const PathAcl& acl) {
    const bool label = !acl.label_ace.empty();
    SECURITY_INFORMATION what = DACL_SECURITY_INFORMATION | (label ? LABEL_SECURITY_INFORMATION : 0);
    Saved saved{path, what, nullptr, nullptr, LocalMemory()};
    PSECURITY_DESCRIPTOR old_sd = nullptr;
    DWORD rc = GetNamedSecurityInfoW(path.c_str(), SE_FILE_OBJECT, what, nullptr, nullptr, &saved.dacl,
                                     label ? &saved.sacl : nullptr, &old_sd);
    if (rc != ERROR_SUCCESS) return Win32Error("GetNamedSecurityInfoW", rc);
    saved.descriptor.reset(old_sd);
    SECURITY_DESCRIPTOR_CONTROL control = 0;
    DWORD revision = 0;
    GetSecurityDescriptorControl(old_sd, &control, &revision);
    saved.what |= (control & SE_DACL_PROTECTED) ? PROTECTED_DACL_SECURITY_INFORMATION
                                                : UNPROTECTED_DACL_SECURITY_INFORMATION;

    PSECURITY_DESCRIPTOR ours_raw = nullptr;
    if (!ConvertStringSecurityDescriptorToSecurityDescriptorW(Wide(acl.sddl).c_str(), SDDL_REVISION_1, &ours_raw,
                                                              nullptr)) {
      return Win32Error("ConvertStringSecurityDescriptorToSecurityDescriptorW");
    }
    LocalMemory ours(ours_raw);
    BOOL present = FALSE, defaulted = FALSE;
    PACL our_dacl = nullptr;
    PACL our_sacl = nullptr;
    GetSecurityDescriptorDacl(ours_raw, &present, &our_dacl, &defaulted);
    if (label) GetSecurityDescriptorSacl(ours_raw, &present, &our_sacl, &defaulted);

    // Canonical order: our denies, the existing explicit denies, the existing
    // explicit allows, our allows (inherited ACEs follow, added by Windows).
    const DWORD size = (saved.dacl ? saved.dacl->AclSize : 0) + (our_dacl ? our_dacl->AclSize : 0) + sizeof(ACL);
    std::vector<BYTE> buffer(size);
    PACL merged = reinterpret_cast<PACL>(buffer.data());
    if (!InitializeAcl(merged, size, ACL_REVISION_DS) || !CopyAces(our_dacl, true, merged) ||
        !CopyAces(saved.dacl, true, merged) || !CopyAces(saved.dacl, false, merged) ||
        !CopyAces(our_dacl, false, merged)) {
      return Win32Error("building the merged DACL");
    }
    saved_.push_back(std::move(saved));  // from here on, the destructor restores this path
    rc = SetNamedSecurityInfoW(const_cast<wchar_t*>(path.c_str()), SE_FILE_OBJECT, what, nullptr, nullptr, merged,
                               our_sacl);
    return rc == ERROR_SUCCESS ? Status::Ok() : Win32Error("SetNamedSecurityInfoW", rc);
  }

 private:
  struct Saved {
    std::wstring path;
    SECURITY_INFORMATION what;
    PACL dacl;   // into descriptor
    PACL sacl;   // into descriptor (the label), when it was changed
    LocalMemory descriptor;
  };

  static void Restore(Saved& saved) {
    SetNamedSecurityInfoW(const_cast<wchar_t*>(saved.path.c_str()), SE_FILE_OBJECT, saved.what, nullptr, nullptr,
                          saved.dacl, saved.sacl);
  }

  std::vector<Saved> saved_;
};

Result<UniqueHandle> CreateSandboxJob(const JobSettings& settings) {
  UniqueHandle job(CreateJobObjectW(nullptr, nullptr));
  if (job.get() == nullptr) return Win32Error("CreateJobObjectW");
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits = {};
  limits.BasicLimitInformation.LimitFlags = settings.limit_flags;
  limits.BasicLimitInformation.ActiveProcessLimit = settings.active_process_limit;
  limits.BasicLimitInformation.PriorityClass = settings.priority_class;
  limits.BasicLimitInformation.PerJobUserTimeLimit.QuadPart = static_cast<LONGLONG>(settings.per_job_user_time_100ns);
  limits.ProcessMemoryLimit = static_cast<SIZE_T>(settings.process_memory_limit);
  limits.JobMemoryLimit = static_cast<SIZE_T>(settings.job_memory_limit);
  JOBOBJECT_BASIC_UI_RESTRICTIONS ui = {settings.ui_restrictions};
  if (!SetInformationJobObject(job.get(), JobObjectExtendedLimitInformation, &limits, sizeof(limits)) ||
      !SetInformationJobObject(job.get(), JobObjectBasicUIRestrictions, &ui, sizeof(ui))) {
    return Win32Error("SetInformationJobObject");
  }
  if (settings.cpu_rate_percent_of_one_cpu != 0) {
    // CpuRate is in 1/100 of a percent of the whole machine (all processors).
    SYSTEM_INFO system = {};
    GetSystemInfo(&system);
    DWORD processors = system.dwNumberOfProcessors == 0 ? 1 : system.dwNumberOfProcessors;
    JOBOBJECT_CPU_RATE_CONTROL_INFORMATION rate = {};
    rate.ControlFlags = JOB_OBJECT_CPU_RATE_CONTROL_ENABLE | JOB_OBJECT_CPU_RATE_CONTROL_HARD_CAP;
    rate.CpuRate = std::max<DWORD>(1, std::min<DWORD>(10000, settings.cpu_rate_percent_of_one_cpu * 100 / processors));
    if (!SetInformationJobObject(job.get(), JobObjectCpuRateControlInformation, &rate, sizeof(rate))) {
      return Win32Error("SetInformationJobObject(JobObjectCpuRateControlInformation)");
    }
  }
  return job;
}

Result<UniqueHandle> CreateSandboxToken(const TokenSettings& settings) {
  HANDLE self_raw = nullptr;
  if (!OpenProcessToken(GetCurrentProcess(), TOKEN_ALL_ACCESS, &self_raw)) return Win32Error("OpenProcessToken");
  UniqueHandle self(self_raw);
  std::vector<LocalMemory> sids;
  std::vector<SID_AND_ATTRIBUTES> restricting;
  for (const auto& text : settings.restricting_sids) {
    PSID sid = nullptr;
    if (!ConvertStringSidToSidW(Wide(text).c_str(), &sid)) return Win32Error("ConvertStringSidToSidW(" + text + ")");
    sids.emplace_back(sid);
    restricting.push_back({sid, 0});
  }
  HANDLE token_raw = nullptr;
  if (!CreateRestrictedToken(self.get(), settings.restricted_token_flags, 0, nullptr, 0, nullptr,
                             static_cast<DWORD>(restricting.size()), restricting.data(), &token_raw)) {
    return Win32Error("CreateRestrictedToken");
  }
  UniqueHandle token(token_raw);
  PSID integrity_raw = nullptr;
  if (!ConvertStringSidToSidW(Wide(settings.integrity_sid).c_str(), &integrity_raw)) {
    return Win32Error("ConvertStringSidToSidW(" + settings.integrity_sid + ")");
  }
  LocalMemory integrity(integrity_raw);
  TOKEN_MANDATORY_LABEL label = {};
  label.Label.Sid = integrity_raw;
  label.Label.Attributes = SE_GROUP_INTEGRITY;
  if (!SetTokenInformation(token.get(), TokenIntegrityLevel, &label, sizeof(label) + GetLengthSid(integrity_raw))) {
    return Win32Error("SetTokenInformation(TokenIntegrityLevel)");
  }
  return token;
}

// The sandbox's environment block: only what the launcher passes (never the
// caller's own environment, which may hold secrets), plus SystemRoot, without
// which Windows processes cannot load system DLLs.
std::wstring EnvironmentBlock(const std::vector<std::string>& environment) {
  std::vector<std::wstring> entries;
  bool has_system_root = false;
  for (const auto& entry : environment) {
    if (_strnicmp(entry.c_str(), "SystemRoot=", 11) == 0) has_system_root = true;
    entries.push_back(Wide(entry));
  }
  if (!has_system_root) {
    wchar_t root[MAX_PATH] = {};
    DWORD n = GetEnvironmentVariableW(L"SystemRoot", root, MAX_PATH);
    if (n > 0 && n < MAX_PATH) entries.push_back(std::wstring(L"SystemRoot=") + root);
  }
  // CreateProcess wants the block sorted case-insensitively, each entry NUL-terminated, then one more NUL.
  std::sort(entries.begin(), entries.end(),
            [](const std::wstring& a, const std::wstring& b) { return _wcsicmp(a.c_str(), b.c_str()) < 0; });
  std::wstring block;
  for (const auto& entry : entries) block.append(entry).push_back(L'\0');
  block.push_back(L'\0');
  return block;
}

}  // namespace

Result<int> RunInWindowsSandbox(const WindowsLaunchRequest& request) {
  COCOON_ASSIGN_OR_RETURN(WindowsPlan plan, ParseWindowsPlan(request.plan_json));
  COCOON_RETURN_IF_ERROR(CheckRunnable(plan));
  COCOON_ASSIGN_OR_RETURN(auto paths, ResolvePlanPaths(plan, request));
  AclTransaction acls;  // restores every path when this function returns
  for (const auto& path : paths) COCOON_RETURN_IF_ERROR(acls.Apply(Wide(path.windows_path), *path.acl));
  COCOON_ASSIGN_OR_RETURN(UniqueHandle job, CreateSandboxJob(plan.job));
  COCOON_ASSIGN_OR_RETURN(UniqueHandle token, CreateSandboxToken(plan.token));
  STARTUPINFOW startup = {};
  startup.cb = sizeof(startup);
  PROCESS_INFORMATION process = {};
  std::wstring command = Wide(request.command_line);
  std::wstring cwd = Wide(request.work_dir);
  std::wstring environment = EnvironmentBlock(request.environment);
  // Suspended, so that it runs no instruction outside the job.
  if (!CreateProcessAsUserW(token.get(), nullptr, command.data(), nullptr, nullptr, FALSE,
                            CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT, environment.data(), cwd.c_str(), &startup,
                            &process)) {
    return Win32Error("CreateProcessAsUserW");
  }
  UniqueHandle process_handle(process.hProcess);
  UniqueHandle thread_handle(process.hThread);
  if (!AssignProcessToJobObject(job.get(), process.hProcess)) {
    Status error = Win32Error("AssignProcessToJobObject");
    TerminateProcess(process.hProcess, 1);
    return error;
  }
  ResumeThread(process.hThread);
  DWORD wait = WaitForSingleObject(process.hProcess, plan.wall_time_ms ? static_cast<DWORD>(plan.wall_time_ms) : INFINITE);
  DWORD exit_code = 1;
  if (wait == WAIT_TIMEOUT) {
    TerminateJobObject(job.get(), 124);  // like timeout(1) and the Linux enforcer
    WaitForSingleObject(process.hProcess, INFINITE);
    exit_code = 124;
  } else {
    GetExitCodeProcess(process.hProcess, &exit_code);
  }
  TerminateJobObject(job.get(), 1);  // stragglers the command left behind
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
