/* Probe: open a netlink socket. A netlink socket's receive queue is charged
 * to no memory cgroup (v1 or v2): a review queued ~1.9 GB of unread
 * NETLINK_USERSOCK messages (SO_RCVBUF clamps to 2 x rmem_max, ~8 MiB per
 * socket; strict allows 32 processes x 256 fds) while the sandbox's memory
 * group showed 0 and the Outcome said the cgroup enforced 64 MiB. With the
 * network off the sandbox's namespace holds only loopback, so netlink has
 * nothing a program needs; every Cocoon filter of such a policy refuses
 * socket(AF_NETLINK, ...) with EAFNOSUPPORT, what a kernel without the
 * family answers (effective_rules.h, the socket-family prologue guard).
 * Tried as NETLINK_ROUTE (what getifaddrs opens), NETLINK_USERSOCK, and as
 * a raw syscall with junk in the upper half of the family (an int: the
 * kernel drops the upper half, so the filter must too). Nothing is queued:
 * an open socket already shows the way. A socket opened is an escape; a
 * refusal other than EAFNOSUPPORT means the filter did not answer, and is
 * an error.
 */
#include "probe_common.h"

#include <linux/netlink.h>
#include <sys/socket.h>

static long netlink_route(void* arg) {
  (void)arg;
  return socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
}

static long netlink_usersock(void* arg) {
  (void)arg;
  return socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_USERSOCK);
}

static long netlink_raw_upper_bits(void* arg) {
  (void)arg;
  return syscall(SYS_socket, 0xdead00000000UL | AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
}

int main(int argc, char** argv) {
  probe_init("netlink", argc, argv);
  static const struct {
    const char* label;
    probe_attempt_fn fn;
  } attempts[] = {{"socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)", netlink_route},
                  {"socket(AF_NETLINK, SOCK_DGRAM, NETLINK_USERSOCK)", netlink_usersock},
                  {"raw socket(0xdead00000000|AF_NETLINK, SOCK_RAW, NETLINK_ROUTE)", netlink_raw_upper_bits}};
  char report[1024] = "";
  char why[160];
  for (size_t i = 0; i < sizeof attempts / sizeof attempts[0]; ++i) {
    struct probe_attempt_result r = probe_attempt(attempts[i].fn, NULL);
    if (probe_succeeded(&r))
      PROBE_ESCAPED("%s succeeded: its receive queue is charged to no memory cgroup", attempts[i].label);
    if (!r.ran || r.err != EAFNOSUPPORT)
      PROBE_ERROR("%s: expected EAFNOSUPPORT from the socket-family guard, got %s", attempts[i].label,
                  probe_describe_failure(&r, why, sizeof why));
    size_t used = strlen(report);
    snprintf(report + used, sizeof report - used, "%s%s: EAFNOSUPPORT", used ? "; " : "", attempts[i].label);
  }
  PROBE_BLOCKED("%s", report);
}
