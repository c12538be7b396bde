// The narrow-parameter table (syscall_arg_widths.h), transcribed from the
// kernel's SYSCALL_DEFINE signatures (Linux 6.x: fs/, net/socket.c,
// kernel/sys.c, kernel/signal.c, ...). `int`, `unsigned int`, `pid_t`,
// `uid_t`, `gid_t`, `key_t`, `clockid_t`, `u32`: 32 bits; `umode_t`
// (`unsigned short`): 16 bits.
#include "compiler/syscalls/syscall_arg_widths.h"

#include <algorithm>

namespace cocoon::syscalls {
namespace {

constexpr uint8_t I = 32;  // int, unsigned int and the 32-bit typedefs
constexpr uint8_t M = 16;  // umode_t
constexpr uint8_t L = 64;  // pointer, size_t, long, unsigned long, loff_t

std::vector<SyscallArgWidths> MakeTable() {
  std::vector<SyscallArgWidths> t = {
      {"accept", {I, L, L, L, L, L}},             // int fd
      {"accept4", {I, L, L, I, L, L}},            // int fd, ..., int flags
      {"access", {L, I, L, L, L, L}},             // int mode
      {"arch_prctl", {I, L, L, L, L, L}},         // int option
      {"bind", {I, L, I, L, L, L}},               // int fd, ..., int addrlen
      {"bpf", {I, L, I, L, L, L}},                // int cmd, ..., unsigned int size
      {"chmod", {L, M, L, L, L, L}},              // umode_t mode
      {"chown", {L, I, I, L, L, L}},              // uid_t, gid_t
      {"clock_getres", {I, L, L, L, L, L}},       // clockid_t
      {"clock_gettime", {I, L, L, L, L, L}},
      {"clock_nanosleep", {I, I, L, L, L, L}},    // clockid_t, int flags
      {"clock_settime", {I, L, L, L, L, L}},
      {"close", {I, L, L, L, L, L}},              // unsigned int fd
      {"close_range", {I, I, I, L, L, L}},
      {"connect", {I, L, I, L, L, L}},            // int fd, ..., int addrlen
      {"creat", {L, M, L, L, L, L}},
      {"dup", {I, L, L, L, L, L}},
      {"dup2", {I, I, L, L, L, L}},
      {"dup3", {I, I, I, L, L, L}},
      {"epoll_create1", {I, L, L, L, L, L}},
      {"epoll_ctl", {I, I, I, L, L, L}},          // int epfd, int op, int fd
      {"eventfd2", {I, I, L, L, L, L}},
      {"execveat", {I, L, L, L, I, L}},           // int fd, ..., int flags
      {"faccessat", {I, L, I, L, L, L}},
      {"faccessat2", {I, L, I, I, L, L}},
      {"fallocate", {I, I, L, L, L, L}},          // int fd, int mode
      {"fanotify_init", {I, I, L, L, L, L}},
      {"fchdir", {I, L, L, L, L, L}},
      {"fchmod", {I, M, L, L, L, L}},
      {"fchmodat", {I, L, M, L, L, L}},
      {"fchown", {I, I, I, L, L, L}},
      {"fchownat", {I, L, I, I, I, L}},
      {"fcntl", {I, I, L, L, L, L}},              // unsigned int fd, unsigned int cmd
      {"fdatasync", {I, L, L, L, L, L}},
      {"flock", {I, I, L, L, L, L}},
      {"fstat", {I, L, L, L, L, L}},
      {"fstatfs", {I, L, L, L, L, L}},
      {"fsync", {I, L, L, L, L, L}},
      {"ftruncate", {I, L, L, L, L, L}},
      {"futex", {L, I, I, L, L, I}},              // int op, u32 val, ..., u32 val3
      {"getdents", {I, L, I, L, L, L}},
      {"getdents64", {I, L, I, L, L, L}},
      {"getpeername", {I, L, L, L, L, L}},
      {"getpgid", {I, L, L, L, L, L}},
      {"getpriority", {I, I, L, L, L, L}},
      {"getrandom", {L, L, I, L, L, L}},          // unsigned int flags
      {"getrlimit", {I, L, L, L, L, L}},
      {"getsid", {I, L, L, L, L, L}},
      {"getsockname", {I, L, L, L, L, L}},
      {"getsockopt", {I, I, I, L, L, L}},         // int fd, int level, int optname
      {"inotify_add_watch", {I, L, I, L, L, L}},
      {"inotify_init1", {I, L, L, L, L, L}},
      {"inotify_rm_watch", {I, I, L, L, L, L}},
      {"io_uring_enter", {I, I, I, I, L, L}},
      {"io_uring_register", {I, I, L, I, L, L}},
      {"io_uring_setup", {I, L, L, L, L, L}},
      {"ioctl", {I, I, L, L, L, L}},              // unsigned int fd, unsigned int cmd
      {"ioprio_set", {I, I, I, L, L, L}},
      {"kcmp", {I, I, I, L, L, L}},
      {"keyctl", {I, L, L, L, L, L}},             // int option
      {"kill", {I, I, L, L, L, L}},               // pid_t pid, int sig
      {"lchown", {L, I, I, L, L, L}},
      {"linkat", {I, L, I, L, I, L}},
      {"listen", {I, I, L, L, L, L}},
      {"lseek", {I, L, I, L, L, L}},              // unsigned int fd, ..., unsigned int whence
      {"madvise", {L, L, I, L, L, L}},            // int behavior
      {"memfd_create", {L, I, L, L, L, L}},
      {"mkdir", {L, M, L, L, L, L}},
      {"mkdirat", {I, L, M, L, L, L}},
      {"mknod", {L, M, I, L, L, L}},
      {"mknodat", {I, L, M, I, L, L}},
      {"mlock2", {L, L, I, L, L, L}},
      {"mlockall", {I, L, L, L, L, L}},
      {"msgctl", {I, I, L, L, L, L}},
      {"msgget", {I, I, L, L, L, L}},
      {"newfstatat", {I, L, L, I, L, L}},
      {"open", {L, I, M, L, L, L}},               // int flags, umode_t mode
      {"open_by_handle_at", {I, L, I, L, L, L}},
      {"openat", {I, L, I, M, L, L}},             // int dfd, ..., int flags, umode_t mode
      {"perf_event_open", {L, I, I, I, L, L}},
      {"personality", {I, L, L, L, L, L}},        // unsigned int
      {"pidfd_getfd", {I, I, I, L, L, L}},
      {"pidfd_open", {I, I, L, L, L, L}},
      {"pidfd_send_signal", {I, I, L, I, L, L}},
      {"pipe2", {L, I, L, L, L, L}},
      {"prctl", {I, L, L, L, L, L}},              // int option (arg2.. are unsigned long)
      {"pread64", {I, L, L, L, L, L}},
      {"prlimit64", {I, I, L, L, L, L}},
      {"pwrite64", {I, L, L, L, L, L}},
      {"read", {I, L, L, L, L, L}},
      {"readlinkat", {I, L, L, I, L, L}},
      {"reboot", {I, I, I, L, L, L}},
      {"recvfrom", {I, L, L, I, L, L}},           // int fd, ..., unsigned int flags
      {"recvmmsg", {I, L, I, I, L, L}},
      {"recvmsg", {I, L, I, L, L, L}},
      {"renameat", {I, L, I, L, L, L}},
      {"renameat2", {I, L, I, L, I, L}},
      {"rt_sigaction", {I, L, L, L, L, L}},
      {"rt_sigprocmask", {I, L, L, L, L, L}},
      {"rt_sigqueueinfo", {I, I, L, L, L, L}},
      {"rt_tgsigqueueinfo", {I, I, I, L, L, L}},
      {"sched_getaffinity", {I, I, L, L, L, L}},
      {"sched_setaffinity", {I, I, L, L, L, L}},  // pid_t pid, unsigned int len
      {"sched_setattr", {I, L, I, L, L, L}},
      {"sched_setscheduler", {I, I, L, L, L, L}},
      {"seccomp", {I, I, L, L, L, L}},            // unsigned int op, unsigned int flags
      {"semctl", {I, I, I, L, L, L}},
      {"semget", {I, I, I, L, L, L}},
      {"sendmmsg", {I, L, I, I, L, L}},
      {"sendmsg", {I, L, I, L, L, L}},
      {"sendto", {I, L, L, I, L, I}},             // int fd, ..., unsigned int flags, ..., int addr_len
      {"setfsgid", {I, L, L, L, L, L}},
      {"setfsuid", {I, L, L, L, L, L}},
      {"setgid", {I, L, L, L, L, L}},
      {"setns", {I, I, L, L, L, L}},              // int fd, int flags
      {"setpgid", {I, I, L, L, L, L}},
      {"setpriority", {I, I, I, L, L, L}},
      {"setregid", {I, I, L, L, L, L}},
      {"setresgid", {I, I, I, L, L, L}},
      {"setresuid", {I, I, I, L, L, L}},
      {"setreuid", {I, I, L, L, L, L}},
      {"setrlimit", {I, L, L, L, L, L}},
      {"setsockopt", {I, I, I, L, I, L}},         // int fd, int level, int optname, ..., int optlen
      {"setuid", {I, L, L, L, L, L}},
      {"shmat", {I, L, I, L, L, L}},
      {"shmctl", {I, I, L, L, L, L}},
      {"shmget", {I, L, I, L, L, L}},
      {"shutdown", {I, I, L, L, L, L}},
      {"signalfd4", {I, L, L, I, L, L}},
      {"socket", {I, I, I, L, L, L}},             // int family, int type, int protocol
      {"socketpair", {I, I, I, L, L, L}},
      {"statx", {I, L, I, I, L, L}},
      {"symlinkat", {L, I, L, L, L, L}},
      {"sync_file_range", {I, L, L, I, L, L}},
      {"syslog", {I, L, I, L, L, L}},
      {"tgkill", {I, I, I, L, L, L}},             // pid_t tgid, pid_t pid, int sig
      {"timerfd_create", {I, I, L, L, L, L}},
      {"tkill", {I, I, L, L, L, L}},
      {"umask", {I, L, L, L, L, L}},
      {"unlinkat", {I, L, I, L, L, L}},
      {"userfaultfd", {I, L, L, L, L, L}},
      {"utimensat", {I, L, L, I, L, L}},
      {"wait4", {I, L, I, L, L, L}},
      {"waitid", {I, I, L, I, L, L}},
      {"write", {I, L, L, L, L, L}},
  };
  std::sort(t.begin(), t.end(), [](const SyscallArgWidths& a, const SyscallArgWidths& b) { return a.name < b.name; });
  return t;
}

}  // namespace

const std::vector<SyscallArgWidths>& ArgWidthTable() {
  static const std::vector<SyscallArgWidths> table = MakeTable();
  return table;
}

int KernelArgBits(std::string_view name, int arg) {
  if (arg < 0 || arg >= 6) return 64;
  const std::vector<SyscallArgWidths>& table = ArgWidthTable();
  const auto it = std::lower_bound(table.begin(), table.end(), name,
                                   [](const SyscallArgWidths& e, std::string_view n) { return e.name < n; });
  if (it == table.end() || it->name != name) return 64;
  return it->bits[static_cast<size_t>(arg)];
}

}  // namespace cocoon::syscalls
