// The child's fixed sequence (issue 4): applies the ChildSpec and execs.
// Order and why:
//   stdio -> every inherited fd but the sync, error and socketpair ends
//   -> realtime scheduling dropped -> parent-death signal
//   -> unshare mount, uts, ipc [, net] (clone3 made only the user and pid
//      namespaces: the child creates the rest, ~0.6 ms of kernel work, while
//      the parent builds the spec; launcher.cc)
//   -> wait for the parent's spec and uid/gid maps ('G')
//   -> cgroup namespace, unless v1 groups are still to be joined (below)
//   -> hostname, loopback (need CAP_SYS_ADMIN / CAP_NET_ADMIN in the new ns)
//   -> allow-lists: the broker's 127.0.0.1 listener to the parent (net.cc)
//   -> mount tree, pivot_root (needs CAP_SYS_ADMIN)
//   -> v1 cgroups: open the directories the groups go in (still seeing the
//      host's tree), wait until the parent has created them (it does so
//      while we build the mount tree: the two run in parallel), join them
//      (we move ourselves: Cgroup::V1ParentDirs says why), and only then
//      unshare the cgroup namespace, so its root is the sandbox's own group
//   -> cwd, rlimits, setsid (no controlling terminal: TIOCSTI, CVE-2017-5226)
//   -> close every fd above stdio except the error pipe (which is O_CLOEXEC):
//      runc CVE-2024-21626 leaked a host directory fd into the container
//      (the v1 cgroup dirs and a socketpair end may be open until here)
//   -> the sandbox's uid/gid -> a nested user namespace that maps only
//      them and owns none of the others (nested_userns.cc) -> drop every
//      capability, no_new_privs -> the parent-death signal again (the id
//      change cleared it) -> Landlock -> seccomp LAST -> execve.
// Nothing here allocates: every string and table was built before clone, and
// every kernel call is a raw one (raw_syscall.h): the child runs in the
// parent's memory, sharing its thread's errno (memory_sharing_clone.h).
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include "enforcer/child_steps.h"
#include "enforcer/limits/rlimits.h"

namespace cocoon::enforcer {
namespace {

[[noreturn]] void Report(const ChildBootstrap& boot, const ChildError& error) noexcept {
  // Best effort: after seccomp the write may itself be denied; the parent
  // then sees exit status 127 without a report and says so.
  sys::Call(SYS_write, boot.error_fd, &error, sizeof(error));
  sys::ExitGroup(127);
}

// The kernel's struct sigaction for rt_sigaction(2) (not glibc's, whose mask
// is 128 bytes): handler, flags, restorer, then a mask of _NSIG bits.
struct KernelSigaction {
  void (*handler)(int);
  unsigned long flags;
  void (*restorer)();
  uint64_t mask;
};
constexpr int kKernelSignals = 64;

// Signal state is inherited across clone and (for ignored signals and the
// mask) across execve: the parent blocked SIGINT/SIGTERM/SIGHUP for its
// signalfd, and an embedding program may ignore SIGPIPE. clone3's
// CLONE_CLEAR_SIGHAND already reset the handled signals; the ignored ones,
// which survive it and execve, are reset here with the rest (knowing which
// they are costs a /proc/self/status read, as much as the 62 calls).
// glibc's sigaction also refuses its two internal signals (32, 33); the raw
// call resets them too, which is right for a process about to exec.
void ResetSignals() noexcept {
  KernelSigaction action{};
  action.handler = SIG_DFL;
  for (int sig = 1; sig <= kKernelSignals; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sys::Call(SYS_rt_sigaction, sig, &action, nullptr, sizeof(action.mask));
  }
  uint64_t empty = 0;
  sys::Call(SYS_rt_sigprocmask, SIG_SETMASK, &empty, nullptr, sizeof(empty));
}

// A realtime scheduling policy is inherited across clone and execve
// (sched(7)), and RLIMIT_RTPRIO=0 only stops raising it: a caller running
// under SCHED_FIFO/RR would hand the sandboxed code a CPU it can monopolise.
// It also makes the v1 cpu group refuse us (EINVAL: a new group has no
// realtime budget, cpu.rt_runtime_us = 0, under CONFIG_RT_GROUP_SCHED).
// Leaving a realtime policy for SCHED_OTHER needs no privilege.
bool DropRealtimeScheduling(ChildError* error) noexcept {
  long policy = sys::Call(SYS_sched_getscheduler, 0);
  if (policy != SCHED_FIFO && policy != SCHED_RR) return true;
  struct sched_param param {};
  param.sched_priority = 0;
  return child::Succeeded(sys::Call(SYS_sched_setscheduler, 0, SCHED_OTHER, &param), error, ChildStep::kScheduler);
}

bool SetUpStdio(const ChildBootstrap& boot, ChildError* error) noexcept {
  const int fds[3] = {boot.stdin_fd, boot.stdout_fd, boot.stderr_fd};
  for (int target = 0; target < 3; ++target) {
    // dup3 clears O_CLOEXEC on the copy; an fd already in place keeps its
    // own flag, which is cleared explicitly (dup3 refuses equal fds).
    long rc = fds[target] == target ? sys::Call(SYS_fcntl, target, F_SETFD, 0)
                                    : sys::Call(SYS_dup3, fds[target], target, 0);
    if (!child::Succeeded(rc, error, ChildStep::kStdio, target)) return false;
  }
  return true;
}

bool ReadSyncByte(const ChildBootstrap& boot, char expected, ChildStep step, ChildError* error) noexcept {
  char byte = 0;
  long n = sys::CallRestarting(SYS_read, boot.sync_fd, &byte, 1);
  if (n != 1 || byte != expected) return child::Fail(error, step, n < 0 ? sys::ErrorOf(n) : EPIPE);
  return true;
}

bool ArmParentDeathSignal(ChildError* error) noexcept {
  // Dies with the supervisor: a sandbox must never outlive the process that
  // enforces its timeout. (getppid() is 0 in a new pid namespace, so the
  // usual re-check after arming cannot be used; if the parent died before
  // the prctl, its end of the sync pipe is closed and the 'G' read fails.)
  return child::Succeeded(sys::Call(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0), error,
                         ChildStep::kParentDeathSignal);
}

// A credential change clears the parent-death signal (commit_creds: any
// change of the effective or filesystem uid or gid), and as root
// DropPrivileges makes one (host uid 0 -> 65534): without arming it again, a
// sandbox launched by root outlived a killed supervisor. Then check that the
// parent did not die in between: its end of our error pipe would be closed
// (POLLERR on our end).
bool RearmParentDeathSignal(const ChildBootstrap& boot, ChildError* error) noexcept {
  if (!ArmParentDeathSignal(error)) return false;
  struct pollfd pipe_end {};
  pipe_end.fd = boot.error_fd;
  pipe_end.events = POLLOUT;
  struct timespec now {};
  long ready = sys::Call(SYS_ppoll, &pipe_end, 1, &now, nullptr, 0);
  if (ready > 0 && (pipe_end.revents & POLLERR) != 0) return child::Fail(error, ChildStep::kParentDeathSignal, ESRCH);
  return true;
}

// Every namespace but user and pid, which clone3 already made. This runs
// with full capabilities in the new user namespace before its id maps
// exist (creating namespaces needs no mapping), so the new namespaces are
// owned by the sandbox's user namespace exactly as if clone3 had made them.
bool UnshareNamespaces(const ChildBootstrap& boot, ChildError* error) noexcept {
  return boot.unshare_flags == 0 ||
         child::Succeeded(sys::Call(SYS_unshare, boot.unshare_flags), error, ChildStep::kUnshareNamespaces);
}

// 'G': the spec is in the arena and the uid/gid maps are written. A read of
// anything else (EOF: the parent died or gave up) ends the child.
bool WaitForSpec(const ChildBootstrap& boot, ChildError* error) noexcept {
  if (!ReadSyncByte(boot, 'G', ChildStep::kSyncWait, error)) return false;
  if (boot.spec->cgroup_parent_count == 0) sys::Call(SYS_close, boot.sync_fd);
  return true;
}

// The v1 groups' parent directories, opened right after 'G': the mount
// tree built next hides the host's /sys. One per v1 controller at most.
struct CgroupParents {
  static constexpr size_t kMax = 8;
  int fds[kMax];
  size_t count = 0;
};

bool OpenCgroupParents(const ChildSpec& spec, CgroupParents* parents, ChildError* error) noexcept {
  if (spec.cgroup_parent_count > CgroupParents::kMax) return child::Fail(error, ChildStep::kJoinCgroup, E2BIG);
  for (size_t i = 0; i < spec.cgroup_parent_count; ++i) {
    long fd = sys::Call(SYS_openat, AT_FDCWD, spec.cgroup_parent_dirs[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (!child::Succeeded(fd, error, ChildStep::kJoinCgroup, static_cast<int>(i))) return false;
    parents->fds[parents->count++] = static_cast<int>(fd);
  }
  return true;
}

// Joins the sandbox's v1 cgroups once the parent says they exist ('C'):
// nothing of the command has run yet, and a failed join is a refused run,
// never a run outside the limits.
bool JoinCgroups(const ChildBootstrap& boot, const ChildSpec& spec, const CgroupParents& parents,
                 ChildError* error) noexcept {
  if (!ReadSyncByte(boot, 'C', ChildStep::kJoinCgroup, error)) return false;
  sys::Call(SYS_close, boot.sync_fd);
  for (size_t i = 0; i < parents.count; ++i) {
    long fd = sys::Call(SYS_openat, parents.fds[i], spec.cgroup_tasks_path, O_WRONLY | O_CLOEXEC);
    if (!child::Succeeded(fd, error, ChildStep::kJoinCgroup, static_cast<int>(i))) return false;
    long n = sys::CallRestarting(SYS_write, fd, "0", 1);
    sys::Call(SYS_close, fd);
    if (n != 1) return child::Fail(error, ChildStep::kJoinCgroup, n < 0 ? sys::ErrorOf(n) : EIO, static_cast<int>(i));
    sys::Call(SYS_close, parents.fds[i]);
  }
  return true;
}

// Closes every fd above stdio except those in `keep` (any order; -1 and
// stdio entries are ignored).
bool CloseFdsAboveStdioExcept(int* keep, size_t count, ChildError* error) noexcept {
  for (size_t i = 1; i < count; ++i) {  // insertion sort: at most four entries
    for (size_t j = i; j > 0 && keep[j - 1] > keep[j]; --j) {
      int t = keep[j];
      keep[j] = keep[j - 1];
      keep[j - 1] = t;
    }
  }
  unsigned int next = 3;
  for (size_t i = 0; i < count; ++i) {
    if (keep[i] < static_cast<int>(next)) continue;
    auto fd = static_cast<unsigned int>(keep[i]);
    if (fd > next && !child::Succeeded(sys::Call(SYS_close_range, next, fd - 1, 0u), error, ChildStep::kCloseFds)) {
      return false;
    }
    next = fd + 1;
  }
  return child::Succeeded(sys::Call(SYS_close_range, next, ~0u, 0u), error, ChildStep::kCloseFds);
}

// Right after stdio: every fd the child inherited at clone but the ones it
// still talks to the parent on. clone copies the whole fd table, and in
// `cocoon mcp` that includes other runs' pipes: a sandbox child holding
// another run's stdout would delay that run's EOF for as long as it waits
// for its spec (started_child.h starts it before the plan is parsed).
bool CloseUnneededFds(const ChildBootstrap& boot, ChildError* error) noexcept {
  int keep[4] = {boot.sync_fd, boot.error_fd, boot.work_sock, boot.broker_sock};
  return CloseFdsAboveStdioExcept(keep, 4, error);
}

// Before execve: everything above stdio except the error pipe, which is
// O_CLOEXEC. runc CVE-2024-21626 leaked a host directory fd into the
// container.
bool CloseInheritedFds(const ChildBootstrap& boot, ChildError* error) noexcept {
  int keep[1] = {boot.error_fd};
  return CloseFdsAboveStdioExcept(keep, 1, error);
}

// The kernel keeps the high-water RSS of the address space this child
// leaves at execve in the maxrss that wait4 reports for it (fs/exec.c,
// exec_mmap): cocoon's own memory, which the child runs in
// (memory_sharing_clone.h), or its fork-style copy. Taken as late as a
// system call may still be made (the policy's seccomp filter could deny
// getrusage), for the parent to tell that figure from the command's.
void RecordPreExecMaxRss(const ChildSpec& spec) noexcept {
  struct rusage usage {};
  if (spec.handoff == nullptr || sys::Call(SYS_getrusage, RUSAGE_SELF, &usage) != 0) return;
  spec.handoff->pre_exec_maxrss_kib.store(usage.ru_maxrss, std::memory_order_release);
}

[[noreturn]] void Exec(const ChildBootstrap& boot, const ChildSpec& spec) noexcept {
  int err = ENOENT;
  for (size_t i = 0; i < spec.exec_candidate_count; ++i) {
    int failed = sys::ErrorOf(sys::Call(SYS_execve, spec.exec_candidates[i], spec.argv, spec.envp));
    // Like execvp(3): keep searching on ENOENT/ENOTDIR, remember EACCES.
    if (failed != ENOENT && failed != ENOTDIR) err = failed;
  }
  ChildError error;
  child::Fail(&error, ChildStep::kExec, err);
  Report(boot, error);
}

}  // namespace

const char* ChildStepName(ChildStep step) {
  switch (step) {
    case ChildStep::kNone: return "none";
    case ChildStep::kStdio: return "stdio";
    case ChildStep::kParentDeathSignal: return "parent death signal";
    case ChildStep::kSyncWait: return "wait for uid/gid maps";
    case ChildStep::kUnshareCgroup: return "cgroup namespace";
    case ChildStep::kHostname: return "hostname";
    case ChildStep::kLoopback: return "loopback up";
    case ChildStep::kMountPrivate: return "private mount propagation";
    case ChildStep::kMountNewRoot: return "new root tmpfs";
    case ChildStep::kMkdirTarget: return "create mount point";
    case ChildStep::kBind: return "bind mount";
    case ChildStep::kMountAttr: return "mount_setattr ro/nosuid/nodev";
    case ChildStep::kTmpfs: return "tmpfs";
    case ChildStep::kWorkDir: return "work dir";
    case ChildStep::kProc: return "mount /proc";
    case ChildStep::kDevice: return "device node";
    case ChildStep::kSymlink: return "symlink";
    case ChildStep::kMask: return "mask path";
    case ChildStep::kReadOnlyPath: return "read-only /proc entry";
    case ChildStep::kRootReadOnly: return "read-only new root";
    case ChildStep::kPivotRoot: return "pivot_root";
    case ChildStep::kDetachOldRoot: return "detach old root";
    case ChildStep::kChdir: return "chdir to cwd";
    case ChildStep::kRlimit: return "setrlimit";
    case ChildStep::kSetsid: return "setsid";
    case ChildStep::kCloseFds: return "close inherited fds";
    case ChildStep::kSecurebits: return "lock securebits";
    case ChildStep::kCapBoundingSet: return "drop bounding set";
    case ChildStep::kCapAmbient: return "clear ambient capabilities";
    case ChildStep::kSetgroups: return "setgroups";
    case ChildStep::kSetgid: return "setresgid";
    case ChildStep::kSetuid: return "setresuid";
    case ChildStep::kCapset: return "drop capabilities";
    case ChildStep::kNoNewPrivs: return "no_new_privs";
    case ChildStep::kLandlockCreate: return "landlock ruleset";
    case ChildStep::kLandlockRule: return "landlock rule";
    case ChildStep::kLandlockRestrict: return "landlock restrict_self";
    case ChildStep::kSeccomp: return "seccomp filter";
    case ChildStep::kListenerHandoff: return "seccomp listener handoff";
    case ChildStep::kExec: return "execve";
    case ChildStep::kJoinCgroup: return "join the sandbox cgroup";
    case ChildStep::kBrokerListener: return "network broker listener";
    case ChildStep::kScheduler: return "leave realtime scheduling";
    case ChildStep::kUnshareNamespaces: return "unshare mount/uts/ipc/net namespaces";
    case ChildStep::kBindSource: return "open the bind source";
    case ChildStep::kMountPoint: return "open the mount point";
    case ChildStep::kNestedUserNamespace: return "nested user namespace";
    case ChildStep::kNestedIdMaps: return "nested user namespace id maps";
    case ChildStep::kDumpable: return "dumpable after the id change";
    case ChildStep::kUserNamespaceLimit: return "limit the user namespace counters (nested namespaces, inotify)";
  }
  return "unknown step";
}

void RunChild(const ChildBootstrap& boot) noexcept {
  ResetSignals();
  ChildError error;
  bool ok = SetUpStdio(boot, &error) && CloseUnneededFds(boot, &error) && DropRealtimeScheduling(&error) &&
            ArmParentDeathSignal(&error) && UnshareNamespaces(boot, &error) && WaitForSpec(boot, &error);
  if (!ok) Report(boot, error);
  const ChildSpec& spec = *boot.spec;
  bool join_cgroups_later = spec.cgroup_parent_count != 0;
  CgroupParents cgroup_parents;
  if (join_cgroups_later) {
    ok = OpenCgroupParents(spec, &cgroup_parents, &error);
  } else if (spec.unshare_cgroup) {
    ok = child::Succeeded(sys::Call(SYS_unshare, CLONE_NEWCGROUP), &error, ChildStep::kUnshareCgroup);
  }
  ok = ok && child::Succeeded(sys::Call(SYS_sethostname, spec.hostname, spec.hostname_len), &error, ChildStep::kHostname);
  if (ok && spec.loopback) ok = child::BringUpLoopback(&error);
  if (ok && spec.broker_sock >= 0) ok = child::SendBrokerListener(spec, &error);
  ok = ok && child::BuildMountTree(spec, &error);
  if (ok && join_cgroups_later) {
    ok = JoinCgroups(boot, spec, cgroup_parents, &error);
    if (ok && spec.unshare_cgroup) {
      ok = child::Succeeded(sys::Call(SYS_unshare, CLONE_NEWCGROUP), &error, ChildStep::kUnshareCgroup);
    }
  }
  ok = ok && child::Succeeded(sys::Call(SYS_chdir, spec.cwd), &error, ChildStep::kChdir);
  if (ok) {
    int resource = 0;
    int err = ApplyRlimits(*spec.rlimits, &resource);
    if (err != 0) ok = child::Fail(&error, ChildStep::kRlimit, err, resource);
  }
  ok = ok && child::Succeeded(sys::Call(SYS_setsid), &error, ChildStep::kSetsid);
  ok = ok && CloseInheritedFds(boot, &error) && child::BecomeSandboxUser(spec, &error) &&
       child::EnterNestedUserNamespace(spec, &error) && child::DropPrivileges(spec, &error) &&
       RearmParentDeathSignal(boot, &error) && child::ApplyLandlock(spec, &error);
  if (ok) RecordPreExecMaxRss(spec);
  ok = ok && child::LoadSeccomp(spec, boot.error_fd, &error);
  if (!ok) Report(boot, error);
  Exec(boot, spec);
}

}  // namespace cocoon::enforcer
