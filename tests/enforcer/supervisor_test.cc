// The supervisor's poll loop on its own (LABELS unit): a real child's pidfd,
// pipes standing in for the output and the seccomp listener, and a handler
// standing in for NotifyResponder::HandleOne. Deterministic: every fd is
// ready (or not) before Supervise looks at it.
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "enforcer/supervisor.h"

namespace cocoon::enforcer {
namespace {

struct Pipe {
  int read_end = -1;
  int write_end = -1;
  Pipe() {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
      read_end = fds[0];
      write_end = fds[1];
    }
  }
  ~Pipe() {
    for (int fd : {read_end, write_end}) {
      if (fd >= 0) close(fd);
    }
  }
  void CloseWriteEnd() {
    close(write_end);
    write_end = -1;
  }
};

// A child that has already exited (not reaped: its pidfd is readable).
struct ExitedChild {
  pid_t pid = -1;
  int pidfd = -1;
  ExitedChild() {
    pid = fork();
    if (pid == 0) _exit(0);
    pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    siginfo_t info{};
    waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT);
  }
  ~ExitedChild() {
    if (pidfd >= 0) close(pidfd);
  }
};

// A notification that reaches the listener after the supervisor saw the
// command exit (here: queued while the output was drained in the same
// round) is still answered and recorded: a kill rule's call makes the run a
// kill-rule attempt. Before, the listener was no longer polled once the
// pidfd fired, and the call was lost (a run that made a kill-rule call and
// exited at the same time was "exited" and committed its work dir).
TEST(SupervisorTest, AKillRuleCallPendingWhenTheCommandExitsIsStillTaken) {
  ExitedChild child;
  ASSERT_GE(child.pidfd, 0);
  Pipe out_pipe, err_pipe, listener;
  ASSERT_EQ(write(out_pipe.write_end, "x", 1), 1);
  out_pipe.CloseWriteEnd();
  err_pipe.CloseWriteEnd();
  // The output arrives, and while it is drained a notification is queued.
  OutputCallback on_output = [&](OutputStream, std::string_view) { (void)!write(listener.write_end, "n", 1); };
  OutputCapture out(OutputStream::kStdout, 1 << 20, OutputMode::kCapture, &on_output);
  OutputCapture err(OutputStream::kStderr, 1 << 20, OutputMode::kCapture, nullptr);
  int handled = 0;
  SuperviseInputs inputs;
  inputs.pid = child.pid;
  inputs.pidfd = child.pidfd;
  inputs.stdout_fd = out_pipe.read_end;
  inputs.stderr_fd = err_pipe.read_end;
  inputs.listener_fd = listener.read_end;
  inputs.start = std::chrono::steady_clock::now();
  inputs.on_notification = [&](int fd) {
    char byte;
    EXPECT_EQ(read(fd, &byte, 1), 1);
    ++handled;
    return false;  // a kill rule fired
  };
  auto result = Supervise(inputs, out, err);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(handled, 1) << "the notification queued at the exit was not taken";
  EXPECT_TRUE(result->killed_by_notify);
  EXPECT_TRUE(WIFEXITED(result->wait_status));
}

// When the listener and the output are ready at once, the listener is
// answered first, so that a call is taken before its process can exit.
TEST(SupervisorTest, TheListenerIsAnsweredBeforeTheOutputIsDrained) {
  pid_t pid = fork();
  if (pid == 0) {
    pause();
    _exit(0);
  }
  int pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  ASSERT_GE(pidfd, 0);
  Pipe out_pipe, err_pipe, listener;
  ASSERT_EQ(write(out_pipe.write_end, "x", 1), 1);
  out_pipe.CloseWriteEnd();
  err_pipe.CloseWriteEnd();
  ASSERT_EQ(write(listener.write_end, "nn", 2), 2);
  std::vector<std::string> order;
  OutputCallback on_output = [&](OutputStream, std::string_view) { order.push_back("output"); };
  OutputCapture out(OutputStream::kStdout, 1 << 20, OutputMode::kCapture, &on_output);
  OutputCapture err(OutputStream::kStderr, 1 << 20, OutputMode::kCapture, nullptr);
  SuperviseInputs inputs;
  inputs.pid = pid;
  inputs.pidfd = pidfd;
  inputs.stdout_fd = out_pipe.read_end;
  inputs.stderr_fd = err_pipe.read_end;
  inputs.listener_fd = listener.read_end;
  inputs.start = std::chrono::steady_clock::now();
  inputs.on_notification = [&](int fd) {
    char byte;
    EXPECT_EQ(read(fd, &byte, 1), 1);
    order.push_back("notification");
    return order.size() < 2;  // the second is a kill rule's: the child is killed
  };
  auto result = Supervise(inputs, out, err);
  close(pidfd);
  ASSERT_TRUE(result.ok()) << result.status().ToString();
  EXPECT_EQ(order, (std::vector<std::string>{"notification", "notification", "output"}));
  EXPECT_TRUE(result->killed_by_notify);
  EXPECT_TRUE(WIFSIGNALED(result->wait_status) && WTERMSIG(result->wait_status) == SIGKILL);
}

}  // namespace
}  // namespace cocoon::enforcer
