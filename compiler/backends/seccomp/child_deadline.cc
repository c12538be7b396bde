#include "compiler/backends/seccomp/child_deadline.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cocoon::backends {
namespace {

constexpr char kDone = '\n';  // after the last step; labels are NUL-terminated

void WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) _exit(2);
    data += n;
    size -= static_cast<size_t>(n);
  }
}

}  // namespace

Status RunInChildWithDeadline(const std::function<void(const std::function<void(const char*)>& progress)>& work,
                              std::chrono::milliseconds deadline, std::string* stuck_at) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("pipe2 for the libseccomp watchdog");
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(fds[0]);
    close(fds[1]);
    return ErrnoError("fork for the libseccomp watchdog", err);
  }
  if (pid == 0) {
    close(fds[0]);
    // Nothing may unwind out of here: the child would go on as a second copy
    // of the caller.
    try {
      work([&](const char* label) { WriteAll(fds[1], label, std::strlen(label) + 1); });
    } catch (...) {
      _exit(4);
    }
    WriteAll(fds[1], &kDone, 1);
    _exit(0);
  }
  close(fds[1]);
  std::string received;
  bool done = false;
  bool timed_out = false;
  int watch_error = 0;  // poll or read failed in this process
  const auto until = std::chrono::steady_clock::now() + deadline;
  while (!done) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) timed_out = true;
    if (ready < 0) watch_error = errno;
    if (ready <= 0) break;
    char buf[512];
    const ssize_t n = read(fds[0], buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) watch_error = errno;
    if (n <= 0) break;  // an error, or the child died without saying it was done
    received.append(buf, static_cast<size_t>(n));
    done = !received.empty() && received.back() == kDone;
  }
  close(fds[0]);
  if (!done) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (done && WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  // The label of the step the child was in: the last complete one.
  if (!received.empty() && received.back() == kDone) received.pop_back();
  if (!received.empty() && received.back() == '\0') received.pop_back();
  const size_t start = received.rfind('\0');
  if (stuck_at != nullptr) *stuck_at = start == std::string::npos ? received : received.substr(start + 1);
  if (watch_error != 0) return ErrnoError("watching the child process", watch_error);
  if (timed_out) return ResourceExhaustedError("did not finish within " + std::to_string(deadline.count()) + " ms");
  // It died (a crash, an abort, the OOM killer) or exited early: not a loop.
  const std::string how = WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                              : "exited with status " + std::to_string(WEXITSTATUS(status));
  return InternalError("the child process " + how);
}

}  // namespace cocoon::backends
