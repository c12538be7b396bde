#include "compiler/syscalls/syscall_groups.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

namespace cocoon::syscalls {
namespace {

const std::vector<ir::Arch> kAll = {ir::Arch::kX86_64, ir::Arch::kX32, ir::Arch::kX86, ir::Arch::kAarch64};

bool Contains(const std::vector<std::string>& v, std::string_view s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

TEST(SyscallGroups, SortedUniqueAndDescribed) {
  const auto& groups = AllGroups();
  ASSERT_FALSE(groups.empty());
  for (size_t i = 0; i < groups.size(); ++i) {
    EXPECT_TRUE(groups[i].name.starts_with('@')) << groups[i].name;
    EXPECT_FALSE(groups[i].description.empty()) << groups[i].name;
    if (i > 0) {
      EXPECT_LT(groups[i - 1].name, groups[i].name);
    }
  }
}

TEST(SyscallGroups, SystemdGroupsExist) {
  for (const char* name : {"@aio", "@basic-io", "@chown", "@clock", "@cpu-emulation", "@debug", "@default",
                           "@file-system", "@io-event", "@ipc", "@keyring", "@memlock", "@module", "@mount",
                           "@network-io", "@obsolete", "@pkey", "@privileged", "@process", "@raw-io",
                           "@reboot", "@resources", "@sandbox", "@setuid", "@signal", "@swap", "@sync",
                           "@system-service", "@timer", "@io-uring", "@namespaces"}) {
    EXPECT_NE(FindGroup(name), nullptr) << name;
  }
  EXPECT_EQ(FindGroup("@nope"), nullptr);
  EXPECT_TRUE(ExpandGroup("@nope").empty());
}

// Every member is either a known group or a syscall libseccomp knows on some
// architecture (catches typos).
TEST(SyscallGroups, MembersAreKnown) {
  for (const auto& group : AllGroups()) {
    for (std::string_view m : group.members) {
      if (m.starts_with('@')) {
        EXPECT_NE(FindGroup(m), nullptr) << group.name << " -> " << m;
      } else {
        EXPECT_TRUE(IsKnownSyscall(m, kAll)) << group.name << " member " << m << " unknown to libseccomp";
      }
    }
  }
}

TEST(SyscallGroups, SystemServiceRunsOrdinaryPrograms) {
  auto names = ExpandGroup("@system-service");
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  for (const char* needed :
       {"execve", "execveat", "clone", "fork", "vfork", "wait4", "rseq", "set_robust_list", "prlimit64",
        "getrandom", "statx", "newfstatat", "openat", "pipe2", "epoll_create1", "epoll_ctl", "epoll_pwait",
        "epoll_wait", "futex", "mmap", "mprotect", "munmap", "mremap", "madvise", "sched_getaffinity",
        "sched_yield", "ioctl", "socket", "connect", "sendto", "recvfrom", "getdents64", "fcntl", "dup2",
        "rt_sigaction", "rt_sigprocmask", "arch_prctl", "set_tid_address", "brk", "exit_group", "getcwd",
        "readlink", "access", "faccessat2", "umask", "sysinfo", "uname", "prctl", "kill", "tgkill", "pipe",
        "select", "poll", "clock_gettime", "clock_nanosleep", "close_range", "memfd_create", "getpid"}) {
    EXPECT_TRUE(Contains(names, needed)) << needed;
  }
}

TEST(SyscallGroups, SystemServiceHoldsNothingThePrologueDenies) {
  auto names = ExpandGroup("@system-service");
  for (std::string_view denied : PrologueDeniedSyscalls()) {
    EXPECT_FALSE(Contains(names, denied)) << denied;
  }
  EXPECT_FALSE(Contains(names, "ptrace"));
  EXPECT_FALSE(Contains(names, "mount"));
}

TEST(SyscallGroups, NestedGroupsFlatten) {
  auto privileged = ExpandGroup("@privileged");
  EXPECT_TRUE(Contains(privileged, "init_module"));  // via @module
  EXPECT_TRUE(Contains(privileged, "reboot"));       // via @reboot
  EXPECT_TRUE(Contains(privileged, "chown"));        // via @chown
}

TEST(SyscallTable, KnownNames) {
  EXPECT_TRUE(IsKnownSyscall("getpid", {ir::Arch::kX86_64}));
  EXPECT_FALSE(IsKnownSyscall("getpidd", kAll));
  EXPECT_FALSE(IsKnownSyscall("@default", kAll));
  EXPECT_TRUE(IsKnownSyscall("socketcall", {ir::Arch::kX86}));
  EXPECT_EQ(ResolveSyscall("getpid", ir::Arch::kX86_64), 39);
  EXPECT_EQ(ResolveSyscall("getpid", ir::Arch::kX86), 20);
  EXPECT_EQ(ResolveSyscall("getpid", ir::Arch::kX32), 39 | 0x40000000);
  const auto& known = KnownSyscallNames();
  EXPECT_GT(known.size(), 300u);
  EXPECT_TRUE(std::binary_search(known.begin(), known.end(), std::string("openat")));
}

TEST(SyscallTable, Prologue) {
  EXPECT_TRUE(IsPrologueDenied("bpf"));
  EXPECT_TRUE(IsPrologueDenied("io_uring_setup"));
  EXPECT_FALSE(IsPrologueDenied("getpid"));
}

}  // namespace
}  // namespace cocoon::syscalls
