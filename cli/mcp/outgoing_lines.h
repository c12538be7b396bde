// The MCP server's stdout, written by a thread of its own.
//
// A client that stops reading its end of the pipe fills it, and then every
// write(2) blocks. Written inline, that stalled whichever thread wrote: a
// call's supervise loop streaming progress (the same loop enforces the wall
// clock, reads the cancel and answers seccomp notifications, so the sandbox
// outlived its limit), and the thread reading requests (answering a ping, so
// a cancel after it was never read). Here every thread only queues; one
// writer thread does the writes, in queue order (a call's progress always
// precedes its response: typescript-sdk#2580 drops progress read after it).
//
// Responses are always queued (one per request; the client asked for each).
// Progress and log notifications are best-effort: past `droppable_limit`
// bytes waiting, they are dropped, and the caller is told so.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace cocoon::mcp {

class OutgoingLines {
 public:
  using LineWriter = std::function<void(const std::string& line)>;  // blocking; without the newline

  OutgoingLines(LineWriter writer, size_t droppable_limit);
  // Waits for the queue to drain if the writer is making progress; a writer
  // stuck on a client that no longer reads is abandoned (its thread ends
  // with the process).
  ~OutgoingLines();
  OutgoingLines(const OutgoingLines&) = delete;
  OutgoingLines& operator=(const OutgoingLines&) = delete;

  void Send(std::string line);
  // A response of `bytes` bytes that `make` writes when its turn comes, on
  // the writer thread: a tool's answer is several times the output it
  // holds, and built when queued, every call's answer waiting for the
  // client held that much at once. One is built at a time; `make` must not
  // throw (its line is lost then).
  void SendDeferred(size_t bytes, std::function<std::string()> make);
  // Queues `line` only while less than droppable_limit bytes wait; false
  // when it was dropped.
  bool SendIfRoom(std::string line);
  // Blocks until everything queued so far is written, or `stop_fd` (if >= 0)
  // becomes readable. True when drained.
  bool Drain(int stop_fd = -1);
  // Blocks while more than `limit` bytes wait, or until `stop_fd` (if >= 0)
  // becomes readable (false then). The reader calls it before each read: a
  // client that writes requests but does not read the answers is no longer
  // read from, instead of growing the queue without bound.
  bool WaitForRoom(size_t limit, int stop_fd = -1);
  // Whether at most `limit` bytes wait (WaitForRoom without the wait).
  bool HasRoom(size_t limit) const;

 private:
  struct State;
  static void Run(const std::shared_ptr<State>& state);
  std::shared_ptr<State> state_;
};

}  // namespace cocoon::mcp
