// ResolveAllowList (net_allow.h): host names through getaddrinfo(3). A file
// of its own so that an executable that never resolves names does not link
// glibc's NSS: the static launcher `cocoon` hands allow-list launches to
// cocoon-full (cli/launch_dynamic.h says why).
#include <netdb.h>
#include <sys/socket.h>

#include <algorithm>

#include "enforcer/net_allow.h"

namespace cocoon::enforcer {
namespace {

Result<std::vector<IpEndpoint>> Resolve(const ir::NetworkEndpoint& endpoint) {
  struct addrinfo hints {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_protocol = IPPROTO_TCP;
  hints.ai_flags = IsIpLiteral(endpoint.host) ? AI_NUMERICHOST : 0;
  struct addrinfo* list = nullptr;
  int rc = getaddrinfo(endpoint.host.c_str(), nullptr, &hints, &list);
  if (rc != 0) {
    return FailedPreconditionError("network allow: host '" + endpoint.host + "' does not resolve on this host (" +
                                   gai_strerror(rc) + "); refusing to run with a smaller allow-list");
  }
  std::vector<IpEndpoint> out;
  for (auto* ai = list; ai != nullptr; ai = ai->ai_next) {
    IpEndpoint e;
    if (ai->ai_family == AF_INET) {
      e = IpEndpoint::FromV4(reinterpret_cast<sockaddr_in*>(ai->ai_addr)->sin_addr, endpoint.port);
    } else if (ai->ai_family == AF_INET6) {
      e = IpEndpoint::FromV6(reinterpret_cast<sockaddr_in6*>(ai->ai_addr)->sin6_addr, endpoint.port);
    } else {
      continue;
    }
    if (std::find(out.begin(), out.end(), e) == out.end()) out.push_back(e);
  }
  freeaddrinfo(list);
  if (out.empty()) return FailedPreconditionError("network allow: host '" + endpoint.host + "' has no IPv4/IPv6 address");
  return out;
}

}  // namespace

Result<ResolvedAllowList> ResolveAllowList(const std::vector<ir::NetworkEndpoint>& allow) {
  ResolvedAllowList list;
  for (const auto& endpoint : allow) {
    if (endpoint.host.empty() || endpoint.port == 0) {
      return InvalidArgumentError("network allow: an entry needs a host and a port in 1-65535");
    }
    COCOON_ASSIGN_OR_RETURN(std::vector<IpEndpoint> addresses, Resolve(endpoint));
    list.endpoints.push_back({endpoint, std::move(addresses)});
  }
  return list;
}

}  // namespace cocoon::enforcer
