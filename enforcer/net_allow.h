// `network allow { host:port, ... }`: the parent's pure side of the
// allow-list. Host names are resolved once, on the host, before clone; the
// sandbox sees the result as a read-only /etc/hosts (net_broker.h explains
// the whole design). Nothing here touches the sandbox.
#pragma once

#include <netinet/in.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/common/status.h"
#include "compiler/ir/policy_ir.h"

namespace cocoon::enforcer {

// An IPv4 or IPv6 address and port. IPv4-mapped IPv6 (::ffff:a.b.c.d) is
// stored as IPv4, so both spellings of one destination compare equal.
struct IpEndpoint {
  int family = AF_UNSPEC;            // AF_INET or AF_INET6
  std::array<uint8_t, 16> addr{};    // network order; first 4 bytes for AF_INET
  uint16_t port = 0;                 // host order
  bool operator==(const IpEndpoint&) const = default;

  // IPv4-mapped IPv6 addresses become IPv4 (FromV6).
  static IpEndpoint FromV4(const in_addr& address, uint16_t port);
  static IpEndpoint FromV6(const in6_addr& address, uint16_t port);

  bool IsLoopback() const;           // 127.0.0.0/8 or ::1
  // Loopback, or the unspecified address (0.0.0.0, ::), which connect(2)
  // treats as "this host": inside the sandbox, its own namespace.
  bool IsLocalOnly() const;
  // An address inside the host's own networks or its cloud's control plane:
  // private (10/8, 172.16/12, 192.168/16, fc00::/7, which holds AWS's
  // fd00:ec2::254), shared (100.64/10), link-local (169.254/16, which holds
  // the metadata service 169.254.169.254; fe80::/10). A denied connect to one
  // is what an audit most needs to see, so the Outcome keeps rows for them.
  bool IsInternal() const;
  std::string ToString() const;      // "1.2.3.4:80", "[::1]:80"
  // The endpoint as a sockaddr (sockaddr_in or sockaddr_in6); returns its length.
  socklen_t ToSockaddr(sockaddr_storage* out) const;
};

// A sockaddr as connect(2) received it (raw bytes of `len`). Returns false
// for anything that is not a complete AF_INET / AF_INET6 address (AF_UNIX,
// AF_UNSPEC, too short): those are not the broker's business.
bool ParseInetSockaddr(const void* data, size_t len, IpEndpoint* out);

// An IPv4 or IPv6 address literal (taken as is, never resolved).
bool IsIpLiteral(const std::string& host);

struct ResolvedEndpoint {
  ir::NetworkEndpoint endpoint;         // as the plan names it
  std::vector<IpEndpoint> addresses;    // what it resolved to at launch
};

struct ResolvedAllowList {
  std::vector<ResolvedEndpoint> endpoints;
  bool Allows(const IpEndpoint& destination) const;
  // "127.0.0.1 localhost", "::1 localhost", then one line per address of
  // each named (non-literal) host.
  std::string HostsFile(const std::string& hostname) const;
  // "api.example.com:443 -> 203.0.113.7, 2001:db8::7" per endpoint.
  std::vector<std::string> Describe() const;
};

// Resolves every endpoint with getaddrinfo(3) (TCP, both families;
// net_resolve.cc). An IP
// literal is taken as is. A name that does not resolve refuses the launch
// (fail closed: the allow-list would silently shrink otherwise). A loopback
// entry (localhost:8080) is kept but only ever reaches the sandbox's own
// loopback: loopback connects never leave its network namespace.
Result<ResolvedAllowList> ResolveAllowList(const std::vector<ir::NetworkEndpoint>& allow);

// How a Sandbox resolves its allow-list (SandboxRequest::resolve_allow_list):
// ResolveAllowList, passed in by the caller so that linking the enforcer does
// not link getaddrinfo.
using AllowListResolver = Result<ResolvedAllowList> (*)(const std::vector<ir::NetworkEndpoint>& allow);

}  // namespace cocoon::enforcer
