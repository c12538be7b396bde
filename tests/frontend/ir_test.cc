// The IR's canonical form: groups expanded and labelled, conditions lowered
// to ANDed lists, rules sorted and unique, explicit default action.
#include <gtest/gtest.h>

#include "compiler/syscalls/syscall_groups.h"
#include "tests/frontend/test_util.h"

namespace cocoon::frontend {
namespace {

ir::Policy MustCompile(const std::string& body) {
  std::optional<ir::Policy> policy;
  std::string out = testing::Diagnose("profile t {\n" + body + "\n}\n", &policy);
  EXPECT_TRUE(policy.has_value()) << out;
  return policy.value_or(ir::Policy{});
}

std::vector<ir::SyscallRule> RulesFor(const ir::Policy& p, const std::string& name) {
  std::vector<ir::SyscallRule> out;
  for (const auto& r : p.syscalls.rules) {
    if (r.name == name) out.push_back(r);
  }
  return out;
}

TEST(Ir, DefaultActionIsExplicitEvenWhenUnwritten) {
  ir::Policy p = MustCompile("syscalls { allow read }");
  EXPECT_EQ(p.syscalls.default_action.kind, ir::ActionKind::kErrno);
  EXPECT_EQ(p.syscalls.default_action.errno_value, 38);  // ENOSYS
  EXPECT_FALSE(p.syscalls.default_explicitly_allows);
}

TEST(Ir, UnconditionalRuleEqualToTheDefaultIsDroppedOnlyWhenAlone) {
  // Alone it changes nothing.
  ir::Policy alone = MustCompile("syscalls { default errno EPERM\n deny ptrace }");
  EXPECT_TRUE(RulesFor(alone, "ptrace").empty());
  // Next to a less strict conditional rule it is what outranks that rule
  // (the more restrictive action wins), so the IR keeps it.
  ir::Policy p = MustCompile("syscalls { default errno EPERM\n deny ptrace\n allow ptrace if arg0 == 0 }");
  auto ptrace = RulesFor(p, "ptrace");
  ASSERT_EQ(ptrace.size(), 2u);
  EXPECT_TRUE(ptrace[0].conditions.empty());
  EXPECT_EQ(ptrace[0].action, (ir::Action{ir::ActionKind::kErrno, 1}));
  EXPECT_EQ(ptrace[1].action.kind, ir::ActionKind::kAllow);
}

TEST(Ir, GroupsExpandIntoLabelledRules) {
  ir::Policy p = MustCompile("syscalls { deny @mount }");
  std::vector<std::string> members = syscalls::ExpandGroup("@mount");
  ASSERT_FALSE(members.empty());
  ASSERT_EQ(p.syscalls.rules.size(), members.size());
  for (const auto& r : p.syscalls.rules) {
    EXPECT_EQ(r.group, "@mount");
    EXPECT_EQ(r.action, (ir::Action{ir::ActionKind::kErrno, 1}));
  }
}

TEST(Ir, RulesAreSortedAndUnique) {
  ir::Policy p = MustCompile("syscalls { allow write read write\n allow close read }");
  std::vector<std::string> names;
  for (const auto& r : p.syscalls.rules) names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"close", "read", "write"}));
}

TEST(Ir, InAndOrLowerToOneRulePerDisjunct) {
  ir::Policy p = MustCompile(
      "syscalls {\n allow socket if arg0 in {AF_UNIX, AF_INET} and arg1 == SOCK_STREAM | SOCK_CLOEXEC\n"
      " deny ioctl if arg1 == TIOCSTI or arg1 == TIOCLINUX\n}");
  auto socket = RulesFor(p, "socket");
  ASSERT_EQ(socket.size(), 2u);
  EXPECT_EQ(socket[0].conditions,
            (std::vector<ir::ArgCondition>{{0, ir::CompareOp::kEq, 1, 0}, {1, ir::CompareOp::kEq, 0x80001, 0}}));
  EXPECT_EQ(socket[1].conditions,
            (std::vector<ir::ArgCondition>{{0, ir::CompareOp::kEq, 2, 0}, {1, ir::CompareOp::kEq, 0x80001, 0}}));
  auto ioctl = RulesFor(p, "ioctl");
  ASSERT_EQ(ioctl.size(), 2u);
  EXPECT_EQ(ioctl[0].conditions, (std::vector<ir::ArgCondition>{{1, ir::CompareOp::kEq, 0x5412, 0}}));
  EXPECT_EQ(ioctl[1].conditions, (std::vector<ir::ArgCondition>{{1, ir::CompareOp::kEq, 0x541C, 0}}));
}

TEST(Ir, MaskedNotEqualLowersToOneRulePerMaskBit) {
  // (a & M) != V  ==  OR over bits b of M of (a & b) == (~V & b)
  ir::Policy p = MustCompile("syscalls { deny clone if (arg0 & 0x30) != 0x10 errno EACCES }");
  auto clone = RulesFor(p, "clone");
  ASSERT_EQ(clone.size(), 2u);
  EXPECT_EQ(clone[0].conditions, (std::vector<ir::ArgCondition>{{0, ir::CompareOp::kMaskedEq, 0x0, 0x10}}));
  EXPECT_EQ(clone[1].conditions, (std::vector<ir::ArgCondition>{{0, ir::CompareOp::kMaskedEq, 0x20, 0x20}}));
  EXPECT_EQ(clone[0].action, (ir::Action{ir::ActionKind::kErrno, 13}));
}

TEST(Ir, MaskedEqualStaysOneCondition) {
  ir::Policy p = MustCompile("syscalls { kill clone if (arg0 & CLONE_NEWUSER) == CLONE_NEWUSER }");
  auto clone = RulesFor(p, "clone");
  ASSERT_EQ(clone.size(), 1u);
  EXPECT_EQ(clone[0].conditions,
            (std::vector<ir::ArgCondition>{{0, ir::CompareOp::kMaskedEq, 0x10000000, 0x10000000}}));
  EXPECT_EQ(clone[0].action.kind, ir::ActionKind::kKillProcess);
}

TEST(Ir, NamedSyscallBeatsGroupAndStricterGroupWins) {
  ir::Policy p = MustCompile("syscalls {\n allow @mount\n deny mount\n deny @system-service\n allow @basic-io\n}");
  auto mount = RulesFor(p, "mount");
  ASSERT_EQ(mount.size(), 1u);
  EXPECT_EQ(mount[0].action.kind, ir::ActionKind::kErrno);
  EXPECT_EQ(mount[0].group, "");
  auto read = RulesFor(p, "read");
  ASSERT_EQ(read.size(), 1u);
  EXPECT_EQ(read[0].action.kind, ir::ActionKind::kErrno);  // deny @system-service is stricter
}

TEST(Ir, PathsAndSizesAreCanonical) {
  ir::Policy p = MustCompile(
      "filesystem {\n readonly /usr /opt/x as /x\n tmpfs /tmp size 1GiB\n work /work quota 64MB direct\n"
      " hide /etc/shadow /etc/shadow\n}\nlimits { wall_time 1.5m memory 1GiB cpu 50% }");
  ASSERT_EQ(p.filesystem.mounts.size(), 3u);
  EXPECT_EQ(p.filesystem.mounts[0].target, "/tmp");
  EXPECT_EQ(p.filesystem.mounts[0].size_bytes, 1ull << 30);
  EXPECT_EQ(p.filesystem.mounts[1].target, "/usr");
  EXPECT_EQ(p.filesystem.mounts[2].source, "/opt/x");
  EXPECT_EQ(p.filesystem.mounts[2].target, "/x");
  EXPECT_EQ(p.filesystem.work.quota_bytes, 64000000u);
  EXPECT_EQ(p.filesystem.work.mode, ir::WorkMode::kDirect);
  EXPECT_EQ(p.filesystem.hidden, (std::vector<std::string>{"/etc/shadow"}));
  EXPECT_EQ(p.limits.wall_time_ms.value, 90000u);
  EXPECT_TRUE(p.limits.wall_time_ms.set);
  EXPECT_FALSE(p.limits.cpu_time_ms.set);
  EXPECT_EQ(p.limits.cpu_percent.value, 50u);
}

TEST(Ir, NetworkAllowListIsSortedAndParsed) {
  ir::Policy p = MustCompile("network allow { pypi.org:443 10.0.0.1:53 [::1]:8080 }");
  EXPECT_EQ(p.network.mode, ir::NetworkMode::kAllowList);
  ASSERT_EQ(p.network.allow.size(), 3u);
  EXPECT_EQ(p.network.allow[0], (ir::NetworkEndpoint{"10.0.0.1", 53}));
  EXPECT_EQ(p.network.allow[1], (ir::NetworkEndpoint{"::1", 8080}));
  EXPECT_EQ(p.network.allow[2], (ir::NetworkEndpoint{"pypi.org", 443}));
}

// getaddrinfo reads these through inet_aton: what looks like a name to the
// reviewer would be another address ("0x7f.1" is 127.0.0.1).
TEST(Ir, AllowListHostsInOctalHexOrShortIpv4FormAreRefused) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"010.0.0.1", "8.0.0.1"}, {"0x7f.1", "127.0.0.1"}, {"2130706433", "127.0.0.1"}, {"127.1", "127.0.0.1"}};
  for (const auto& [host, canonical] : cases) {
    std::optional<ir::Policy> policy;
    std::string out = testing::Diagnose("profile t {\nnetwork allow { " + host + ":443 }\n}\n", &policy);
    EXPECT_FALSE(policy.has_value()) << host;
    EXPECT_NE(out.find("ERROR: t.cocoon:2:17: host '" + host + "' is an IPv4 address in octal, hex or shortened form (" +
                       canonical + "); write it in dotted decimal: " + canonical + ":443"),
              std::string::npos)
        << out;
    EXPECT_EQ(out.find("empty allow-list"), std::string::npos) << "a cascade of the error:\n" << out;
  }
  // A name that merely starts with digits is still a name.
  EXPECT_EQ(MustCompile("network allow { 1password.com:443 }").network.allow.size(), 1u);
}

// Neither a name nor an address: an out-of-range or five-part "address"
// (resolvers read it as a malformed address), a label starting or ending
// with '-'. DNS names compare case-insensitively, so they are kept lowercase
// and a second spelling is a duplicate.
TEST(Ir, AllowListHostsThatAreNeitherANameNorAnAddressAreRefused) {
  for (const std::string host : {"256.1.1.1", "1.2.3.4.5", "999.999.999.999", "-bad.com", "bad-.com", "a..b"}) {
    std::optional<ir::Policy> policy;
    std::string out = testing::Diagnose("profile t {\nnetwork allow { " + host + ":443 }\n}\n", &policy);
    EXPECT_FALSE(policy.has_value()) << host;
    EXPECT_NE(out.find("invalid host name or IPv4 address '" + host + "'"), std::string::npos) << out;
  }
  ir::Policy p = MustCompile("network allow { Pypi.ORG:443 x-1.example_svc.com:80 }");
  ASSERT_EQ(p.network.allow.size(), 2u);
  EXPECT_EQ(p.network.allow[0], (ir::NetworkEndpoint{"pypi.org", 443}));
  std::optional<ir::Policy> policy;
  std::string out = testing::Diagnose("profile t {\nnetwork allow { EXAMPLE.com:443 example.com:443 }\n}\n", &policy);
  EXPECT_NE(out.find("duplicate endpoint 'example.com:443'"), std::string::npos) << "a second spelling:\n" << out;
}

// A port is decimal, with no leading zero: 0x1bb and 0443 read as 443 to
// some and as something else to others.
TEST(Ir, AllowListPortsAreDecimal) {
  for (const std::string endpoint : {"x.com:0x1bb", "x.com:0443"}) {
    std::optional<ir::Policy> policy;
    std::string out = testing::Diagnose("profile t {\nnetwork allow { " + endpoint + " }\n}\n", &policy);
    EXPECT_FALSE(policy.has_value()) << endpoint;
    EXPECT_NE(out.find("ERROR: t.cocoon:2:17: invalid port in '" + endpoint + "'; expected 1..65535 in decimal"),
              std::string::npos)
        << out;
    EXPECT_NE(out.find(" = help: write x.com:443\n"), std::string::npos) << out;
  }
}

// An IPv6 address has one spelling in the IR (RFC 5952), so that two
// spellings of one address are a duplicate.
TEST(Ir, AllowListIpv6AddressesAreNormalised) {
  ir::Policy p = MustCompile("network allow { [0:0:0:0:0:0:0:1]:8080 [::FFFF:10.0.0.1]:53 [FE80:0::1]:22 }");
  ASSERT_EQ(p.network.allow.size(), 3u);
  EXPECT_EQ(p.network.allow[0], (ir::NetworkEndpoint{"::1", 8080}));
  EXPECT_EQ(p.network.allow[1], (ir::NetworkEndpoint{"::ffff:10.0.0.1", 53}));
  EXPECT_EQ(p.network.allow[2], (ir::NetworkEndpoint{"fe80::1", 22}));
  std::string out = testing::Diagnose("profile t {\nnetwork allow { [::1]:8080 [0:0:0:0:0:0:0:1]:8080 }\n}\n");
  EXPECT_NE(out.find("duplicate endpoint '[0:0:0:0:0:0:0:1]:8080'"), std::string::npos) << out;
}

TEST(Ir, ExplicitAllowOfPrologueSyscallIsRecordedAsReopened) {
  ir::Policy p = MustCompile("syscalls { allow bpf read }");
  EXPECT_EQ(p.syscalls.reopened, (std::vector<std::string>{"bpf"}));
}

TEST(Ir, ArchitecturesAreAddedOnlyWhenWritten) {
  EXPECT_EQ(MustCompile("syscalls { allow read }").syscalls.architectures, (std::vector<ir::Arch>{ir::Arch::kX86_64}));
  EXPECT_EQ(MustCompile("syscalls { arch x32\n allow read }").syscalls.architectures,
            (std::vector<ir::Arch>{ir::Arch::kX86_64, ir::Arch::kX32}));
}

}  // namespace
}  // namespace cocoon::frontend
