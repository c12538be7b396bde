#include "cli/host_probe_util.h"
#include "compiler/common/file_read.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include "cli/agent_run_util.h"
#include "cli/policy_compile.h"
#include "cli/runtime_util.h"
#include "compiler/frontend/search_paths.h"
#include "enforcer/landlock.h"
#include "enforcer/limits/cgroup_names.h"
#include "enforcer/limits/host_caps.h"

namespace cocoon::cli {
namespace {

// "" when the file is missing or unreadable: each probe reports that itself.
std::string ReadFile(const std::string& path) {
  auto text = ReadFileToString(path);
  return text.ok() ? std::move(*text) : std::string();
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

uint64_t MeminfoBytes(const std::string& meminfo, const std::string& key) {
  size_t at = meminfo.find(key + ":");
  if (at == std::string::npos) return 0;
  return std::strtoull(meminfo.c_str() + at + key.size() + 1, nullptr, 10) * 1024;  // kB
}

// A limit as a cgroup file writes it: "max" (v2) or a page-rounded number
// near 2^63 (v1) mean none.
std::optional<uint64_t> ParseCgroupLimit(const std::string& text) {
  if (text.empty() || text == "max") return std::nullopt;
  uint64_t value = std::strtoull(text.c_str(), nullptr, 10);
  if (value == 0 || value >= (1ull << 60)) return std::nullopt;
  return value;
}

// The memory our cgroup may use: the smallest limit on it and on every
// group above it, since a parent's limit binds its children (a 1 GiB parent
// OOM-killed a "2 GiB" sandbox). v2: memory.max up to the mount's root; v1:
// memory.stat's hierarchical_memory_limit, which is that minimum already.
std::optional<uint64_t> CgroupMemoryLimit() {
  auto host = enforcer::DetectHostCapabilities();
  if (!host.ok()) return std::nullopt;
  std::optional<uint64_t> lowest;
  auto consider = [&lowest](std::optional<uint64_t> limit) {
    if (limit && (!lowest || *limit < *lowest)) lowest = limit;
  };
  if (host->v2.mounted) {
    for (std::string dir = host->v2.Dir(); dir.size() > host->v2.mount.size(); dir.resize(dir.rfind('/'))) {
      consider(ParseCgroupLimit(Trim(ReadFile(dir + "/memory.max"))));
    }
  }
  if (host->v1_memory.mounted) {
    const std::string dir = host->v1_memory.Dir();
    consider(ParseCgroupLimit(Trim(ReadFile(dir + "/memory.limit_in_bytes"))));
    const std::string stat = ReadFile(dir + "/memory.stat");
    const std::string key = "hierarchical_memory_limit ";
    if (size_t at = stat.find(key); at != std::string::npos && (at == 0 || stat[at - 1] == '\n')) {
      consider(ParseCgroupLimit(Trim(stat.substr(at + key.size(), stat.find('\n', at) - at - key.size()))));
    }
  }
  return lowest;
}

// Runs `probe` in a forked child; the child reports {step, errno} through a
// pipe. A probe returns 0 on success or an errno, naming the failed step.
struct ProbeResult {
  int error = 0;
  std::string step;
};

ProbeResult ProbeInChild(const std::function<int(const char** step)>& probe) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return {errno, "pipe2"};
  pid_t pid = fork();
  if (pid < 0) return {errno, "fork"};
  if (pid == 0) {
    close(fds[0]);
    const char* step = "";
    int err = probe(&step);
    char buffer[160];
    int len = snprintf(buffer, sizeof(buffer), "%d %s", err, step);
    if (write(fds[1], buffer, static_cast<size_t>(len)) < 0) _exit(3);
    _exit(0);
  }
  close(fds[1]);
  char buffer[160] = {};
  ssize_t n = read(fds[0], buffer, sizeof(buffer) - 1);
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (n <= 0) return {EIO, "probe child died"};
  ProbeResult result;
  char* rest = nullptr;
  result.error = static_cast<int>(std::strtol(buffer, &rest, 10));
  result.step = rest && *rest == ' ' ? rest + 1 : "";
  return result;
}

bool WriteText(const char* path, const std::string& text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  return ok;
}

// In the child: a new user namespace mapping our uid to root, plus `flags`.
int EnterUserNamespace(int flags, const char** step) {
  uid_t uid = getuid();
  gid_t gid = getgid();
  *step = "unshare(CLONE_NEWUSER)";
  if (unshare(CLONE_NEWUSER | flags) != 0) return errno;
  // user_namespaces(7): setgroups must be denied before an unprivileged gid_map.
  *step = "write /proc/self/setgroups";
  if (!WriteText("/proc/self/setgroups", "deny")) return errno;
  *step = "write /proc/self/uid_map";
  if (!WriteText("/proc/self/uid_map", "0 " + std::to_string(uid) + " 1")) return errno;
  *step = "write /proc/self/gid_map";
  if (!WriteText("/proc/self/gid_map", "0 " + std::to_string(gid) + " 1")) return errno;
  return 0;
}

// Everything here happens inside the child's own mount namespace: the first
// step makes every mount private, so nothing propagates back to the host.
int ProbeMounts(const char** step) {
  if (int err = EnterUserNamespace(CLONE_NEWNS, step)) return err;
  *step = "make / private (MS_REC|MS_PRIVATE)";
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return errno;
  *step = "mount tmpfs";
  if (mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m") != 0) return errno;
  mkdir("/tmp/bind", 0700);
  *step = "bind mount /usr";
  if (mount("/usr", "/tmp/bind", nullptr, MS_BIND | MS_REC, nullptr) != 0) return errno;
  // mount(2): a read-only bind needs a second, remount call.
  *step = "remount bind read-only";
  if (mount(nullptr, "/tmp/bind", nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0) {
    return errno;
  }
  for (const char* dir : {"/tmp/l", "/tmp/u", "/tmp/w", "/tmp/m"}) mkdir(dir, 0700);
  *step = "mount overlay";
  if (mount("overlay", "/tmp/m", "overlay", 0, "lowerdir=/tmp/l,upperdir=/tmp/u,workdir=/tmp/w") != 0) return errno;
  return 0;
}

int ProbeNamespaces(const char** step) {
  return EnterUserNamespace(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC |
                                CLONE_NEWCGROUP,
                            step);
}

// Installs an allow-everything filter in the child: proves seccomp filter
// mode works with no_new_privs (seccomp(2), SECCOMP_SET_MODE_FILTER).
int ProbeSeccompFilter(const char** step) {
  *step = "prctl(PR_SET_NO_NEW_PRIVS)";
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return errno;
  sock_filter filter[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
  sock_fprog program{1, filter};
  *step = "seccomp(SECCOMP_SET_MODE_FILTER)";
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) != 0) return errno;
  return 0;
}

bool SeccompActionAvailable(uint32_t action) {
  return syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
}

std::string Errno(const ProbeResult& r) { return r.step + ": " + std::strerror(r.error); }

HostCheck Check(std::string name, CheckWeight weight) {
  HostCheck check;
  check.name = std::move(name);
  check.weight = weight;
  return check;
}

HostCheck CheckUserNamespaces() {
  HostCheck check = Check("user namespaces", CheckWeight::kRequired);
  ProbeResult r = ProbeInChild([](const char** step) {
    if (int err = EnterUserNamespace(0, step)) return err;
    // The command runs in a second user namespace nested in the sandbox's
    // (enforcer/nested_userns.cc).
    int err = EnterUserNamespace(0, step);
    if (err != 0) *step = "nested user namespace (unshare and maps inside the first)";
    return err;
  });
  if (r.error == 0) {
    check.detail = "unshare(CLONE_NEWUSER) and uid/gid maps work, also nested one level (as the sandbox needs)";
    return check;
  }
  check.status = CheckStatus::kFail;
  check.detail = Errno(r);
  std::string max = Trim(ReadFile("/proc/sys/user/max_user_namespaces"));
  std::string debian = Trim(ReadFile("/proc/sys/kernel/unprivileged_userns_clone"));
  std::string apparmor = Trim(ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"));
  if (max == "0") check.fix = "sysctl -w user.max_user_namespaces=15000";
  else if (debian == "0") check.fix = "sysctl -w kernel.unprivileged_userns_clone=1";
  else if (apparmor == "1") check.fix = "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (or an AppArmor profile for cocoon)";
  else check.fix = "enable CONFIG_USER_NS, or run inside a container that allows unshare(CLONE_NEWUSER) (seccomp/AppArmor of the outer runtime)";
  return check;
}

HostCheck CheckNamespaces() {
  HostCheck check = Check("pid/net/uts/ipc/cgroup namespaces", CheckWeight::kRequired);
  ProbeResult r = ProbeInChild(ProbeNamespaces);
  if (r.error == 0) {
    check.detail = "all can be created inside a user namespace";
  } else {
    check.status = CheckStatus::kFail;
    check.detail = Errno(r);
    check.fix = "enable CONFIG_PID_NS, CONFIG_NET_NS, CONFIG_UTS_NS, CONFIG_IPC_NS and CONFIG_CGROUPS";
  }
  return check;
}

HostCheck CheckMounts() {
  HostCheck check = Check("unprivileged mount rules", CheckWeight::kRequired);
  ProbeResult r = ProbeInChild(ProbeMounts);
  if (r.error == 0) {
    check.detail = "tmpfs, recursive bind, read-only remount and overlay work in a user+mount namespace";
    return check;
  }
  if (r.step == "mount overlay") {
    check.status = CheckStatus::kWarn;
    check.weight = CheckWeight::kAdvisory;
    check.detail = Errno(r) + " (staged work dirs fall back to copying)";
    check.fix = "Linux >= 5.11 allows overlayfs in user namespaces";
    return check;
  }
  check.status = CheckStatus::kFail;
  check.detail = Errno(r);
  check.fix = "the kernel or an outer sandbox forbids mounts in user namespaces; run on a host (or container) that allows them";
  return check;
}

HostCheck CheckSeccomp() {
  HostCheck check = Check("seccomp", CheckWeight::kRequired);
  if (prctl(PR_GET_SECCOMP, 0, 0, 0, 0) < 0) {
    check.status = CheckStatus::kFail;
    check.detail = std::string("prctl(PR_GET_SECCOMP): ") + std::strerror(errno);
    check.fix = "enable CONFIG_SECCOMP and CONFIG_SECCOMP_FILTER";
    return check;
  }
  ProbeResult r = ProbeInChild(ProbeSeccompFilter);
  if (r.error != 0) {
    check.status = CheckStatus::kFail;
    check.detail = Errno(r);
    check.fix = "enable CONFIG_SECCOMP_FILTER";
    return check;
  }
  std::vector<std::string> missing;
  if (!SeccompActionAvailable(SECCOMP_RET_KILL_PROCESS)) missing.push_back("KILL_PROCESS");
  if (!SeccompActionAvailable(SECCOMP_RET_LOG)) missing.push_back("LOG");
  if (!SeccompActionAvailable(SECCOMP_RET_USER_NOTIF)) missing.push_back("USER_NOTIF");
  seccomp_notif_sizes sizes{};
  bool notif = syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0;
  check.detail = "filter mode with no_new_privs works";
  if (missing.empty() && notif) {
    check.detail += "; KILL_PROCESS, LOG and USER_NOTIF available";
    return check;
  }
  check.status = CheckStatus::kWarn;
  std::string list;
  for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
  check.detail += "; missing actions: " + list;
  check.fix = "Linux >= 5.0 for USER_NOTIF (policies using `log` or `notify` rules need it)";
  return check;
}

HostCheck CheckLandlock() {
  HostCheck check = Check("Landlock", CheckWeight::kAdvisory);
  int abi = enforcer::LandlockAbi();
  if (abi > 0) {
    check.detail = "ABI " + std::to_string(abi) + (abi >= 6 ? " (with signal and abstract-socket scoping)" : "");
    return check;
  }
  check.status = CheckStatus::kWarn;
  check.detail = "not available (mount isolation still applies; Landlock is defence in depth)";
  check.fix = "boot with lsm=landlock,... and CONFIG_SECURITY_LANDLOCK=y (Linux >= 5.13)";
  return check;
}

// What an unprivileged caller can do about it on this host: only cgroup v2
// can be delegated to a user, and systemd-run only helps where systemd is
// the init that manages the tree.
std::string RootlessCgroupFix(const enforcer::HostCapabilities& host) {
  if (!host.v2.mounted || !host.v2_memory || !host.v2_pids) {
    return "the memory and pids controllers are not on cgroup v2 here (v1 cannot be delegated to a user): run "
           "cocoon as root for cgroup limits, or boot with cgroup v2 (systemd.unified_cgroup_hierarchy=1) and "
           "delegate a subtree";
  }
  if (Trim(ReadFile("/proc/1/comm")) == "systemd") {
    return "systemd-run --user --scope -p Delegate=yes cocoon ... (a delegated cgroup v2 subtree)";
  }
  return "have an administrator delegate a cgroup v2 subtree to your user (chown the group and its cgroup.procs, "
         "cgroup.subtree_control and cgroup.threads) and run cocoon from a process inside it";
}

HostCheck CheckCgroups() {
  HostCheck check = Check("cgroups", CheckWeight::kAdvisory);
  auto host = enforcer::DetectHostCapabilities();
  if (!host.ok()) {
    check.status = CheckStatus::kWarn;
    check.detail = host.status().message();
    check.fix = "mount /proc";
    return check;
  }
  bool v2 = host->v2.writable && host->v2_memory && host->v2_pids;
  bool v1 = host->v1_memory.writable && host->v1_pids.writable;
  if (v2 || v1) {
    check.detail = std::string(v2 ? "cgroup v2" : "cgroup v1") + " memory+pids delegated to us at " +
                   (v2 ? host->v2.Dir() : host->v1_memory.Dir()) + (host->v1_memsw ? " (swap accounted)" : "");
    // Groups of supervisors that were SIGKILLed (enforcer/limits/cgroup_names.h).
    std::vector<std::string> abandoned = enforcer::FindAbandonedCgroups(enforcer::AllSandboxCgroupParents(*host));
    if (!abandoned.empty()) {
      check.status = CheckStatus::kWarn;
      check.detail += "; " + std::to_string(abandoned.size()) +
                      " sandbox group(s) left by killed supervisors, e.g. " + abandoned.front();
      check.fix = "harmless; later runs remove them (one run in 16 sweeps), or rmdir them now";
    }
    return check;
  }
  check.status = CheckStatus::kWarn;
  check.detail = "no writable cgroup with memory and pids controllers: memory and process limits fall back to rlimits";
  check.fix = host->privilege == enforcer::Privilege::kRoot
                  ? "mount the memory and pids controllers (v1) or enable them in cgroup.subtree_control (v2)"
                  : RootlessCgroupFix(*host);
  return check;
}

HostCheck CheckFilesystems() {
  HostCheck check = Check("tmpfs/overlay", CheckWeight::kRequired);
  std::string filesystems = ReadFile("/proc/filesystems");
  bool tmpfs = filesystems.find("\ttmpfs\n") != std::string::npos;
  bool overlay = filesystems.find("\toverlay\n") != std::string::npos;
  check.detail = std::string("tmpfs ") + (tmpfs ? "yes" : "no") + ", overlay " + (overlay ? "yes" : "no (module may autoload)");
  if (!tmpfs) {
    check.status = CheckStatus::kFail;
    check.fix = "enable CONFIG_TMPFS (the sandbox root and /tmp are tmpfs)";
  } else if (!overlay) {
    check.status = CheckStatus::kWarn;
    check.weight = CheckWeight::kAdvisory;
    check.fix = "modprobe overlay (staged work dirs fall back to copying)";
  }
  return check;
}

HostCheck CheckKvm() {
  HostCheck check = Check("/dev/kvm", CheckWeight::kAdvisory);
  struct stat st{};
  if (stat("/dev/kvm", &st) == 0 && S_ISCHR(st.st_mode)) {
    check.detail = "present (only policies with `devices { kvm on }` get it)";
  } else {
    check.detail = "absent (only matters for policies with `devices { kvm on }`)";
  }
  return check;
}

std::vector<HostCheck> CheckRuntimes() {
  std::vector<HostCheck> checks;
  for (const RuntimeInfo& r : InspectRuntimes(false)) {
    HostCheck check = Check("runtime " + r.name, CheckWeight::kAdvisory);
    if (r.available) {
      check.detail = r.path + (r.version.empty() ? "" : " (" + r.version + ")");
    } else {
      check.status = CheckStatus::kWarn;
      std::string searched;
      for (const auto& c : r.candidates) searched += (searched.empty() ? "" : ", ") + c;
      check.detail = r.error.empty() ? "not installed (searched " + searched + ")" : Trim(r.error);
      check.fix = "install it to use `cocoon run -r " + r.name + "`";
    }
    checks.push_back(std::move(check));
  }
  if (checks.empty()) {
    HostCheck check = Check("runtimes", CheckWeight::kAdvisory);
    check.status = CheckStatus::kWarn;
    check.detail = "no policies/runtimes/*.cocoon presets found";
    check.fix = "set COCOON_POLICY_PATH to the repository's policies/ directory";
    checks.push_back(std::move(check));
  }
  return checks;
}

// The default policy itself: `cocoon run` without --policy builds on
// strict, found in the policy search path; without it every such run fails
// ("strict.cocoon not found"), whatever the kernel can do. Found, and
// compiled for the Linux enforcer (a policy mistake fails here too).
HostCheck CheckDefaultPolicy() {
  HostCheck check = Check("default policy", CheckWeight::kRequired);
  auto path = FindStrict();
  if (!path.ok()) {
    check.status = CheckStatus::kFail;
    std::string searched;
    for (const std::string& dir : frontend::DefaultSearchPaths()) searched += (searched.empty() ? "" : ":") + dir;
    check.detail = "strict.cocoon is not in the policy search path (" + (searched.empty() ? "empty" : searched) +
                   "): every `cocoon run` without --policy fails";
    check.fix = "set COCOON_POLICY_PATH to the directory holding strict.cocoon (the repository's or the install's policies/)";
    return check;
  }
  auto compiled = CompilePolicyOnCacheMiss(*path, "strict");
  if (!compiled.ok()) {
    check.status = CheckStatus::kFail;
    check.detail = *path + " does not compile: " + Trim(compiled.status().message());
    check.fix = "fix or replace " + *path + " (`cocoon check " + *path + "` shows the diagnostics)";
    return check;
  }
  check.detail = "strict, " + *path + " (compiles)";
  return check;
}

std::vector<HostCheck> CheckAudit(const DoctorOptions& options) {
  HostCheck log = Check("audit log", CheckWeight::kAdvisory);
  HostCheck key = Check("audit key", CheckWeight::kAdvisory);
  if (options.audit_log.empty()) {
    log.status = CheckStatus::kWarn;
    log.detail = "not configured: runs are not recorded";
    log.fix = "pass --audit-log FILE (or set COCOON_AUDIT_LOG)";
  } else if (options.audit_log == "-") {
    log.detail = "stdout";
  } else {
    std::string dir = options.audit_log.substr(0, options.audit_log.find_last_of('/') + 1);
    if (dir.empty()) dir = ".";
    bool exists = access(options.audit_log.c_str(), F_OK) == 0;
    bool writable = exists ? access(options.audit_log.c_str(), W_OK) == 0 : access(dir.c_str(), W_OK) == 0;
    log.detail = options.audit_log + (exists ? " (exists)" : " (will be created)");
    if (!writable) {
      log.status = CheckStatus::kFail;
      log.weight = CheckWeight::kRequired;  // a configured log that cannot be written refuses every run
      log.fix = "make " + (exists ? options.audit_log : dir) + " writable by this user";
    }
  }
  if (options.audit_key.empty()) {
    key.status = CheckStatus::kWarn;
    key.detail = "not configured: audit lines are hash-chained but not signed";
    key.fix = "cocoon audit keygen --out KEY, then pass --audit-key KEY (or set COCOON_AUDIT_KEY)";
  } else {
    struct stat st{};
    if (stat(options.audit_key.c_str(), &st) != 0 || access(options.audit_key.c_str(), R_OK) != 0) {
      key.status = CheckStatus::kFail;
      key.weight = CheckWeight::kRequired;
      key.detail = options.audit_key + ": " + std::strerror(errno);
      key.fix = "cocoon audit keygen --out " + options.audit_key;
    } else if ((st.st_mode & 077) || (st.st_uid != geteuid() && st.st_uid != 0)) {
      // Launches refuse such a key (audit/keys.cc LoadPem).
      const bool foreign = st.st_uid != geteuid() && st.st_uid != 0;
      key.status = CheckStatus::kFail;
      key.weight = CheckWeight::kRequired;
      key.detail = options.audit_key + (foreign ? " belongs to another user (uid " + std::to_string(st.st_uid) + ")"
                                                : std::string(" may be read or changed by other users")) +
                   ": runs that sign with it are refused";
      key.fix = foreign ? "cocoon audit keygen --out KEY (a key of your own)" : "chmod 600 " + options.audit_key;
    } else if (st.st_nlink > 1) {
      // Launches refuse it too (audit/keys.cc LoadPem): another name could sit where a sandbox sees it.
      key.status = CheckStatus::kFail;
      key.weight = CheckWeight::kRequired;
      key.detail = options.audit_key + " has " + std::to_string(st.st_nlink) +
                   " hard links: runs that sign with it are refused";
      key.fix = "find / -xdev -samefile " + options.audit_key + " (remove the other names)";
    } else {
      key.detail = options.audit_key + " (mode 0600)";
    }
  }
  return {log, key};
}

}  // namespace

std::string_view CheckStatusName(CheckStatus status) {
  switch (status) {
    case CheckStatus::kOk: return "ok";
    case CheckStatus::kWarn: return "warn";
    case CheckStatus::kFail: return "fail";
  }
  return "?";
}

std::string FormatBytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char buffer[32];
  snprintf(buffer, sizeof(buffer), unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return buffer;
}

uint64_t MemoryCeilingBytes() {
  uint64_t total = MeminfoBytes(ReadFile("/proc/meminfo"), "MemTotal");
  if (auto limit = CgroupMemoryLimit(); limit && (*limit < total || total == 0)) total = *limit;
  return total / 100 * 95;
}

uint64_t ClampMemoryRequest(uint64_t requested_bytes, std::string* note, const std::string& what) {
  uint64_t ceiling = MemoryCeilingBytes();
  if (ceiling == 0 || requested_bytes <= ceiling) return requested_bytes;
  if (note) {
    const uint64_t host_total = MeminfoBytes(ReadFile("/proc/meminfo"), "MemTotal");
    const bool cgroup_bound = host_total != 0 && ceiling < host_total / 100 * 95;
    *note = what + " " + FormatBytes(requested_bytes) + " clamped to " + FormatBytes(ceiling) +
            (cgroup_bound ? " (95% of the memory limit of cocoon's own cgroup)" : " (95% of the host's memory)");
  }
  return ceiling;
}

HostInfo ProbeHostInfo() {
  HostInfo info;
  utsname uts{};
  if (uname(&uts) == 0) {
    info.kernel_release = uts.release;
    info.kernel_version = uts.version;
    info.machine = uts.machine;
  }
  std::string cpuinfo = ReadFile("/proc/cpuinfo");
  if (size_t at = cpuinfo.find("model name"); at != std::string::npos) {
    size_t colon = cpuinfo.find(':', at), end = cpuinfo.find('\n', at);
    if (colon != std::string::npos && colon < end) info.cpu_model = Trim(cpuinfo.substr(colon + 2, end - colon - 2));
  }
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  info.cpus_online = cpus > 0 ? static_cast<unsigned>(cpus) : 0;
  std::string meminfo = ReadFile("/proc/meminfo");
  info.memory_total_bytes = MeminfoBytes(meminfo, "MemTotal");
  info.memory_available_bytes = MeminfoBytes(meminfo, "MemAvailable");
  info.cgroup_memory_limit_bytes = CgroupMemoryLimit();
  info.memory_ceiling_bytes = MemoryCeilingBytes();
  info.landlock_abi = enforcer::LandlockAbi();
  if (auto host = enforcer::DetectHostCapabilities(); host.ok()) {
    bool v1 = host->v1_memory.mounted || host->v1_pids.mounted;
    info.cgroup_layout = v1 && host->v2.mounted ? "hybrid (v1 + v2)" : v1 ? "v1" : host->v2.mounted ? "v2" : "none";
  }
  struct stat st{};
  info.kvm_present = stat("/dev/kvm", &st) == 0 && S_ISCHR(st.st_mode);
  return info;
}

std::vector<HostCheck> RunHostChecks(const DoctorOptions& options) {
  std::vector<HostCheck> checks = {CheckUserNamespaces(), CheckNamespaces(), CheckMounts(),    CheckSeccomp(),
                                   CheckLandlock(),       CheckCgroups(),    CheckFilesystems(), CheckKvm()};
  if (options.scope == CheckScope::kIsolationOnly) return checks;
  checks.push_back(CheckDefaultPolicy());
  for (auto& c : CheckRuntimes()) checks.push_back(std::move(c));
  for (auto& c : CheckAudit(options)) checks.push_back(std::move(c));
  return checks;
}

bool DefaultPolicyEnforceable(const std::vector<HostCheck>& checks) {
  for (const auto& c : checks) {
    if (c.status == CheckStatus::kFail && c.weight == CheckWeight::kRequired) return false;
  }
  return true;
}

nlohmann::json HostInfoToJson(const HostInfo& info) {
  nlohmann::json j = {{"kernel", {{"release", info.kernel_release}, {"version", info.kernel_version}}},
                      {"arch", info.machine},
                      {"cpu", {{"model", info.cpu_model}, {"online", info.cpus_online}}},
                      {"memory",
                       {{"total_bytes", info.memory_total_bytes},
                        {"available_bytes", info.memory_available_bytes},
                        {"ceiling_bytes", info.memory_ceiling_bytes},
                        {"ceiling_rule", "95% of min(MemTotal, the limits of cocoon's cgroup and its ancestors); larger requests are clamped"}}},
                      {"isolation",
                       {{"landlock_abi", info.landlock_abi},
                        {"cgroups", info.cgroup_layout},
                        {"kvm", info.kvm_present}}}};
  if (info.cgroup_memory_limit_bytes) j["memory"]["cgroup_limit_bytes"] = *info.cgroup_memory_limit_bytes;
  return j;
}

nlohmann::json HostChecksToJson(const std::vector<HostCheck>& checks) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& c : checks) {
    nlohmann::json entry = {{"name", c.name}, {"status", CheckStatusName(c.status)},
                            {"required", c.weight == CheckWeight::kRequired}, {"detail", c.detail}};
    if (!c.fix.empty()) entry["fix"] = c.fix;
    list.push_back(std::move(entry));
  }
  return list;
}

}  // namespace cocoon::cli
