#include "cli/pass_through.h"

#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "cli/run_output_util.h"

namespace cocoon::cli {

void PassThroughWriter::Fail(int error) {
  reader_gone_ = true;
  error_ = error;
  pending_.clear();
}

void PassThroughWriter::Write(std::string_view data) {
  if (reader_gone_) return;  // keep supervising, drop output
  pending_.append(data);
  WriteWhatFits();
}

void PassThroughWriter::WriteWhatFits() {
  size_t done = 0;
  while (done < pending_.size()) {
    struct pollfd p {fd_, POLLOUT, 0};
    int ready = poll(&p, 1, 0);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) break;  // full: the rest waits for the next call or Flush
    if ((p.revents & POLLOUT) == 0) {  // POLLERR/POLLHUP: the reader went away
      Fail(0);
      return;
    }
    size_t size = std::min<size_t>(pending_.size() - done, PIPE_BUF);
    ssize_t n = write(fd_, pending_.data() + done, size);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      Fail(n < 0 ? errno : 0);
      return;
    }
    done += static_cast<size_t>(n);
  }
  pending_.erase(0, done);
}

bool PassThroughWriter::Flush() {
  if (!reader_gone_ && !pending_.empty()) {
    // As while the sandbox ran (SignalGuard): a reader that went away is an
    // EPIPE error here, not the end of cocoon before it reports the run.
    sigset_t pipe_only, old;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
    if (!WriteAllFd(fd_, pending_)) {
      reader_gone_ = true;
      error_ = errno;
    }
    if (!sigismember(&old, SIGPIPE)) {
      struct timespec zero {};
      sigtimedwait(&pipe_only, nullptr, &zero);  // consume the SIGPIPE our write raised, if any
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  pending_.clear();
  return !reader_gone_;
}

}  // namespace cocoon::cli
