/* Probe: reach the host's network, or kernel sockets that are not
 * namespaced.
 *   op=tcp            connect to 127.0.0.1:port= where the HOST listens
 *   op=udp            send a datagram with nonce= to 127.0.0.1:port= (the
 *                     host checks its socket; the probe reports PENDING)
 *   op=unix_abstract  connect to the host's abstract unix socket name=
 *                     (abstract names are scoped by network namespace)
 *   op=raw            socket(AF_INET, SOCK_RAW) (needs CAP_NET_RAW)
 *   op=packet         socket(AF_PACKET, SOCK_RAW)
 *   op=vsock          socket(AF_VSOCK) -- not network-namespaced
 *   op=alg            socket(AF_ALG) -- kernel crypto API attack surface
 */
#include "probe_common.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif

static long attempt(void* arg) {
  const char* op = (const char*)arg;
  if (strcmp(op, "tcp") == 0 || strcmp(op, "udp") == 0) {
    int tcp = op[0] == 't';
    int fd = socket(AF_INET, (tcp ? SOCK_STREAM : SOCK_DGRAM) | SOCK_CLOEXEC, 0);
    if (fd < 0) return -100 - errno;
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)probe_arg_ll("port", 0));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (tcp) return connect(fd, (struct sockaddr*)&addr, sizeof addr);
    const char* nonce = probe_arg("nonce");
    if (!nonce) nonce = "cocoon-udp";
    for (int i = 0; i < 3; ++i)
      sendto(fd, nonce, strlen(nonce), 0, (struct sockaddr*)&addr, sizeof addr);
    return -200;  /* only the host can tell */
  }
  if (strcmp(op, "unix_abstract") == 0) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -100 - errno;
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    const char* name = probe_arg("name");
    if (!name) { errno = EINVAL; return -2; }
    size_t n = strlen(name);
    memcpy(addr.sun_path + 1, name, n);
    return connect(fd, (struct sockaddr*)&addr, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n));
  }
  if (strcmp(op, "raw") == 0) return socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
  if (strcmp(op, "packet") == 0) return socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
  if (strcmp(op, "vsock") == 0) return socket(AF_VSOCK, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (strcmp(op, "alg") == 0) return socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  errno = EINVAL;
  return -2;
}

int main(int argc, char** argv) {
  probe_init("net", argc, argv);
  const char* op = probe_op();
  struct probe_attempt_result r = probe_attempt(attempt, (void*)op);
  if (r.ran && r.ret == -2) PROBE_ERROR("unknown op=%s or missing argument", op);
  if (probe_succeeded(&r)) PROBE_ESCAPED("%s succeeded (ret %ld)", op, r.ret);
  if (r.ran && r.ret == -200) PROBE_PENDING("datagrams sent (errno %d); host checks receipt", r.err);
  if (r.ran && r.ret <= -100)
    PROBE_BLOCKED("socket() failed: %s", strerrorname_np((int)(-100 - r.ret)));
  char why[256];
  PROBE_BLOCKED("%s", probe_describe_failure(&r, why, sizeof why));
}
