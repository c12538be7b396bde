#include "enforcer/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace cocoon::enforcer {
namespace {

using Clock = std::chrono::steady_clock;

// After init exits, every process of the pid namespace is SIGKILLed by the
// kernel (pid_namespaces(7)), so the pipes reach EOF almost at once. The grace
// period only guards against a writer we do not know about.
constexpr auto kDrainGrace = std::chrono::milliseconds(2000);

// Notifications answered per wake-up before the output gets its turn, and
// at most drained from the listener once the command has exited (a dead
// task's notification is gone from it, so this is only what was queued).
constexpr int kMaxPerRound = 64;
constexpr int kMaxDrainedAtExit = 4096;

uint64_t MillisSince(Clock::time_point start) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count());
}

void KillSandbox(int pidfd) {
  // SIGKILL to the namespace's init kills every process in it.
  syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, nullptr, 0);
}

// Reads what is available without blocking; returns false at EOF or error.
// The CPU time (user + system, ms) the exited, not yet reaped, process
// `pid` used itself, without its reaped children: fields 14 and 15 of
// /proc/PID/stat, which a zombie keeps until it is reaped (proc(5)). wait4's
// rusage adds the children the command reaped, and RLIMIT_CPU counts a
// process's own time only, so only this says whether the CPU limit can have
// killed it. nullopt when it cannot be read.
std::optional<uint64_t> OwnCpuMillis(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  char text[1024];
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return std::nullopt;
  text[n] = '\0';
  // The command name (field 2) is in parentheses and may hold spaces and
  // parentheses itself: the fields after it start past the LAST ')'.
  const char* rest = strrchr(text, ')');
  if (rest == nullptr) return std::nullopt;
  unsigned long long utime = 0, stime = 0;
  // state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime
  if (sscanf(rest + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) != 2) {
    return std::nullopt;
  }
  const long ticks_per_second = sysconf(_SC_CLK_TCK);
  if (ticks_per_second <= 0) return std::nullopt;
  return (utime + stime) * 1000 / static_cast<unsigned long long>(ticks_per_second);
}

// Whether `fd` has input now (poll with a zero timeout).
bool ReadableNow(int fd) {
  struct pollfd p = {fd, POLLIN, 0};
  int ready;
  do {
    ready = poll(&p, 1, 0);
  } while (ready < 0 && errno == EINTR);
  return ready > 0 && (p.revents & POLLIN) != 0;
}

// Answers the notifications pending on the listener, up to `max` (so output
// is not starved by a flood), without ever blocking: SECCOMP_IOCTL_NOTIF_RECV
// waits when none is pending, so each is taken only after poll said one is
// there (a notification whose task died in between makes RECV fail with
// ENOENT at once, seccomp_notify_recv). Returns false if a kill rule fired.
bool AnswerPending(const NotificationHandler& handler, int listener_fd, int max) {
  for (int i = 0; i < max && ReadableNow(listener_fd); ++i) {
    if (!handler(listener_fd)) return false;
  }
  return true;
}

bool Drain(int fd, OutputCapture& capture) {
  char buffer[65536];
  for (int rounds = 0; rounds < 16; ++rounds) {  // bounded so the other stream is not starved
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      capture.Append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN;
  }
  return true;
}

}  // namespace

void OutputCapture::Append(const char* data, size_t size) {
  total_ += size;
  if (delivered_ >= cap_) {
    truncated_ = true;
    return;
  }
  size_t keep = static_cast<size_t>(std::min<uint64_t>(size, cap_ - delivered_));
  if (keep < size) truncated_ = true;
  delivered_ += keep;
  if (mode_ == OutputMode::kCapture) data_.append(data, keep);
  if (callback_ != nullptr && *callback_) (*callback_)(stream_, std::string_view(data, keep));
}

Result<SuperviseResult> Supervise(const SuperviseInputs& inputs, OutputCapture& out, OutputCapture& err) {
  SuperviseResult result;
  int stdout_fd = inputs.stdout_fd;
  int stderr_fd = inputs.stderr_fd;
  int listener_fd = inputs.listener_fd;
  bool exited = false;
  bool killed = false;
  Clock::time_point exit_time;
  auto deadline = inputs.timeout_ms > 0 ? inputs.start + std::chrono::milliseconds(inputs.timeout_ms) : Clock::time_point::max();

  // A kill rule fired (`answered` false): recorded as such even when the
  // sandbox was already being killed or had exited (the run then ends as a
  // kill-rule attempt unless it was cancelled or timed out first; finish.cc).
  auto on_kill_rule = [&](bool answered) {
    if (answered) return;
    result.killed_by_notify = true;
    if (!killed && !exited) KillSandbox(inputs.pidfd);
    killed = true;
  };
  while (true) {
    if (exited && stdout_fd < 0 && stderr_fd < 0) break;
    if (exited && Clock::now() - exit_time > kDrainGrace) break;
    struct pollfd fds[6];
    int count = 0;
    auto add = [&](int fd) {
      if (fd >= 0) fds[count++] = {fd, POLLIN, 0};
    };
    // The listener comes first, so that it is answered before the output is
    // drained when both are ready: a task blocked in a notification dies
    // unrecorded if the process exits before the notification is received
    // (docs/security.md, "Supervision").
    if (!exited) add(listener_fd);
    add(stdout_fd);
    add(stderr_fd);
    if (!exited) {
      add(inputs.pidfd);
      if (!killed) {
        add(inputs.cancel_fd);
        add(inputs.signal_fd);
      }
    }
    int timeout = -1;
    auto now = Clock::now();
    if (exited) {
      timeout = 100;
    } else if (!killed && deadline != Clock::time_point::max()) {
      timeout = deadline <= now ? 0 : static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count()) + 1;
    }
    int ready = poll(fds, static_cast<nfds_t>(count), timeout);
    if (ready < 0 && errno != EINTR) return ErrnoError("poll");
    if (!killed && !exited && Clock::now() >= deadline) {
      result.timed_out = true;
      killed = true;
      KillSandbox(inputs.pidfd);
    }
    for (int i = 0; ready > 0 && i < count; ++i) {
      if (fds[i].revents == 0) continue;
      int fd = fds[i].fd;
      if (fd == stdout_fd) {
        if (!Drain(fd, out)) stdout_fd = -1;
      } else if (fd == stderr_fd) {
        if (!Drain(fd, err)) stderr_fd = -1;
      } else if (fd == inputs.pidfd) {
        exited = true;
        exit_time = Clock::now();
        result.wall_ms = MillisSince(inputs.start);
        // What the listener still holds is no longer polled: answer (and
        // record) it now. A kill rule's call received here ends the run as a
        // kill-rule attempt although the command also exited.
        if (listener_fd >= 0 && inputs.on_notification) {
          on_kill_rule(AnswerPending(inputs.on_notification, listener_fd, kMaxDrainedAtExit));
        }
      } else if (fd == listener_fd) {
        if ((fds[i].revents & POLLIN) != 0 && inputs.on_notification) {
          on_kill_rule(inputs.on_notification(fd) && AnswerPending(inputs.on_notification, fd, kMaxPerRound));
        } else if ((fds[i].revents & (POLLHUP | POLLERR)) != 0) {
          listener_fd = -1;
        }
      } else if (fd == inputs.cancel_fd || fd == inputs.signal_fd) {
        if (fd == inputs.signal_fd) {
          struct signalfd_siginfo info;
          ssize_t ignored = read(fd, &info, sizeof(info));
          (void)ignored;
        }
        result.cancelled = true;
        killed = true;
        KillSandbox(inputs.pidfd);
      }
    }
  }
  if (!exited) result.wall_ms = MillisSince(inputs.start);
  // Read while the command is a zombie: reaping it removes /proc/PID.
  if (exited) result.own_cpu_ms = OwnCpuMillis(inputs.pid);
  pid_t reaped;
  do {
    reaped = wait4(inputs.pid, &result.wait_status, 0, &result.usage);
  } while (reaped < 0 && errno == EINTR);
  if (reaped < 0) return ErrnoError("wait4 sandbox init");
  return result;
}

}  // namespace cocoon::enforcer
