// Child side, network off: the sandbox's network namespace is made by a
// helper process, in parallel with the mount tree, instead of by clone3.
//
// Why: creating a network namespace is the most expensive namespace by far
// (~0.5 ms here: setup_net registers loopback, its sysctl tables and IPv6
// addrconf), and it runs in the context of the task that asks for it. The
// sandbox's init (A) forks a helper (B) right after its uid/gid maps; B
// unshares CLONE_NEWNET and brings "lo" up while A, on the other CPU,
// builds its mount tree. A then joins B's namespace with setns(pidfd,
// CLONE_NEWNET) (Linux 5.8) before anything of the command runs, and
// releases B. The namespace is owned by the sandbox's user namespace (B is
// A's child in it), exactly as with clone3(CLONE_NEWNET).
//
// Until the setns, A is in the host's network namespace but has no
// capability there and does nothing network-related; if B or the setns
// fails, the run is refused (step "network namespace").
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/sched.h>

#include <cerrno>

#include "enforcer/child_steps.h"

namespace cocoon::enforcer::child {
namespace {

bool ReadAll(int fd, void* data, size_t size) noexcept {
  ssize_t n;
  do {
    n = read(fd, data, size);
  } while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(size);
}

[[noreturn]] void RunHelper(int ready_fd, int release_fd) noexcept {
  ChildError status;
  if (unshare(CLONE_NEWNET) != 0) {
    Fail(&status, ChildStep::kNetns, errno, 1);
  } else {
    BringUpLoopback(&status);
  }
  ssize_t ignored = write(ready_fd, &status, sizeof(status));
  (void)ignored;
  // Holds the namespace alive until A has joined it (EOF on release_fd).
  char byte;
  ReadAll(release_fd, &byte, 1);
  _exit(0);
}

}  // namespace

bool StartNetnsHelper(NetnsHelper* helper, ChildError* error) noexcept {
  int ready[2];
  int release[2];
  if (pipe2(ready, O_CLOEXEC) != 0) return Fail(error, ChildStep::kNetns, errno, 2);
  if (pipe2(release, O_CLOEXEC) != 0) {
    int err = errno;
    close(ready[0]);
    close(ready[1]);
    return Fail(error, ChildStep::kNetns, err, 2);
  }
  struct clone_args args {};
  args.flags = CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(&helper->pidfd);
  args.exit_signal = SIGCHLD;
  long rc = syscall(SYS_clone3, &args, sizeof(args));
  if (rc == 0) {
    close(ready[0]);
    close(release[1]);
    RunHelper(ready[1], release[0]);
  }
  int err = errno;
  close(ready[1]);
  close(release[0]);
  if (rc < 0) {
    close(ready[0]);
    close(release[1]);
    return Fail(error, ChildStep::kNetns, err, 3);
  }
  helper->pid = static_cast<pid_t>(rc);
  helper->ready_fd = ready[0];
  helper->release_fd = release[1];
  return true;
}

bool JoinNetnsHelper(NetnsHelper* helper, ChildError* error) noexcept {
  ChildError status;
  if (!ReadAll(helper->ready_fd, &status, sizeof(status))) return Fail(error, ChildStep::kNetns, EPIPE, 4);
  close(helper->ready_fd);
  helper->ready_fd = -1;
  if (status.err != 0) {
    *error = status;
    return false;
  }
  if (setns(helper->pidfd, CLONE_NEWNET) != 0) return Fail(error, ChildStep::kNetns, errno, 5);
  close(helper->release_fd);  // B exits; ReapNetnsHelper collects it later
  helper->release_fd = -1;
  return true;
}

void ReapNetnsHelper(NetnsHelper* helper) noexcept {
  if (helper->pid <= 0) return;
  while (waitpid(helper->pid, nullptr, 0) < 0 && errno == EINTR) {
  }
  close(helper->pidfd);
  helper->pid = -1;
  helper->pidfd = -1;
}

}  // namespace cocoon::enforcer::child
