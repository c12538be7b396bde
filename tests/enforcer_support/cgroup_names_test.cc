// Sandbox cgroup names (cgroup_names.h): they never repeat, and they say
// whose group it is, so that only a dead supervisor's groups are swept.
#include <unistd.h>

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "enforcer/limits/cgroup_names.h"

namespace cocoon::enforcer {
namespace {

TEST(CgroupNamesTest, ANameCarriesThePidNamespaceAndThePidOfItsSupervisor) {
  ASSERT_NE(OwnPidNamespace(), 0u) << "/proc/self/ns/pid unreadable";
  SandboxCgroupOwner owner = ParseSandboxCgroupName(SandboxCgroupName());
  EXPECT_TRUE(owner.valid);
  EXPECT_EQ(owner.pid_namespace, OwnPidNamespace());
  EXPECT_EQ(owner.pid, getpid());
}

// A process that gets a dead supervisor's pid must not get its names: the
// random suffix differs even for the same pid.
TEST(CgroupNamesTest, NamesNeverRepeat) {
  std::set<std::string> names;
  for (int i = 0; i < 1000; ++i) names.insert(SandboxCgroupName());
  EXPECT_EQ(names.size(), 1000u);
}

TEST(CgroupNamesTest, OtherNamesAreNotSandboxGroups) {
  for (const char* name : {"cocoon-27214-1",  // an older cocoon's name: no pid namespace in it
                           "cocoon-4026531836-12-1", "cocoon-4026531836-0-0123456789abcdef",
                           "cocoon-4026531836-12-0123456789abcde", "cocoon-4026531836-12-0123456789abcdefa",
                           "cocoon-4026531836-12-0123456789ABCDEF", "cocoon-x-12-0123456789abcdef",
                           "cocoon--12-0123456789abcdef", "memory.limit_in_bytes", "system.slice",
                           "cocoon-4026531836-99999999999-0123456789abcdef"}) {
    EXPECT_FALSE(ParseSandboxCgroupName(name).valid) << name;
  }
  EXPECT_TRUE(ParseSandboxCgroupName("cocoon-4026531836-12-0123456789abcdef").valid);
}


}  // namespace
}  // namespace cocoon::enforcer
