// The connect broker (net_broker.h): decides connect notifications, opens
// allowed connections from the host and relays them into the sandbox.
#include "enforcer/net_broker.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

namespace cocoon::enforcer {
namespace {

using Clock = std::chrono::steady_clock;

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL  // <linux/pidfd.h>, Linux 6.9
#endif

// The Outcome's denied destinations (NetworkReport): a bounded list, so a
// sandbox can flood it, but only with destinations of its own kind: rows
// for internal ones (IpEndpoint::IsInternal: private, link-local, the
// metadata service) have their own cap, which public decoys cannot use up.
constexpr size_t kMaxDenialRows = 256;
constexpr size_t kMaxInternalDenialRows = 64;
constexpr size_t kRelayBuffer = 64 * 1024;  // per direction: bounded memory per connection
constexpr char kMechanism[] =
    "network namespace (loopback only) + seccomp user-notification connect broker (TCP, host-side connect, "
    "relayed through an in-namespace listener)";

// seccomp_unotify(2): the id is only meaningful while the target is still
// blocked in the same syscall. Checked after every read of the target's
// memory (and after pidfd_open), because a pid can be recycled between
// SECCOMP_IOCTL_NOTIF_RECV and our look.
bool IdValid(int notify_fd, uint64_t id) {
  return ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

bool Answer(int notify_fd, uint64_t id, int err, uint32_t flags = 0) {
  struct seccomp_notif_resp response {};
  response.id = id;
  response.error = err == 0 ? 0 : -err;
  response.val = 0;
  response.flags = flags;
  return ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_SEND, &response) == 0;
}

// Lets the kernel run the connect as if unfiltered. Safe only because it
// then runs inside the sandbox's network namespace (see HandleConnect).
void Continue(int notify_fd, uint64_t id) { Answer(notify_fd, id, 0, SECCOMP_USER_NOTIF_FLAG_CONTINUE); }

// The thread group a thread id belongs to (/proc/TID/status), or -1.
pid_t ThreadGroupOf(pid_t tid) {
  std::string path = "/proc/" + std::to_string(tid) + "/status";
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char text[2048];
  ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (n <= 0) return -1;
  text[n] = '\0';
  const char* line = strstr(text, "\nTgid:");
  return line == nullptr ? -1 : static_cast<pid_t>(strtol(line + 6, nullptr, 10));
}

// The notification's pid is a thread id in our pid namespace. PIDFD_THREAD
// (6.9+) names that very thread (its fd table, if it was cloned without
// CLONE_FILES). Older kernels give pidfds to thread-group leaders only, so a
// connect from any other thread (Go, Java, threaded Python) falls back to its
// leader's: pidfd_getfd then reads the group's fd table, which is the
// thread's unless it was cloned without CLONE_FILES (then the number may name
// another file; the type check refuses a non-TCP one, and any TCP socket of
// the sandbox reaches only this allowed endpoint). The caller re-checks the
// notification id after this, so a recycled tid is never used.
int OpenTaskPidfd(pid_t tid) {
  int fd = static_cast<int>(syscall(SYS_pidfd_open, tid, PIDFD_THREAD));
  if (fd >= 0 || errno != EINVAL) return fd;
  fd = static_cast<int>(syscall(SYS_pidfd_open, tid, 0));
  if (fd >= 0 || errno != EINVAL) return fd;
  pid_t leader = ThreadGroupOf(tid);
  return leader > 0 ? static_cast<int>(syscall(SYS_pidfd_open, leader, 0)) : -1;
}

// Workers make calls on sockets they share with the sandbox, and two of those
// can block for as long as the sandbox likes: a connect whose O_NONBLOCK the
// sandbox cleared between our F_SETFL and the call (file status flags belong
// to the open file, which the sandbox holds too, so no flag we set is ours;
// with TCP_SYNCNT raised and the listener's backlog full it retries for
// hours), and a close that lingers (SO_LINGER set by the sandbox, a send
// queue that never drains) when ours is the last reference. Neither has a
// timeout the sandbox cannot change. Both give up when a signal arrives:
// InterruptSignal(), a handler that does nothing, installed without
// SA_RESTART, and unblocked in worker threads only. A worker's inside
// connect is bounded by a per-thread timer that sends it (InterruptAlarm),
// and Shutdown sends it to every worker still running. An interrupted
// connect fails with EINTR; an interrupted close still releases the fd. The
// calls of the thread that supervises the run never touch a sandbox socket.
int InterruptSignal() { return SIGRTMIN + 4; }  // glibc keeps SIGRTMIN+0..2 for itself

void InstallInterruptHandler() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_handler = [](int) {};
    sigemptyset(&action.sa_mask);
    action.sa_flags = 0;  // no SA_RESTART: the blocked call must return
    sigaction(InterruptSignal(), &action, nullptr);
  });
}

void UnblockInterruptSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, InterruptSignal());
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid  // timer_create(2); glibc < 2.35 lacks the name
#endif

// Sends InterruptSignal to the calling thread at `deadline`, then every
// 10 ms (in case one lands just before the call it is meant to end), until
// destroyed: a call on a sandbox socket made meanwhile cannot outlive the
// deadline, whatever the sandbox did to the socket's flags or timeouts.
class InterruptAlarm {
 public:
  explicit InterruptAlarm(Clock::time_point deadline) {
    struct sigevent event {};
    event.sigev_notify = SIGEV_THREAD_ID;
    event.sigev_signo = InterruptSignal();
    event.sigev_notify_thread_id = gettid();
    if (timer_create(CLOCK_MONOTONIC, &event, &timer_) != 0) return;
    auto left = std::max<int64_t>(
        1, std::chrono::duration_cast<std::chrono::nanoseconds>(deadline - Clock::now()).count());
    struct itimerspec spec {};
    spec.it_value.tv_sec = static_cast<time_t>(left / 1000000000);
    spec.it_value.tv_nsec = static_cast<long>(left % 1000000000);
    spec.it_interval.tv_nsec = 10 * 1000 * 1000;
    armed_ = timer_settime(timer_, 0, &spec, nullptr) == 0;
    if (!armed_) timer_delete(timer_);
  }
  ~InterruptAlarm() {
    if (armed_) timer_delete(timer_);  // a signal still pending only interrupts a later call once (EINTR)
  }
  InterruptAlarm(const InterruptAlarm&) = delete;
  InterruptAlarm& operator=(const InterruptAlarm&) = delete;
  bool armed() const { return armed_; }

 private:
  timer_t timer_{};
  bool armed_ = false;
};

// A connect on a socket that is not in TCP_CLOSE never starts a new
// connection: it fails at once (non-blocking), or (blocking) waits for the
// one under way, which the sandbox can keep pending for hours. So the broker
// refuses it with what a non-blocking connect(2) answers
// (net/ipv4/af_inet.c __inet_stream_connect): EALREADY while a handshake is
// under way, EISCONN otherwise. Returns 0 for a socket it may connect.
int ConnectStateError(int fd) {
  struct tcp_info info {};
  socklen_t len = sizeof(info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return errno;
  if (info.tcpi_state == TCP_CLOSE) return 0;
  return info.tcpi_state == TCP_SYN_SENT || info.tcpi_state == TCP_SYN_RECV ? EALREADY : EISCONN;
}

// Waits for `events` on `fd` or for the stop eventfd; returns the poll
// revents of `fd`, 0 on timeout, -1 when stopped.
int WaitFor(int fd, short events, int stop_fd, Clock::time_point deadline) {
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return 0;
    struct pollfd fds[2] = {{fd, events, 0}, {stop_fd, POLLIN, 0}};
    int ready = poll(fds, 2, static_cast<int>(left));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return -1;
    if (fds[1].revents != 0) return -1;
    if (fds[0].revents != 0) return fds[0].revents;
  }
}

bool Stopped(int stop_fd) {
  struct pollfd fd = {stop_fd, POLLIN, 0};
  return poll(&fd, 1, 0) > 0;
}

int SocketError(int fd) {
  int err = 0;
  socklen_t len = sizeof(err);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) return errno;
  return err;
}

bool LocalEndpoint(int fd, IpEndpoint* out, bool peer) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  int rc = peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&addr), &len)
                : getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  return rc == 0 && ParseInetSockaddr(&addr, len, out);
}

bool IsTcpStream(int fd) {
  int type = 0, protocol = 0;
  socklen_t len = sizeof(int);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) return false;
  len = sizeof(int);
  return getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) == 0 && protocol == IPPROTO_TCP;
}

}  // namespace

NetBroker::NetBroker(ResolvedAllowList allow, int inside_listener, int stop_fd, NetBrokerOptions options)
    : allow_(std::move(allow)), inside_listener_(inside_listener), stop_fd_(stop_fd), options_(options) {
  report_.mode = "allow-list";
  report_.mechanism = kMechanism;
  report_.allowed = allow_.Describe();
}

Result<std::unique_ptr<NetBroker>> NetBroker::Create(ResolvedAllowList allow, int inside_listener,
                                                     NetBrokerOptions options) {
  IpEndpoint local;
  if (inside_listener < 0 || !LocalEndpoint(inside_listener, &local, false) || !local.IsLoopback()) {
    if (inside_listener >= 0) close(inside_listener);
    return InternalError("the sandbox's broker listener is not a loopback TCP socket");
  }
  // Ours alone (the child closed its copy before exec), so its flags are
  // ours to set: accepts never block.
  int listener_flags = fcntl(inside_listener, F_GETFL);
  if (listener_flags < 0 || fcntl(inside_listener, F_SETFL, listener_flags | O_NONBLOCK) != 0) {
    close(inside_listener);
    return ErrnoError("the broker listener's O_NONBLOCK");
  }
  int stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd < 0) {
    close(inside_listener);
    return ErrnoError("eventfd");
  }
  InstallInterruptHandler();
  return std::unique_ptr<NetBroker>(new NetBroker(std::move(allow), inside_listener, stop_fd, options));
}

NetBroker::~NetBroker() {
  Shutdown();
  close(stop_fd_);
  close(inside_listener_);
}

void NetBroker::Shutdown() {
  std::vector<Worker> workers;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (shut_down_) return;
    shut_down_ = true;
    workers = std::move(workers_);
  }
  uint64_t one = 1;
  ssize_t ignored = write(stop_fd_, &one, sizeof(one));  // every worker polls it
  (void)ignored;
  // A worker that polls returns at once; one still running after a moment
  // is blocked in a call on the sandbox's socket (see InterruptSignal) or
  // waits for accept_mutex_: interrupt every such worker, again and again,
  // since the signal may land just before it enters the call. All of them
  // on each pass: the one that blocks may be any of them, and the others
  // may wait for it.
  for (int waited_ms = 0;; ++waited_ms) {
    bool running = false;
    for (auto& worker : workers) {
      if (worker.done->load()) continue;
      running = true;
      if (waited_ms >= 2) pthread_kill(worker.thread.native_handle(), InterruptSignal());
    }
    if (!running) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  for (auto& worker : workers) worker.thread.join();
}

NetworkReport NetBroker::Report() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return report_;
}

void NetBroker::Deny(int notify_fd, uint64_t id, const IpEndpoint& destination, const char* reason, int err) {
  Answer(notify_fd, id, err);
  std::lock_guard<std::mutex> lock(mutex_);
  ++report_.connections_denied;
  std::string text = destination.ToString();
  for (auto& row : report_.denied) {
    if (row.destination == text && row.reason == reason) {
      ++row.count;
      return;
    }
  }
  const bool internal = destination.IsInternal();
  size_t& rows = internal ? internal_denial_rows_ : public_denial_rows_;
  if (rows < (internal ? kMaxInternalDenialRows : kMaxDenialRows)) {
    ++rows;
    report_.denied.push_back({text, reason, 1});
    return;
  }
  report_.denied_truncated = true;
  ++report_.denied_not_listed;
}

void NetBroker::HandleConnect(int notify_fd, const struct seccomp_notif& request) {
  const uint64_t id = request.id;
  const auto tid = static_cast<pid_t>(request.pid);
  const int sandbox_fd = static_cast<int>(request.data.args[0]);
  // Copy the sockaddr out of the target. TOCTOU: the target (or another of
  // its threads) may change this memory after we read it. That is harmless:
  //  - an allowed destination is connected BY US, from the copy we read;
  //    the sandbox's own syscall never runs (we answer it with 0);
  //  - everything we CONTINUE (loopback, non-INET, unreadable) is run by the
  //    kernel inside the sandbox's network namespace, where only "lo" exists:
  //    swapped to any other address it fails with ENETUNREACH.
  // So the namespace, not this check, is the barrier; the broker only opens
  // the one door it decided to open.
  unsigned char buffer[sizeof(sockaddr_storage)] = {};
  const size_t length = std::min<uint64_t>(request.data.args[2], sizeof(buffer));
  struct iovec local = {buffer, length};
  struct iovec remote = {reinterpret_cast<void*>(request.data.args[1]), length};
  ssize_t got = process_vm_readv(tid, &local, 1, &remote, 1, 0);
  if (!IdValid(notify_fd, id)) return;  // the task is gone (or the pid was recycled): nothing to answer
  IpEndpoint destination;
  if (got != static_cast<ssize_t>(length) || !ParseInetSockaddr(buffer, length, &destination) ||
      destination.IsLocalOnly()) {
    Continue(notify_fd, id);
    return;
  }
  if (!allow_.Allows(destination)) return Deny(notify_fd, id, destination, "not in the allow-list", ECONNREFUSED);
  int pidfd = OpenTaskPidfd(tid);
  if (pidfd >= 0 && !IdValid(notify_fd, id)) {  // checked after pidfd_open: the pidfd is the target
    close(pidfd);
    return;  // the task is gone: nothing to answer
  }
  if (pidfd < 0) return Fail(notify_fd, id, ECONNREFUSED);
  // Everything from pidfd_getfd on runs on a worker: this thread supervises
  // the run and must never make a call on a socket the sandbox holds.
  StartWorker(notify_fd, id, pidfd, sandbox_fd, destination);
}

void NetBroker::Fail(int notify_fd, uint64_t id, int err) {
  Answer(notify_fd, id, err);
  std::lock_guard<std::mutex> lock(mutex_);
  ++report_.connections_failed;
}

void NetBroker::StartWorker(int notify_fd, uint64_t id, int pidfd, int sandbox_fd, IpEndpoint destination) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Reap finished workers, so a long run with many connections holds only
  // the live ones.
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (it->done->load()) {
      it->thread.join();
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
  if (shut_down_ || workers_.size() >= options_.max_connections) {
    close(pidfd);  // no socket of the sandbox was taken: nothing here can block
    ++report_.connections_failed;
    Answer(notify_fd, id, EAGAIN);
    return;
  }
  auto done = std::make_shared<std::atomic<bool>>(false);
  try {
    workers_.push_back({std::thread([this, notify_fd, id, pidfd, sandbox_fd, destination, done] {
                          UnblockInterruptSignal();
                          Broker(notify_fd, id, pidfd, sandbox_fd, destination);
                          done->store(true);
                        }),
                        done});
  } catch (const std::system_error&) {  // no thread (RLIMIT_NPROC, memory): refuse this connect, go on
    close(pidfd);
    ++report_.connections_failed;
    Answer(notify_fd, id, EAGAIN);
  }
}

// Worker thread: the sandbox's socket, host connect, inside connect + accept,
// answer, relay.
void NetBroker::Broker(int notify_fd, uint64_t id, int pidfd, int sandbox_fd, IpEndpoint destination) {
  int sandbox_socket = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd, sandbox_fd, 0));
  int getfd_errno = errno;
  close(pidfd);
  if (sandbox_socket < 0) return Fail(notify_fd, id, getfd_errno == EBADF ? EBADF : ECONNREFUSED);
  int type = 0;
  socklen_t type_length = sizeof(type);
  if (getsockopt(sandbox_socket, SOL_SOCKET, SO_TYPE, &type, &type_length) != 0 && errno == ENOTSOCK) {
    close(sandbox_socket);  // not a socket: what connect(2) itself would answer
    return Fail(notify_fd, id, ENOTSOCK);
  }
  if (!IsTcpStream(sandbox_socket)) {
    // Answered first: our close of the copy may linger (InterruptSignal).
    Deny(notify_fd, id, destination, "not TCP (allow-lists are TCP only)", ECONNREFUSED);
    close(sandbox_socket);
    return;
  }
  if (int state_error = ConnectStateError(sandbox_socket); state_error != 0) {
    Fail(notify_fd, id, state_error);
    close(sandbox_socket);  // after the answer: it may linger (InterruptSignal)
    return;
  }
  int err = 0;
  int host = ConnectHost(destination, &err);
  int inside = -1;
  if (host >= 0) {
    inside = ConnectInside(sandbox_socket);
    if (inside < 0) {
      err = -inside;
      close(host);
      host = -1;
    }
  }
  if (host < 0) {
    Fail(notify_fd, id, err != 0 ? err : ECONNREFUSED);
    close(sandbox_socket);  // after the answer: it may linger (InterruptSignal)
    return;
  }
  close(sandbox_socket);
  if (!Answer(notify_fd, id, 0)) {  // the task died (or was signalled) meanwhile
    close(inside);
    close(host);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++report_.connections_allowed;
  }
  Relay(inside, host);
}

int NetBroker::ConnectHost(const IpEndpoint& destination, int* err) {
  int fd = socket(destination.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
  if (fd < 0) {
    *err = errno;
    return -1;
  }
  sockaddr_storage addr;
  socklen_t len = destination.ToSockaddr(&addr);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 && errno != EINPROGRESS) {
    *err = errno;
    close(fd);
    return -1;
  }
  // Non-blocking connect + poll: the host connect has a deadline, and
  // Shutdown (the sandbox ended) interrupts it.
  auto deadline = Clock::now() + std::chrono::milliseconds(options_.host_connect_timeout_ms);
  int revents = WaitFor(fd, POLLOUT, stop_fd_, deadline);
  *err = revents == 0 ? ETIMEDOUT : revents < 0 ? ECONNABORTED : SocketError(fd);
  if (*err != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Connects the sandbox's own socket (a pidfd_getfd copy: same open file, so
// the same socket, living in the sandbox's namespace) to the in-namespace
// listener and accepts its peer. Returns the accepted fd or -errno.
int NetBroker::ConnectInside(int sandbox_socket) {
  // Never a plain lock: the holder's calls are bounded (InterruptAlarm), but
  // Shutdown must not wait for a queue of workers to take turns.
  std::unique_lock<std::timed_mutex> lock(accept_mutex_, std::defer_lock);
  while (!lock.try_lock_for(std::chrono::milliseconds(10))) {
    if (Stopped(stop_fd_)) return -ECONNABORTED;
  }
  sockaddr_storage listener{};
  socklen_t listener_len = sizeof(listener);
  if (getsockname(inside_listener_, reinterpret_cast<sockaddr*>(&listener), &listener_len) != 0) return -errno;
  int domain = AF_INET;
  socklen_t domain_len = sizeof(domain);
  getsockopt(sandbox_socket, SOL_SOCKET, SO_DOMAIN, &domain, &domain_len);
  IpEndpoint target;
  if (!ParseInetSockaddr(&listener, listener_len, &target)) return -EINVAL;
  if (domain == AF_INET6) {  // an IPv6 socket reaches the IPv4 listener as ::ffff:127.0.0.1
    sockaddr_in6 mapped{};
    mapped.sin6_family = AF_INET6;
    mapped.sin6_port = htons(target.port);
    mapped.sin6_addr.s6_addr[10] = mapped.sin6_addr.s6_addr[11] = 0xff;
    memcpy(mapped.sin6_addr.s6_addr + 12, target.addr.data(), 4);
    memcpy(&listener, &mapped, sizeof(mapped));
    listener_len = sizeof(mapped);
  }
  // Connections to the listener from sandbox processes (the broker never
  // relays them) would fill its backlog and make every brokered connect
  // after them time out: close what is queued first.
  for (int stray; (stray = accept4(inside_listener_, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) close(stray);
  // The file status flags are shared with the sandbox: make the connect
  // non-blocking for our bounded wait, then restore what the program set
  // (its task is blocked in connect meanwhile). Another of its threads may
  // clear the flag again before our connect, or start a connect of its own
  // on the socket after the state check: our connect may then block, until
  // the alarm interrupts it at the deadline (EINTR, answered as ETIMEDOUT).
  auto deadline = Clock::now() + std::chrono::milliseconds(options_.inside_timeout_ms);
  InterruptAlarm alarm(deadline);
  if (!alarm.armed()) return -EAGAIN;  // no bound on the connect: refuse it rather than risk blocking
  if (int state_error = ConnectStateError(sandbox_socket); state_error != 0) return -state_error;
  int flags = fcntl(sandbox_socket, F_GETFL);
  if (flags < 0 || fcntl(sandbox_socket, F_SETFL, flags | O_NONBLOCK) != 0) return -errno;
  int rc = connect(sandbox_socket, reinterpret_cast<sockaddr*>(&listener), listener_len);
  int err = rc == 0 ? 0 : errno;
  if (err == EINTR) err = ETIMEDOUT;  // the alarm (or Shutdown) ended a connect that blocked
  if (err == EINPROGRESS) {
    int revents = WaitFor(sandbox_socket, POLLOUT, stop_fd_, deadline);
    err = revents == 0 ? ETIMEDOUT : revents < 0 ? ECONNABORTED : SocketError(sandbox_socket);
  }
  fcntl(sandbox_socket, F_SETFL, flags);
  IpEndpoint ours;
  if (err == 0 && !LocalEndpoint(sandbox_socket, &ours, false)) err = ENOTCONN;
  if (err != 0) return -err;
  // Any process in the sandbox can connect to the listener too: accept
  // until the peer is the socket we just connected (same local ip:port).
  while (true) {
    int revents = WaitFor(inside_listener_, POLLIN, stop_fd_, deadline);
    if (revents <= 0) return revents == 0 ? -ETIMEDOUT : -ECONNABORTED;
    int peer = accept4(inside_listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (peer < 0) continue;
    IpEndpoint theirs;
    if (LocalEndpoint(peer, &theirs, true) && theirs == ours) return peer;
    close(peer);
  }
}

namespace {

// One direction of a relay: a bounded buffer from `from` to `to`.
struct Flow {
  int from, to;
  std::vector<char> buffer = std::vector<char>(kRelayBuffer);
  size_t start = 0, end = 0;
  bool eof = false, shut = false;
  bool Empty() const { return start == end; }

  // Returns false on a hard error (the relay then ends).
  bool Read() {
    ssize_t n = read(from, buffer.data(), buffer.size());
    if (n > 0) end = static_cast<size_t>(n);
    if (n == 0) eof = true;
    return n >= 0 || errno == EAGAIN || errno == EINTR;
  }
  bool Write() {
    ssize_t n = send(to, buffer.data() + start, end - start, MSG_NOSIGNAL);
    if (n > 0) start += static_cast<size_t>(n);
    if (start == end) start = end = 0;
    return n >= 0 || errno == EAGAIN || errno == EINTR;
  }
  // Half-close: once `from` is done and everything is written, tell `to`.
  void MaybeShut() {
    if (eof && Empty() && !shut) {
      shutdown(to, SHUT_WR);
      shut = true;
    }
  }
};

}  // namespace

void NetBroker::Relay(int inside, int host) {
  Flow up{inside, host}, down{host, inside};
  while (true) {
    up.MaybeShut();
    down.MaybeShut();
    if (up.shut && down.shut) break;
    short inside_events = static_cast<short>((!up.eof && up.Empty() ? POLLIN : 0) | (!down.Empty() ? POLLOUT : 0));
    short host_events = static_cast<short>((!down.eof && down.Empty() ? POLLIN : 0) | (!up.Empty() ? POLLOUT : 0));
    // An fd we want nothing from is left out (-1), so its POLLHUP cannot spin us.
    struct pollfd fds[3] = {{inside_events ? inside : -1, inside_events, 0},
                            {host_events ? host : -1, host_events, 0},
                            {stop_fd_, POLLIN, 0}};
    if (poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[2].revents != 0) break;  // the sandbox ended
    bool ok = true;
    if (fds[0].revents != 0 && (inside_events & POLLIN)) ok = ok && up.Read();
    if (fds[1].revents != 0 && (host_events & POLLIN)) ok = ok && down.Read();
    if (fds[1].revents != 0 && (host_events & POLLOUT)) ok = ok && up.Write();
    if (fds[0].revents != 0 && (inside_events & POLLOUT)) ok = ok && down.Write();
    if (!ok) break;
  }
  close(inside);
  close(host);
}

}  // namespace cocoon::enforcer
