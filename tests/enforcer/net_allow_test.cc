// Allow-list resolution and sockaddr parsing (enforcer/net_allow.h): pure.
#include "enforcer/net_allow.h"

#include <arpa/inet.h>
#include <sys/un.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "enforcer/outcome.h"

namespace cocoon::enforcer {
namespace {

IpEndpoint V4(const char* text, uint16_t port) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  in.sin_port = htons(port);
  inet_pton(AF_INET, text, &in.sin_addr);
  IpEndpoint e;
  EXPECT_TRUE(ParseInetSockaddr(&in, sizeof(in), &e));
  return e;
}

TEST(NetAllow, ParsesBothFamiliesAndFoldsV4MappedV6) {
  IpEndpoint v4 = V4("192.0.2.7", 443);
  EXPECT_EQ(v4.ToString(), "192.0.2.7:443");
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  in6.sin6_port = htons(443);
  inet_pton(AF_INET6, "::ffff:192.0.2.7", &in6.sin6_addr);
  IpEndpoint mapped;
  ASSERT_TRUE(ParseInetSockaddr(&in6, sizeof(in6), &mapped));
  EXPECT_EQ(mapped, v4);  // one destination, two spellings
  inet_pton(AF_INET6, "2001:db8::1", &in6.sin6_addr);
  IpEndpoint v6;
  ASSERT_TRUE(ParseInetSockaddr(&in6, 24, &v6));  // RFC 2133 length, no scope id
  EXPECT_EQ(v6.ToString(), "[2001:db8::1]:443");
}

TEST(NetAllow, RejectsShortAndNonInetAddresses) {
  IpEndpoint e;
  sockaddr_in in{};
  in.sin_family = AF_INET;
  EXPECT_FALSE(ParseInetSockaddr(&in, sizeof(in) - 1, &e));
  EXPECT_FALSE(ParseInetSockaddr(&in, 1, &e));
  sockaddr_un un{};
  un.sun_family = AF_UNIX;
  EXPECT_FALSE(ParseInetSockaddr(&un, sizeof(un), &e));
}

TEST(NetAllow, LoopbackIsAllOf127AndV6One) {
  EXPECT_TRUE(V4("127.0.0.1", 1).IsLoopback());
  EXPECT_TRUE(V4("127.9.9.9", 1).IsLoopback());
  EXPECT_FALSE(V4("128.0.0.1", 1).IsLoopback());
  EXPECT_FALSE(V4("10.0.0.1", 1).IsLoopback());
  EXPECT_TRUE(V4("0.0.0.0", 1).IsLocalOnly());  // connect(2): "this host"
  EXPECT_TRUE(V4("127.0.0.1", 1).IsLocalOnly());
  EXPECT_FALSE(V4("10.0.0.1", 1).IsLocalOnly());
}

TEST(NetAllow, LiteralsResolveAndMatchOnlyTheirPort) {
  auto list = ResolveAllowList({{"192.0.2.7", 443}, {"2001:db8::1", 80}});
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_TRUE(list->Allows(V4("192.0.2.7", 443)));
  EXPECT_FALSE(list->Allows(V4("192.0.2.7", 444)));
  EXPECT_FALSE(list->Allows(V4("192.0.2.8", 443)));
  // Literals are not names: the generated hosts file only has localhost.
  std::string hosts = list->HostsFile("cocoon");
  EXPECT_NE(hosts.find("127.0.0.1\tlocalhost cocoon\n"), std::string::npos);
  EXPECT_EQ(hosts.find("192.0.2.7"), std::string::npos);
  EXPECT_EQ(list->Describe()[0], "192.0.2.7:443 -> 192.0.2.7");
}

TEST(NetAllow, UnresolvableNameFailsClosedNamingTheHost) {
  auto list = ResolveAllowList({{"no-such-host.invalid", 443}});
  ASSERT_FALSE(list.ok());
  EXPECT_NE(list.status().ToString().find("'no-such-host.invalid'"), std::string::npos);
  EXPECT_FALSE(ResolveAllowList({{"192.0.2.7", 0}}).ok());
}

TEST(NetAllow, NamesGoIntoTheHostsFile) {
  auto list = ResolveAllowList({{"localhost", 8080}});  // resolves everywhere, via /etc/hosts
  ASSERT_TRUE(list.ok()) << list.status().ToString();
  EXPECT_TRUE(list->Allows(V4("127.0.0.1", 8080)));
  ResolvedAllowList named;
  named.endpoints.push_back({{"api.example.test", 443}, {V4("192.0.2.9", 443)}});
  EXPECT_NE(named.HostsFile("h").find("192.0.2.9\tapi.example.test\n"), std::string::npos);
}

// The Outcome's "network" object exists for allow-list runs only, so the
// JSON of every other run is unchanged.
TEST(NetAllow, OutcomeHasANetworkSectionOnlyForAllowLists) {
  Outcome plain;
  EXPECT_FALSE(OutcomeToJson(plain).contains("network"));
  Outcome brokered;
  brokered.has_network_report = true;
  brokered.network.mode = "allow-list";
  brokered.network.connections_allowed = 2;
  brokered.network.connections_denied = 1;
  brokered.network.denied.push_back({"192.0.2.7:22", "not in the allow-list", 1});
  auto j = OutcomeToJson(brokered);
  ASSERT_TRUE(j.contains("network"));
  EXPECT_EQ(j["network"]["connections_allowed"], 2);
  EXPECT_EQ(j["network"]["connections_denied"], 1);
  EXPECT_EQ(j["network"]["denied"][0]["destination"], "192.0.2.7:22");
  EXPECT_EQ(j["network"]["denied_truncated"], false);
  EXPECT_EQ(j["network"]["denied_not_listed"], 0);
  brokered.network.denied_truncated = true;
  brokered.network.denied_not_listed = 7;
  j = OutcomeToJson(brokered);
  EXPECT_EQ(j["network"]["denied_truncated"], true);
  EXPECT_EQ(j["network"]["denied_not_listed"], 7);
}

TEST(NetAllow, InternalAddresses) {
  auto v4 = [](const char* text) {
    in_addr a{};
    inet_pton(AF_INET, text, &a);
    return IpEndpoint::FromV4(a, 80);
  };
  auto v6 = [](const char* text) {
    in6_addr a{};
    inet_pton(AF_INET6, text, &a);
    return IpEndpoint::FromV6(a, 80);
  };
  for (const char* inside : {"10.0.0.1", "172.16.0.1", "172.31.255.255", "192.168.1.1", "100.64.0.1",
                             "100.127.255.255", "169.254.169.254", "169.254.0.1"}) {
    EXPECT_TRUE(v4(inside).IsInternal()) << inside;
  }
  for (const char* outside : {"8.8.8.8", "172.15.0.1", "172.32.0.1", "192.169.0.1", "100.63.0.1", "100.128.0.1",
                              "169.253.0.1", "203.0.113.9"}) {
    EXPECT_FALSE(v4(outside).IsInternal()) << outside;
  }
  for (const char* inside : {"fd00:ec2::254", "fc00::1", "fe80::1", "febf::1", "::ffff:169.254.169.254"}) {
    EXPECT_TRUE(v6(inside).IsInternal()) << inside;
  }
  for (const char* outside : {"2001:db8::1", "fec0::1", "::ffff:8.8.8.8"}) EXPECT_FALSE(v6(outside).IsInternal()) << outside;
}

}  // namespace
}  // namespace cocoon::enforcer
