// The child's fixed sequence (issue 4): applies the ChildSpec and execs.
// Order and why:
//   stdio -> join the v1 cgroups (we move ourselves: Cgroup::OpenJoinFds
//      says why; before the wait, because joining a cpu group reschedules
//      the task (sched_move_task -> resched_curr), and on a busy host that
//      wait then overlaps the parent writing our maps instead of following it)
//   -> parent-death signal, wait for the parent's uid/gid maps
//   -> cgroup namespace (after we are in the sandbox cgroup, so the
//      namespace root is the sandbox's own group)
//   -> hostname, loopback (need CAP_SYS_ADMIN / CAP_NET_ADMIN in the new ns)
//   -> allow-lists: the broker's 127.0.0.1 listener to the parent (net.cc)
//   -> mount tree, pivot_root (needs CAP_SYS_ADMIN)
//   -> cwd, rlimits, setsid (no controlling terminal: TIOCSTI, CVE-2017-5226)
//   -> close every fd above stdio except the error pipe (which is O_CLOEXEC):
//      runc CVE-2024-21626 leaked a host directory fd into the container
//   -> drop privileges, no_new_privs -> Landlock -> seccomp LAST -> execve.
// Nothing here allocates: every string and table was built before clone.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>

#include "enforcer/child_steps.h"
#include "enforcer/limits/rlimits.h"

namespace cocoon::enforcer {
namespace {

[[noreturn]] void Report(const ChildSpec& spec, const ChildError& error) noexcept {
  // Best effort: after seccomp the write may itself be denied; the parent
  // then sees exit status 127 without a report and says so.
  ssize_t ignored = write(spec.error_fd, &error, sizeof(error));
  (void)ignored;
  _exit(127);
}

// Signal state is inherited across clone and (for ignored signals and the
// mask) across execve: the parent blocked SIGINT/SIGTERM/SIGHUP for its
// signalfd, and an embedding program may ignore SIGPIPE.
void ResetSignals() noexcept {
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) sigaction(sig, &action, nullptr);
  }
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);
}

bool SetUpStdio(const ChildSpec& spec, ChildError* error) noexcept {
  const int fds[3] = {spec.stdin_fd, spec.stdout_fd, spec.stderr_fd};
  for (int target = 0; target < 3; ++target) {
    if (fds[target] == target) {
      // dup2 onto itself keeps O_CLOEXEC; clear it explicitly.
      if (fcntl(target, F_SETFD, 0) != 0) return child::Fail(error, ChildStep::kStdio, errno, target);
    } else if (dup2(fds[target], target) < 0) {
      return child::Fail(error, ChildStep::kStdio, errno, target);
    }
  }
  return true;
}

bool WaitForParent(const ChildSpec& spec, ChildError* error) noexcept {
  // Dies with the supervisor: a sandbox must never outlive the process that
  // enforces its timeout. (getppid() is 0 in a new pid namespace, so the
  // usual re-check after arming cannot be used; if the parent died before
  // the prctl, its end of the sync pipe is closed and the read below fails.)
  if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return child::Fail(error, ChildStep::kParentDeathSignal, errno);
  char byte = 0;
  ssize_t n;
  do {
    n = read(spec.sync_fd, &byte, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1 || byte != 'G') return child::Fail(error, ChildStep::kSyncWait, n < 0 ? errno : EPIPE);
  close(spec.sync_fd);
  return true;
}

// Joins the sandbox's v1 cgroups before anything else runs (nothing of the
// command has run yet, and we have not exec'd): a failed write is a refused
// run, never a run outside the limits. The permission check uses the tasks
// file's opener (the parent), so it does not depend on our uid/gid maps.
bool JoinCgroups(const ChildSpec& spec, ChildError* error) noexcept {
  for (size_t i = 0; i < spec.cgroup_join_count; ++i) {
    ssize_t n;
    do {
      n = write(spec.cgroup_join_fds[i], "0", 1);
    } while (n < 0 && errno == EINTR);
    if (n != 1) return child::Fail(error, ChildStep::kJoinCgroup, n < 0 ? errno : EIO, static_cast<int>(i));
  }
  return true;
}

bool CloseInheritedFds(const ChildSpec& spec, ChildError* error) noexcept {
  // Everything above stdio except the error pipe; the error pipe is O_CLOEXEC.
  unsigned int keep = static_cast<unsigned int>(spec.error_fd);
  if (keep > 3 && syscall(SYS_close_range, 3u, keep - 1, 0u) != 0) return child::Fail(error, ChildStep::kCloseFds, errno);
  if (syscall(SYS_close_range, keep + 1, ~0u, 0u) != 0) return child::Fail(error, ChildStep::kCloseFds, errno);
  return true;
}

[[noreturn]] void Exec(const ChildSpec& spec) noexcept {
  int err = ENOENT;
  for (size_t i = 0; i < spec.exec_candidate_count; ++i) {
    execve(spec.exec_candidates[i], spec.argv, spec.envp);
    // Like execvp(3): keep searching on ENOENT/ENOTDIR, remember EACCES.
    if (errno != ENOENT && errno != ENOTDIR) err = errno;
  }
  ChildError error;
  child::Fail(&error, ChildStep::kExec, err);
  Report(spec, error);
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
  }
  return "unknown step";
}

void RunChild(const ChildSpec& spec) noexcept {
  ResetSignals();
  ChildError error;
  bool ok = SetUpStdio(spec, &error) && JoinCgroups(spec, &error) && WaitForParent(spec, &error);
  if (ok && spec.unshare_cgroup && unshare(CLONE_NEWCGROUP) != 0) ok = child::Fail(&error, ChildStep::kUnshareCgroup, errno);
  if (ok && sethostname(spec.hostname, spec.hostname_len) != 0) ok = child::Fail(&error, ChildStep::kHostname, errno);
  if (ok && spec.loopback) ok = child::BringUpLoopback(&error);
  if (ok && spec.broker_sock >= 0) ok = child::SendBrokerListener(spec, &error);
  ok = ok && child::BuildMountTree(spec, &error);
  if (ok && chdir(spec.cwd) != 0) ok = child::Fail(&error, ChildStep::kChdir, errno);
  if (ok) {
    int resource = 0;
    int err = ApplyRlimits(*spec.rlimits, &resource);
    if (err != 0) ok = child::Fail(&error, ChildStep::kRlimit, err, resource);
  }
  if (ok && setsid() < 0) ok = child::Fail(&error, ChildStep::kSetsid, errno);
  ok = ok && CloseInheritedFds(spec, &error) && child::DropPrivileges(spec, &error) &&
       child::ApplyLandlock(spec, &error) && child::LoadSeccomp(spec, &error);
  if (!ok) Report(spec, error);
  Exec(spec);
}

}  // namespace cocoon::enforcer
