// The connect broker: how `network allow { host:port, ... }` is enforced.
//
// 1. The sandbox keeps its own network namespace with only "lo" up. That is
//    the hard barrier: a packet to any non-loopback address fails with
//    ENETUNREACH inside, whatever the sandbox does (sendto with
//    MSG_FASTOPEN, UDP, raw sockets, a swapped connect address...).
// 2. The seccomp filter sends connect(2) to SECCOMP_RET_USER_NOTIF
//    (ConnectRouting::kSupervisor in compiler/backends/seccomp/
//    effective_rules.h); NotifyResponder passes those notifications here.
// 3. Before seccomp, the child opened a TCP listener on 127.0.0.1:0 INSIDE its
//    namespace and handed it to us over a socketpair (SCM_RIGHTS; net.cc).
// 4. For a TCP connect to an allowed ip:port, the broker opens the real
//    connection from the supervisor (host namespace), takes the sandbox's
//    socket with pidfd_getfd(2), connects it to the in-namespace listener,
//    accepts the matching peer and answers the syscall with 0. A worker
//    thread then relays bytes between the accepted peer and the host socket.
//    The sandbox sees a connected socket (getpeername shows 127.0.0.1 and
//    the listener's port, not the real destination: a documented quirk).
// 5. A loopback (or 0.0.0.0 / ::) destination, or a non-INET family, continues
//    in the kernel; any other INET destination is refused (ECONNREFUSED,
//    what a host with nothing listening answers, so clients fail fast) and
//    recorded in the Outcome.
// Allow-lists are TCP only: a UDP socket's connect to an allowed address is
// refused too (and UDP sendto cannot leave the namespace anyway).
#pragma once

#include <linux/seccomp.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "compiler/common/status.h"
#include "enforcer/net_allow.h"
#include "enforcer/outcome.h"

namespace cocoon::enforcer {

struct NetBrokerOptions {
  int host_connect_timeout_ms = 10000;  // the host side's connect(2)
  int inside_timeout_ms = 2000;         // connect + accept on the in-namespace listener
  size_t max_connections = 64;          // concurrent relays; more are refused (EAGAIN)
};

class NetBroker {
 public:
  // Takes ownership of `inside_listener` (the child's 127.0.0.1 listener).
  static Result<std::unique_ptr<NetBroker>> Create(ResolvedAllowList allow, int inside_listener,
                                                   NetBrokerOptions options = {});
  ~NetBroker();  // Shutdown()
  NetBroker(const NetBroker&) = delete;
  NetBroker& operator=(const NetBroker&) = delete;

  // Decides one connect notification already received from `notify_fd`, and
  // answers it (at once, or from a worker thread for allowed destinations).
  // `notify_fd` must stay open until Shutdown() returns.
  void HandleConnect(int notify_fd, const struct seccomp_notif& request);

  // Stops every relay, answers nothing more, joins the workers (interrupting
  // every one blocked in a call on a sandbox socket). Idempotent. Bounded:
  // no worker waits for anything that ignores the stop eventfd or a signal.
  void Shutdown();

  // Counters and denials so far (call after Shutdown for final figures).
  NetworkReport Report() const;

 private:
  struct Worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  NetBroker(ResolvedAllowList allow, int inside_listener, int stop_fd, NetBrokerOptions options);
  void Deny(int notify_fd, uint64_t id, const IpEndpoint& destination, const char* reason, int err);
  // Answers `err` for a connect the allow-list permits but that could not be
  // made (counted as failed, not denied).
  void Fail(int notify_fd, uint64_t id, int err);
  void StartWorker(int notify_fd, uint64_t id, int pidfd, int sandbox_fd, IpEndpoint destination);
  void Broker(int notify_fd, uint64_t id, int pidfd, int sandbox_fd, IpEndpoint destination);
  int ConnectInside(int sandbox_socket);
  int ConnectHost(const IpEndpoint& destination, int* err);
  void Relay(int inside, int host);

  ResolvedAllowList allow_;
  int inside_listener_;
  int stop_fd_;  // eventfd: readable once Shutdown began
  NetBrokerOptions options_;
  std::timed_mutex accept_mutex_;  // one connect+accept on the inside listener at a time
  mutable std::mutex mutex_;  // guards report_ and workers_
  NetworkReport report_;
  size_t public_denial_rows_ = 0;    // rows of report_.denied, by kind (kMaxDenialRows)
  size_t internal_denial_rows_ = 0;
  std::vector<Worker> workers_;
  bool shut_down_ = false;
};

}  // namespace cocoon::enforcer
