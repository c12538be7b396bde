// The shipped syscall group table.
//
// Modelled on systemd's documented SystemCallFilter= groups
// (systemd.exec(5), "System Call Filtering"), written for Cocoon's purpose:
// running untrusted code. Differences from systemd, all deliberate:
//  - io_uring_* live in @io-uring, not @aio: io_uring can create sockets and
//    open files without the corresponding syscalls, so seccomp cannot see what
//    it does (the Codex sandbox and moby deny it outright);
//  - setns/unshare live in @namespaces, not @process;
//  - process_vm_readv/writev live in @debug, not @ipc (they read another
//    process's memory like ptrace does);
//  - @system-service contains nothing the hardening prologue denies
//    (no @keyring, userfaultfd, io_uring, bpf, ...), so a policy that allows
//    it never silently reopens those; it does contain @sandbox, because
//    stacking a further seccomp filter or Landlock ruleset only restricts.
// Names that libseccomp 2.5.4 does not know on any architecture are dropped
// by ExpandGroup (tests/syscalls checks the table for typos).
#include "compiler/syscalls/syscall_groups.h"

#include <algorithm>
#include <cerrno>
#include <map>
#include <mutex>
#include <set>

namespace cocoon::syscalls {
namespace {

std::vector<SyscallGroup> BuildGroups() {
  std::vector<SyscallGroup> groups = {
      {"@aio",
       "Linux kernel AIO (libaio's io_setup/io_submit; its events come from the host-wide fs.aio-max-nr); "
       "glibc's POSIX aio uses threads instead; io_uring is separate (@io-uring)",
       {"io_cancel", "io_destroy", "io_getevents", "io_pgetevents", "io_pgetevents_time64", "io_setup",
        "io_submit"}},
      {"@basic-io", "Reading, writing, seeking and closing file descriptors",
       {"_llseek", "close", "close_range", "dup", "dup2", "dup3", "lseek", "pread64", "preadv", "preadv2",
        "pwrite64", "pwritev", "pwritev2", "read", "readv", "write", "writev"}},
      {"@chown", "Changing file ownership",
       {"chown", "chown32", "fchown", "fchown32", "fchownat", "lchown", "lchown32"}},
      {"@clock", "Setting the system clock",
       {"adjtimex", "clock_adjtime", "clock_adjtime64", "clock_settime", "clock_settime64", "settimeofday",
        "stime"}},
      {"@cpu-emulation", "CPU emulation and segment tricks (vm86, modify_ldt)",
       {"modify_ldt", "subpage_prot", "switch_endian", "vm86", "vm86old"}},
      {"@debug", "Debugging, tracing and reading other processes' memory",
       {"kcmp", "lookup_dcookie", "perf_event_open", "pidfd_getfd", "process_madvise", "process_vm_readv",
        "process_vm_writev", "ptrace", "rtas", "s390_runtime_instr", "sys_debug_setcontext"}},
      {"@default", "Calls every program needs: memory, time, ids, exit, futexes, execve",
       {"arch_prctl",        "brk",
        "cacheflush",        "clock_getres",
        "clock_getres_time64", "clock_gettime",
        "clock_gettime64",   "clock_nanosleep",
        "clock_nanosleep_time64", "execve",
        "exit",              "exit_group",
        "futex",             "futex_time64",
        "futex_waitv",       "get_robust_list",
        "get_thread_area",   "getegid",
        "getegid32",         "geteuid",
        "geteuid32",         "getgid",
        "getgid32",          "getgroups",
        "getgroups32",       "getpgid",
        "getpgrp",           "getpid",
        "getppid",           "getrandom",
        "getresgid",         "getresgid32",
        "getresuid",         "getresuid32",
        "getrlimit",         "getsid",
        "gettid",            "gettimeofday",
        "getuid",            "getuid32",
        "madvise",           "membarrier",
        "mmap",              "mmap2",
        "mprotect",          "mremap",
        "munmap",            "nanosleep",
        "pause",             "prlimit64",
        "restart_syscall",   "riscv_flush_icache",
        "rseq",              "rt_sigreturn",
        "sched_getaffinity", "sched_yield",
        "set_robust_list",   "set_thread_area",
        "set_tid_address",   "set_tls",
        "sigreturn",         "time",
        "ugetrlimit",        "uname"}},
      {"@file-system", "Opening, creating, renaming, stat-ing and watching files and directories",
       {"access",       "chdir",        "chmod",      "close",       "creat",        "faccessat",
        "faccessat2",   "fallocate",    "fchdir",     "fchmod",      "fchmodat",     "fchmodat2",
        "fcntl",        "fcntl64",      "fgetxattr",  "flistxattr",  "fremovexattr", "fsetxattr",
        "fstat",        "fstat64",      "fstatat64",  "fstatfs",     "fstatfs64",    "ftruncate",
        "ftruncate64",  "futimesat",    "getcwd",     "getdents",    "getdents64",   "getxattr",
        "inotify_add_watch", "inotify_init", "inotify_init1", "inotify_rm_watch", "lgetxattr", "link",
        "linkat",       "listxattr",    "llistxattr", "lremovexattr", "lsetxattr",   "lstat",
        "lstat64",      "mkdir",        "mkdirat",    "mknod",       "mknodat",      "mmap",
        "mmap2",        "munmap",       "newfstatat", "oldfstat",    "oldlstat",     "oldstat",
        "open",         "openat",       "openat2",    "readlink",    "readlinkat",   "removexattr",
        "rename",       "renameat",     "renameat2",  "rmdir",       "setxattr",     "stat",
        "stat64",       "statfs",       "statfs64",   "statx",       "symlink",      "symlinkat",
        "truncate",     "truncate64",   "unlink",     "unlinkat",    "utime",        "utimensat",
        "utimensat_time64", "utimes"}},
      {"@io-event", "Waiting for events on file descriptors (poll, select, epoll, eventfd)",
       {"_newselect", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_ctl_old", "epoll_pwait",
        "epoll_pwait2", "epoll_wait", "epoll_wait_old", "eventfd", "eventfd2", "poll", "ppoll",
        "ppoll_time64", "pselect6", "pselect6_time64", "select"}},
      {"@io-uring", "io_uring (Cocoon): invisible to seccomp, a frequent kernel escape route; denied by the prologue",
       {"io_uring_enter", "io_uring_register", "io_uring_setup"}},
      {"@ipc", "Pipes, SysV IPC, POSIX message queues and memfds",
       {"ipc", "memfd_create", "mq_getsetattr", "mq_notify", "mq_open", "mq_timedreceive",
        "mq_timedreceive_time64", "mq_timedsend", "mq_timedsend_time64", "mq_unlink", "msgctl", "msgget",
        "msgrcv", "msgsnd", "pipe", "pipe2", "semctl", "semget", "semop", "semtimedop",
        "semtimedop_time64", "shmat", "shmctl", "shmdt", "shmget"}},
      {"@keyring", "The kernel keyring, which is not namespaced; denied by the prologue",
       {"add_key", "keyctl", "request_key"}},
      {"@memlock", "Locking memory into RAM", {"mlock", "mlock2", "mlockall", "munlock", "munlockall"}},
      {"@module", "Loading and unloading kernel modules; denied by the prologue",
       {"delete_module", "finit_module", "init_module"}},
      {"@mount", "Mounting, pivot_root and chroot",
       {"chroot", "fsconfig", "fsmount", "fsopen", "fspick", "mount", "mount_setattr", "move_mount",
        "open_tree", "pivot_root", "umount", "umount2"}},
      {"@namespaces", "Entering and creating namespaces (Cocoon); CLONE_NEW* flags stay denied by the prologue",
       {"setns", "unshare"}},
      {"@network-io", "Sockets: creating, connecting, sending and receiving",
       {"accept", "accept4", "bind", "connect", "getpeername", "getsockname", "getsockopt", "listen", "recv",
        "recvfrom", "recvmmsg", "recvmmsg_time64", "recvmsg", "send", "sendmmsg", "sendmsg", "sendto",
        "setsockopt", "shutdown", "socket", "socketcall", "socketpair"}},
      {"@obsolete", "Unusual, obsolete or unimplemented calls",
       {"_sysctl", "afs_syscall", "bdflush", "break", "create_module", "ftime", "get_kernel_syms",
        "getpmsg", "gtty", "idle", "lock", "mpx", "prof", "profil", "putpmsg", "query_module", "security",
        "sgetmask", "ssetmask", "stty", "sysfs", "tuxcall", "ulimit", "uselib", "ustat", "vserver"}},
      {"@pkey", "Memory protection keys", {"pkey_alloc", "pkey_free", "pkey_mprotect"}},
      {"@privileged", "Calls that need privileges (capabilities) to do anything useful",
       {"@chown", "@clock", "@module", "@raw-io", "@reboot", "@swap", "_sysctl", "acct", "bpf", "capset",
        "chroot", "fanotify_init", "fanotify_mark", "nfsservctl", "open_by_handle_at", "pivot_root",
        "quotactl", "quotactl_fd", "setdomainname", "setfsuid", "setfsuid32", "setgroups", "setgroups32",
        "sethostname", "setresuid", "setresuid32", "setreuid", "setreuid32", "setuid", "setuid32",
        "syslog", "vhangup"}},
      {"@process", "Creating, waiting for and signalling processes and threads",
       {"capget", "clone", "clone3", "execveat", "fork", "getrusage", "kill", "pidfd_open",
        "pidfd_send_signal", "prctl", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "swapcontext", "tgkill",
        "times", "tkill", "vfork", "wait4", "waitid", "waitpid"}},
      {"@raw-io", "Raw I/O port and PCI access",
       {"ioperm", "iopl", "pciconfig_iobase", "pciconfig_read", "pciconfig_write", "s390_pci_mmio_read",
        "s390_pci_mmio_write"}},
      {"@reboot", "Rebooting and loading a new kernel", {"kexec_file_load", "kexec_load", "reboot"}},
      {"@resources", "Changing scheduling, NUMA placement and resource limits",
       {"ioprio_set", "mbind", "migrate_pages", "move_pages", "nice", "sched_setaffinity", "sched_setattr",
        "sched_setparam", "sched_setscheduler", "set_mempolicy", "set_mempolicy_home_node", "setpriority",
        "setrlimit"}},
      {"@sandbox", "Further restricting oneself: seccomp and Landlock",
       {"landlock_add_rule", "landlock_create_ruleset", "landlock_restrict_self", "seccomp"}},
      {"@setuid", "Changing user and group ids",
       {"setgid", "setgid32", "setgroups", "setgroups32", "setregid", "setregid32", "setresgid",
        "setresgid32", "setresuid", "setresuid32", "setreuid", "setreuid32", "setuid", "setuid32"}},
      {"@signal", "Handling and waiting for signals",
       {"rt_sigaction", "rt_sigpending", "rt_sigprocmask", "rt_sigsuspend", "rt_sigtimedwait",
        "rt_sigtimedwait_time64", "sigaction", "sigaltstack", "signal", "signalfd", "signalfd4",
        "sigpending", "sigprocmask", "sigsuspend"}},
      {"@swap", "Enabling and disabling swap devices", {"swapoff", "swapon"}},
      {"@sync", "Flushing files to storage",
       {"fdatasync", "fsync", "msync", "sync", "sync_file_range", "sync_file_range2", "syncfs"}},
      {"@system-service",
       "What ordinary programs need (shells, python, node, perl, compilers); nothing the prologue denies",
       {"@aio",           "@basic-io",       "@chown",          "@default",        "@file-system",
        "@io-event",      "@ipc",            "@memlock",        "@network-io",     "@pkey",
        "@process",       "@resources",      "@sandbox",        "@setuid",         "@signal",
        "@sync",          "@timer",          "capset",          "copy_file_range", "fadvise64",
        "fadvise64_64",   "flock",           "get_mempolicy",   "getcpu",          "getpriority",
        "ioctl",          "ioprio_get",      "name_to_handle_at", "oldolduname",   "olduname",
        "personality",    "readahead",       "readdir",         "remap_file_pages", "sched_get_priority_max",
        "sched_get_priority_min", "sched_getattr", "sched_getparam", "sched_getscheduler",
        "sched_rr_get_interval", "sched_rr_get_interval_time64", "sendfile", "sendfile64", "setfsgid",
        "setfsgid32",     "setfsuid",        "setfsuid32",      "setpgid",         "setsid",
        "splice",         "sysinfo",         "tee",             "umask",           "vmsplice"}},
      {"@timer", "Timers and alarms",
       {"alarm", "getitimer", "setitimer", "timer_create", "timer_delete", "timer_getoverrun",
        "timer_gettime", "timer_gettime64", "timer_settime", "timer_settime64", "timerfd_create",
        "timerfd_gettime", "timerfd_gettime64", "timerfd_settime", "timerfd_settime64", "times"}},
  };
  std::sort(groups.begin(), groups.end(),
            [](const SyscallGroup& a, const SyscallGroup& b) { return a.name < b.name; });
  return groups;
}

void Flatten(std::string_view name, std::set<std::string_view>& visiting, std::set<std::string>& out) {
  const SyscallGroup* group = FindGroup(name);
  if (group == nullptr || !visiting.insert(name).second) return;  // unknown, or a cycle
  static const std::vector<ir::Arch> kAllArches = {ir::Arch::kX86_64, ir::Arch::kX32, ir::Arch::kX86,
                                                   ir::Arch::kAarch64};
  for (std::string_view member : group->members) {
    if (member.starts_with('@')) {
      Flatten(member, visiting, out);
    } else if (IsKnownSyscall(member, kAllArches)) {
      out.emplace(member);
    }
  }
}

}  // namespace

const std::vector<SyscallGroup>& AllGroups() {
  static const std::vector<SyscallGroup> groups = BuildGroups();
  return groups;
}

const SyscallGroup* FindGroup(std::string_view name) {
  const auto& groups = AllGroups();
  auto it = std::lower_bound(groups.begin(), groups.end(), name,
                             [](const SyscallGroup& g, std::string_view n) { return g.name < n; });
  if (it == groups.end() || it->name != name) return nullptr;
  return &*it;
}

const std::vector<std::string>& ExpandGroup(std::string_view name) {
  // Each group flattened once per process, when first asked for: a profile's
  // `allow @system-service` asked libseccomp about each of its ~300 members
  // on four architectures, and `cocoon check` of a file of children of
  // strict did that again for every child. Entries are never removed, so a
  // reference stays valid; the lock is for compiles on several threads.
  static auto* mutex = new std::mutex;
  static auto* expanded = new std::map<std::string_view, std::vector<std::string>>;
  static const auto* none = new std::vector<std::string>;
  const SyscallGroup* group = FindGroup(name);
  if (group == nullptr) return *none;
  std::lock_guard<std::mutex> lock(*mutex);
  auto [it, inserted] = expanded->try_emplace(group->name);
  if (inserted) {
    std::set<std::string_view> visiting;
    std::set<std::string> out;
    Flatten(group->name, visiting, out);
    it->second.assign(out.begin(), out.end());
  }
  return it->second;
}

const std::vector<std::string_view>& PrologueDeniedSyscalls() {
  static const std::vector<std::string_view> names = [] {
    std::vector<std::string_view> v = {
        "add_key",         "bpf",           "delete_module",   "finit_module",
        "init_module",     "io_uring_enter", "io_uring_register", "io_uring_setup",
        "kexec_file_load", "kexec_load",    "keyctl",          "open_by_handle_at",
        "perf_event_open", "request_key",   "setns",           "userfaultfd",
    };
    std::sort(v.begin(), v.end());
    return v;
  }();
  return names;
}

std::string ReopenWarning(std::string_view name) {
  return "policy reopens " + std::string(name) + ", which the prologue denies by default";
}

const ir::Action* PrologueFixedAnswer(std::string_view name) {
  static const ir::Action kClone3{ir::ActionKind::kErrno, ENOSYS};
  return name == "clone3" ? &kClone3 : nullptr;
}

std::vector<PrologueArgGuard> PrologueArgGuards(bool netlink_refused) {
  using ir::CompareOp;
  using namespace prologue;
  const ir::Action eperm{ir::ActionKind::kErrno, EPERM};
  const ir::Action no_family{ir::ActionKind::kErrno, EAFNOSUPPORT};
  std::vector<PrologueArgGuard> guards;
  for (std::string_view name : {"clone", "unshare"}) {
    for (int bit = 0; bit < 32; ++bit) {
      const uint64_t b = uint64_t{1} << bit;
      if ((kCloneNewMask & b) != 0) guards.push_back({name, {{0, CompareOp::kMaskedEq, b, b}}, eperm, "a CLONE_NEW* flag"});
    }
  }
  guards.push_back({"ioctl", {{1, CompareOp::kMaskedEq, kTiocsti, kLow32}}, eperm, "TIOCSTI"});
  guards.push_back({"ioctl", {{1, CompareOp::kMaskedEq, kTioclinux, kLow32}}, eperm, "TIOCLINUX"});
  for (std::string_view name : {"fcntl", "fcntl64"}) {
    guards.push_back({name, {{1, CompareOp::kMaskedEq, kFSetLease, kLow32}}, eperm, "F_SETLEASE"});
  }
  guards.push_back({"socket", {{0, CompareOp::kMaskedEq, kAfVsock, kLow32}}, no_family, "AF_VSOCK"});
  guards.push_back({"socket", {{0, CompareOp::kMaskedEq, kAfAlg, kLow32}}, no_family, "AF_ALG"});
  if (netlink_refused) {
    guards.push_back({"socket", {{0, CompareOp::kMaskedEq, kAfNetlink, kLow32}}, no_family,
                      "AF_NETLINK with the network off"});
  }
  guards.push_back({"seccomp",
                    {{0, CompareOp::kMaskedEq, kSetModeFilter, kLow32},
                     {1, CompareOp::kMaskedEq, kFilterFlagNewListener, kFilterFlagNewListener}},
                    eperm, "a filter with a notification listener"});
  return guards;
}

bool IsPrologueDenied(std::string_view name) {
  const auto& names = PrologueDeniedSyscalls();
  return std::binary_search(names.begin(), names.end(), name);
}

}  // namespace cocoon::syscalls
