// Sandbox cgroup names (cgroup_names.h): what identifies a group's
// supervisor, so that only a dead supervisor's groups are ever reclaimed.
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "enforcer/limits/cgroup_names.h"

namespace cocoon::enforcer {
namespace {

TEST(CgroupNamesTest, ANameCarriesThePidNamespaceAndThePidOfItsSupervisor) {
  ASSERT_NE(OwnPidNamespace(), 0u) << "/proc/self/ns/pid unreadable";
  SandboxCgroupOwner owner = ParseSandboxCgroupName(SandboxCgroupName(7));
  EXPECT_TRUE(owner.valid);
  EXPECT_EQ(owner.pid_namespace, OwnPidNamespace());
  EXPECT_EQ(owner.pid, getpid());
}

TEST(CgroupNamesTest, OtherNamesAreNotSandboxGroups) {
  for (const char* name : {"cocoon-27214-1",  // an older cocoon's name: no pid namespace in it
                           "cocoon-4026531836-12-", "cocoon-4026531836-0-1", "cocoon-4026531836-12-0",
                           "cocoon-4026531836-12-1x", "cocoon-x-12-1", "cocoon--12-1", "memory.limit_in_bytes",
                           "system.slice", "cocoon-4026531836-99999999999-1"}) {
    EXPECT_FALSE(ParseSandboxCgroupName(name).valid) << name;
  }
  EXPECT_TRUE(ParseSandboxCgroupName("cocoon-4026531836-12-3").valid);
}

TEST(CgroupNamesTest, AboutOneRunInSixteenSweeps) {
  int sweeps = 0;
  for (uint64_t run = 1; run <= 160; ++run) sweeps += ShouldSweepAbandonedCgroups(run) ? 1 : 0;
  EXPECT_EQ(sweeps, 10);
}

}  // namespace
}  // namespace cocoon::enforcer
