#include "enforcer/stdin_relay.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace cocoon::enforcer {
namespace {

constexpr size_t kChunk = 64 * 1024;

// Waits until `fd` reports `events` (true) or the stop fd fires or `fd`
// fails (false).
bool WaitFor(int fd, short events, int stop) {
  while (true) {
    struct pollfd fds[2] = {{fd, events, 0}, {stop, POLLIN, 0}};
    int ready = poll(fds, 2, -1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0 || fds[1].revents != 0) return false;
    if (fds[0].revents & events) return true;
    if (fds[0].revents != 0) return false;  // POLLERR/POLLHUP/POLLNVAL: the sandbox closed its end
  }
}

}  // namespace

Result<std::unique_ptr<StdinRelay>> StdinRelay::Start(int source, OwnedFd* sandbox_end) {
  OwnedFd copy(fcntl(source, F_DUPFD_CLOEXEC, 3));
  if (!copy.valid()) return ErrnoError("stdin: dup");
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("stdin: pipe");
  OwnedFd read_end(fds[0]), write_end(fds[1]);
  // Our end alone is non-blocking (the sandbox holds the other end, a
  // separate open file), so the copy never blocks where poll cannot see it.
  if (fcntl(write_end.get(), F_SETFL, O_NONBLOCK) != 0) return ErrnoError("stdin: pipe O_NONBLOCK");
  OwnedFd go(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)), stop(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!go.valid() || !stop.valid()) return ErrnoError("stdin: eventfd");
  std::unique_ptr<StdinRelay> relay(
      new StdinRelay(std::move(copy), std::move(write_end), std::move(go), std::move(stop)));
  *sandbox_end = std::move(read_end);
  return relay;
}

StdinRelay::StdinRelay(OwnedFd source, OwnedFd pipe_write, OwnedFd go, OwnedFd stop)
    : source_(std::move(source)), pipe_write_(std::move(pipe_write)), go_(std::move(go)), stop_(std::move(stop)),
      thread_([this] { Copy(); }) {}

void StdinRelay::Go() {
  uint64_t one = 1;
  ssize_t ignored = write(go_.get(), &one, sizeof(one));
  (void)ignored;
}

StdinRelay::~StdinRelay() {
  uint64_t one = 1;
  ssize_t ignored = write(stop_.get(), &one, sizeof(one));
  (void)ignored;
  thread_.join();
}

void StdinRelay::Copy() {
  // No signal is this thread's business: the launch's own thread handles
  // SIGINT and the like, and a SIGPIPE from a write racing the sandbox's
  // close must not end cocoon (a blocked thread-directed signal is dropped
  // when the thread exits). Faults stay deliverable.
  sigset_t blocked;
  sigfillset(&blocked);
  for (int fault : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS}) sigdelset(&blocked, fault);
  pthread_sigmask(SIG_BLOCK, &blocked, nullptr);
  if (!WaitFor(go_.get(), POLLIN, stop_.get())) return;  // never adopted: read nothing
  std::vector<char> buffer(kChunk);
  while (WaitFor(source_.get(), POLLIN, stop_.get())) {
    ssize_t n = read(source_.get(), buffer.data(), buffer.size());
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // EOF (or an error: the sandbox sees EOF either way)
    for (size_t done = 0; done < static_cast<size_t>(n);) {
      if (!WaitFor(pipe_write_.get(), POLLOUT, stop_.get())) return;
      ssize_t wrote = write(pipe_write_.get(), buffer.data() + done, static_cast<size_t>(n) - done);
      if (wrote < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (wrote < 0) return;  // EPIPE: the sandbox closed its end
      done += static_cast<size_t>(wrote);
    }
  }
  pipe_write_.Reset();  // EOF for the sandbox
}

}  // namespace cocoon::enforcer
