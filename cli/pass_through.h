// Live output to cocoon's own stdout/stderr while a sandbox runs, without
// ever blocking the supervisor.
//
// The supervisor calls the output callback from its poll loop; a write that
// blocks there (a caller that stops reading the pipe, a terminal paused with
// Ctrl-S) would stop the loop, and with it the wall-clock limit, the
// cancellation by SIGINT/SIGTERM and the draining of the other stream. So
// Write hands the kernel only what the fd takes at once (poll with no wait,
// then at most PIPE_BUF bytes, which a ready pipe or tty accepts whole) and
// keeps the rest; Flush, once the sandbox is gone, writes what is left,
// blocking as an ordinary write would. What is kept is bounded by the
// policy's output cap per stream: the supervisor delivers no more than that.
#pragma once

#include <string>
#include <string_view>

namespace cocoon::cli {

class PassThroughWriter {
 public:
  explicit PassThroughWriter(int fd) : fd_(fd) {}
  // Never blocks.
  void Write(std::string_view data);
  // Writes what is pending, blocking; false if the reader went away (or a
  // write failed otherwise: a full disk), now or while the sandbox ran.
  bool Flush();
  // The errno of the write that failed (0: none, or the reader hung up).
  int error() const { return error_; }

 private:
  void WriteWhatFits();
  void Fail(int error);
  int fd_;
  std::string pending_;
  bool reader_gone_ = false;
  int error_ = 0;
};

}  // namespace cocoon::cli
