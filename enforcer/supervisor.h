// The parent's watch over a running sandbox (issue 4, "Supervision"): one
// poll(2) loop over the stdout/stderr pipes, the child's pidfd, the seccomp
// listener, a signalfd (SIGINT/SIGTERM/SIGHUP) and the cancel eventfd, with
// the wall-clock deadline as the poll timeout. Single-threaded: no locks, no
// deadlock on chatty programs (both pipes are always drained), bounded memory
// (bytes past the cap are counted and dropped, never stored).
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "enforcer/outcome.h"
#include "enforcer/sandbox.h"

namespace cocoon::enforcer {

// One captured stream: the first `cap` bytes, the total count, truncation.
class OutputCapture {
 public:
  OutputCapture(OutputStream stream, uint64_t cap, OutputMode mode, const OutputCallback* callback)
      : stream_(stream), cap_(cap), mode_(mode), callback_(callback) {}
  void Append(const char* data, size_t size);
  std::string& data() { return data_; }
  uint64_t total() const { return total_; }
  bool truncated() const { return truncated_; }

 private:
  OutputStream stream_;
  uint64_t cap_;
  OutputMode mode_;
  const OutputCallback* callback_;
  std::string data_;
  uint64_t total_ = 0;
  uint64_t delivered_ = 0;
  bool truncated_ = false;
};

// Answers seccomp user notifications; returns false if the sandbox must be
// killed (a kill rule fired). Implemented by notify.cc.
using NotificationHandler = std::function<bool(int listener_fd)>;

struct SuperviseInputs {
  pid_t pid = -1;
  int pidfd = -1;
  int stdout_fd = -1;  // read ends, non-blocking
  int stderr_fd = -1;
  int listener_fd = -1;
  int cancel_fd = -1;
  int signal_fd = -1;
  uint64_t timeout_ms = 0;  // 0: none
  std::chrono::steady_clock::time_point start;
  NotificationHandler on_notification;
};

struct SuperviseResult {
  int wait_status = 0;
  struct rusage usage {};
  // The command's own CPU time (ms), without the children it reaped, which
  // `usage` includes; nullopt when /proc could not say (supervisor.cc).
  std::optional<uint64_t> own_cpu_ms;
  bool timed_out = false;
  bool cancelled = false;
  // A kill rule's call was taken through user notification (also one taken
  // as the command exited): the run is a kill-rule attempt (finish.cc).
  bool killed_by_notify = false;
  uint64_t wall_ms = 0;
};

// Runs until the sandbox's init has exited and both pipes are at EOF (or a
// short grace period after the exit has passed), then reaps it. Kills the
// whole sandbox (SIGKILL to the pid namespace's init) on timeout, cancel or
// signal.
Result<SuperviseResult> Supervise(const SuperviseInputs& inputs, OutputCapture& out, OutputCapture& err);

}  // namespace cocoon::enforcer
