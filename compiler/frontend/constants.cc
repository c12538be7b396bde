#include "compiler/frontend/constants.h"

#include <map>

namespace cocoon::frontend {
namespace {

// See socket(2), clone(2), ioctl_tty(2) / ioctl_console(2), mmap(2), open(2),
// prctl(2), seccomp(2). Aliases (PF_*, AF_LOCAL) map to the same values.
const std::map<std::string, uint64_t, std::less<>>& Constants() {
  static const auto* table = new std::map<std::string, uint64_t, std::less<>>{
      // Address families (socket(2) arg0).
      {"AF_UNSPEC", 0}, {"AF_UNIX", 1}, {"AF_LOCAL", 1}, {"AF_INET", 2}, {"AF_AX25", 3},
      {"AF_IPX", 4}, {"AF_APPLETALK", 5}, {"AF_NETROM", 6}, {"AF_BRIDGE", 7}, {"AF_ATMPVC", 8},
      {"AF_X25", 9}, {"AF_INET6", 10}, {"AF_ROSE", 11}, {"AF_DECnet", 12}, {"AF_KEY", 15},
      {"AF_NETLINK", 16}, {"AF_PACKET", 17}, {"AF_RDS", 21}, {"AF_PPPOX", 24}, {"AF_LLC", 26},
      {"AF_IB", 27}, {"AF_MPLS", 28}, {"AF_CAN", 29}, {"AF_TIPC", 30}, {"AF_BLUETOOTH", 31},
      {"AF_RXRPC", 33}, {"AF_ISDN", 34}, {"AF_PHONET", 35}, {"AF_IEEE802154", 36}, {"AF_CAIF", 37},
      {"AF_ALG", 38}, {"AF_NFC", 39}, {"AF_VSOCK", 40}, {"AF_KCM", 41}, {"AF_QIPCRTR", 42},
      {"AF_SMC", 43}, {"AF_XDP", 44}, {"AF_MCTP", 45},
      {"PF_UNIX", 1}, {"PF_LOCAL", 1}, {"PF_INET", 2}, {"PF_INET6", 10}, {"PF_NETLINK", 16},
      {"PF_PACKET", 17}, {"PF_VSOCK", 40}, {"PF_ALG", 38},
      // Socket types (socket(2) arg1); the flags are or-ed into the type.
      {"SOCK_STREAM", 1}, {"SOCK_DGRAM", 2}, {"SOCK_RAW", 3}, {"SOCK_RDM", 4},
      {"SOCK_SEQPACKET", 5}, {"SOCK_DCCP", 6}, {"SOCK_PACKET", 10},
      {"SOCK_NONBLOCK", 0x800}, {"SOCK_CLOEXEC", 0x80000},
      // clone(2) / unshare(2) flags.
      {"CLONE_NEWTIME", 0x80}, {"CLONE_VM", 0x100}, {"CLONE_FS", 0x200}, {"CLONE_FILES", 0x400},
      {"CLONE_SIGHAND", 0x800}, {"CLONE_PIDFD", 0x1000}, {"CLONE_PTRACE", 0x2000},
      {"CLONE_VFORK", 0x4000}, {"CLONE_PARENT", 0x8000}, {"CLONE_THREAD", 0x10000},
      {"CLONE_NEWNS", 0x20000}, {"CLONE_SYSVSEM", 0x40000}, {"CLONE_SETTLS", 0x80000},
      {"CLONE_PARENT_SETTID", 0x100000}, {"CLONE_CHILD_CLEARTID", 0x200000},
      {"CLONE_DETACHED", 0x400000}, {"CLONE_UNTRACED", 0x800000},
      {"CLONE_CHILD_SETTID", 0x1000000}, {"CLONE_NEWCGROUP", 0x2000000},
      {"CLONE_NEWUTS", 0x4000000}, {"CLONE_NEWIPC", 0x8000000}, {"CLONE_NEWUSER", 0x10000000},
      {"CLONE_NEWPID", 0x20000000}, {"CLONE_NEWNET", 0x40000000}, {"CLONE_IO", 0x80000000},
      // Every namespace flag clone/unshare can take (what the prologue masks).
      // CLONE_NEWTIME (0x80) is left out on purpose: clone(2) reads its low
      // byte as the exit signal (CSIGNAL), so 0x80 there is not a namespace
      // flag; only unshare(2) and clone3(2) take CLONE_NEWTIME.
      {"CLONE_NEW_ANY", 0x7E020000},
      // TTY ioctls (ioctl(2) arg1). TIOCSTI and TIOCLINUX can inject input
      // into the controlling terminal (CVE-2017-5226 and friends).
      {"TCGETS", 0x5401}, {"TCSETS", 0x5402}, {"TIOCSCTTY", 0x540E}, {"TIOCGPGRP", 0x540F},
      {"TIOCSPGRP", 0x5410}, {"TIOCSTI", 0x5412}, {"TIOCGWINSZ", 0x5413}, {"TIOCSWINSZ", 0x5414},
      {"FIONREAD", 0x541B}, {"TIOCLINUX", 0x541C}, {"FIONBIO", 0x5421}, {"TIOCSETD", 0x5423},
      {"FIONCLEX", 0x5450}, {"FIOCLEX", 0x5451},
      // mmap(2) / mprotect(2).
      {"PROT_NONE", 0}, {"PROT_READ", 1}, {"PROT_WRITE", 2}, {"PROT_EXEC", 4},
      {"PROT_GROWSDOWN", 0x01000000}, {"PROT_GROWSUP", 0x02000000},
      {"MAP_SHARED", 1}, {"MAP_PRIVATE", 2}, {"MAP_FIXED", 0x10}, {"MAP_ANONYMOUS", 0x20},
      // open(2) flags.
      {"O_RDONLY", 0}, {"O_WRONLY", 1}, {"O_RDWR", 2}, {"O_ACCMODE", 3}, {"O_CREAT", 0x40},
      {"O_EXCL", 0x80}, {"O_NOCTTY", 0x100}, {"O_TRUNC", 0x200}, {"O_APPEND", 0x400},
      {"O_NONBLOCK", 0x800}, {"O_DIRECTORY", 0x10000}, {"O_NOFOLLOW", 0x20000},
      {"O_CLOEXEC", 0x80000}, {"O_PATH", 0x200000}, {"O_TMPFILE", 0x410000},
      // prctl(2) options.
      {"PR_SET_PDEATHSIG", 1}, {"PR_SET_DUMPABLE", 4}, {"PR_SET_NAME", 15},
      {"PR_SET_SECCOMP", 22}, {"PR_CAPBSET_DROP", 24}, {"PR_SET_NO_NEW_PRIVS", 38},
      // seccomp(2).
      {"SECCOMP_SET_MODE_STRICT", 0}, {"SECCOMP_SET_MODE_FILTER", 1},
      {"SECCOMP_GET_ACTION_AVAIL", 2}, {"SECCOMP_GET_NOTIF_SIZES", 3},
      {"SECCOMP_FILTER_FLAG_TSYNC", 1}, {"SECCOMP_FILTER_FLAG_LOG", 2},
      {"SECCOMP_FILTER_FLAG_SPEC_ALLOW", 4}, {"SECCOMP_FILTER_FLAG_NEW_LISTENER", 8},
      // Signals (kill(2) arg1): signal(7), x86_64 and aarch64 numbering. The
      // real-time signals have no fixed name (glibc's SIGRTMIN is 34, the
      // kernel's 32): write a number.
      {"SIGHUP", 1}, {"SIGINT", 2}, {"SIGQUIT", 3}, {"SIGILL", 4}, {"SIGTRAP", 5}, {"SIGABRT", 6},
      {"SIGIOT", 6}, {"SIGBUS", 7}, {"SIGFPE", 8}, {"SIGKILL", 9}, {"SIGUSR1", 10}, {"SIGSEGV", 11},
      {"SIGUSR2", 12}, {"SIGPIPE", 13}, {"SIGALRM", 14}, {"SIGTERM", 15}, {"SIGSTKFLT", 16},
      {"SIGCHLD", 17}, {"SIGCONT", 18}, {"SIGSTOP", 19}, {"SIGTSTP", 20}, {"SIGTTIN", 21},
      {"SIGTTOU", 22}, {"SIGURG", 23}, {"SIGXCPU", 24}, {"SIGXFSZ", 25}, {"SIGVTALRM", 26},
      {"SIGPROF", 27}, {"SIGWINCH", 28}, {"SIGIO", 29}, {"SIGPOLL", 29}, {"SIGPWR", 30}, {"SIGSYS", 31},
      // personality(2).
      {"PER_LINUX", 0}, {"ADDR_NO_RANDOMIZE", 0x0040000}, {"PER_LINUX32", 8},
  };
  return *table;
}

// errno(3): every name of Linux's asm-generic/errno-base.h and errno.h (the
// values of x86_64, aarch64 and the other generic ABIs), plus glibc's ENOTSUP
// alias. Written out, not read from the host's <errno.h>: the IR must be the
// same whichever OS compiles it. constants_test checks it against glibc.
const std::map<std::string, int, std::less<>>& Errnos() {
  static const auto* table = new std::map<std::string, int, std::less<>>{
      {"EPERM", 1}, {"ENOENT", 2}, {"ESRCH", 3}, {"EINTR", 4}, {"EIO", 5}, {"ENXIO", 6}, {"E2BIG", 7},
      {"ENOEXEC", 8}, {"EBADF", 9}, {"ECHILD", 10}, {"EAGAIN", 11}, {"EWOULDBLOCK", 11}, {"ENOMEM", 12},
      {"EACCES", 13}, {"EFAULT", 14}, {"ENOTBLK", 15}, {"EBUSY", 16}, {"EEXIST", 17}, {"EXDEV", 18},
      {"ENODEV", 19}, {"ENOTDIR", 20}, {"EISDIR", 21}, {"EINVAL", 22}, {"ENFILE", 23}, {"EMFILE", 24},
      {"ENOTTY", 25}, {"ETXTBSY", 26}, {"EFBIG", 27}, {"ENOSPC", 28}, {"ESPIPE", 29}, {"EROFS", 30},
      {"EMLINK", 31}, {"EPIPE", 32}, {"EDOM", 33}, {"ERANGE", 34}, {"EDEADLK", 35}, {"EDEADLOCK", 35},
      {"ENAMETOOLONG", 36}, {"ENOLCK", 37}, {"ENOSYS", 38}, {"ENOTEMPTY", 39}, {"ELOOP", 40}, {"ENOMSG", 42},
      {"EIDRM", 43}, {"ECHRNG", 44}, {"EL2NSYNC", 45}, {"EL3HLT", 46}, {"EL3RST", 47}, {"ELNRNG", 48},
      {"EUNATCH", 49}, {"ENOCSI", 50}, {"EL2HLT", 51}, {"EBADE", 52}, {"EBADR", 53}, {"EXFULL", 54},
      {"ENOANO", 55}, {"EBADRQC", 56}, {"EBADSLT", 57}, {"EBFONT", 59}, {"ENOSTR", 60}, {"ENODATA", 61},
      {"ETIME", 62}, {"ENOSR", 63}, {"ENONET", 64}, {"ENOPKG", 65}, {"EREMOTE", 66}, {"ENOLINK", 67},
      {"EADV", 68}, {"ESRMNT", 69}, {"ECOMM", 70}, {"EPROTO", 71}, {"EMULTIHOP", 72}, {"EDOTDOT", 73},
      {"EBADMSG", 74}, {"EOVERFLOW", 75}, {"ENOTUNIQ", 76}, {"EBADFD", 77}, {"EREMCHG", 78}, {"ELIBACC", 79},
      {"ELIBBAD", 80}, {"ELIBSCN", 81}, {"ELIBMAX", 82}, {"ELIBEXEC", 83}, {"EILSEQ", 84}, {"ERESTART", 85},
      {"ESTRPIPE", 86}, {"EUSERS", 87}, {"ENOTSOCK", 88}, {"EDESTADDRREQ", 89}, {"EMSGSIZE", 90},
      {"EPROTOTYPE", 91}, {"ENOPROTOOPT", 92}, {"EPROTONOSUPPORT", 93}, {"ESOCKTNOSUPPORT", 94},
      {"ENOTSUP", 95}, {"EOPNOTSUPP", 95}, {"EPFNOSUPPORT", 96}, {"EAFNOSUPPORT", 97}, {"EADDRINUSE", 98},
      {"EADDRNOTAVAIL", 99}, {"ENETDOWN", 100}, {"ENETUNREACH", 101}, {"ENETRESET", 102}, {"ECONNABORTED", 103},
      {"ECONNRESET", 104}, {"ENOBUFS", 105}, {"EISCONN", 106}, {"ENOTCONN", 107}, {"ESHUTDOWN", 108},
      {"ETOOMANYREFS", 109}, {"ETIMEDOUT", 110}, {"ECONNREFUSED", 111}, {"EHOSTDOWN", 112},
      {"EHOSTUNREACH", 113}, {"EALREADY", 114}, {"EINPROGRESS", 115}, {"ESTALE", 116}, {"EUCLEAN", 117},
      {"ENOTNAM", 118}, {"ENAVAIL", 119}, {"EISNAM", 120}, {"EREMOTEIO", 121}, {"EDQUOT", 122},
      {"ENOMEDIUM", 123}, {"EMEDIUMTYPE", 124}, {"ECANCELED", 125}, {"ENOKEY", 126}, {"EKEYEXPIRED", 127},
      {"EKEYREVOKED", 128}, {"EKEYREJECTED", 129}, {"EOWNERDEAD", 130}, {"ENOTRECOVERABLE", 131},
      {"ERFKILL", 132}, {"EHWPOISON", 133},
  };
  return *table;
}

template <typename Map>
std::vector<std::string> Keys(const Map& map) {
  std::vector<std::string> keys;
  for (const auto& [name, value] : map) keys.push_back(name);
  return keys;
}

}  // namespace

std::optional<uint64_t> LookupConstant(std::string_view name) {
  auto it = Constants().find(name);
  if (it == Constants().end()) return std::nullopt;
  return it->second;
}

const std::vector<std::string>& ConstantNames() {
  static const auto* names = new std::vector<std::string>(Keys(Constants()));
  return *names;
}

std::optional<int> LookupErrno(std::string_view name) {
  auto it = Errnos().find(name);
  if (it == Errnos().end()) return std::nullopt;
  return it->second;
}

const std::vector<std::string>& ErrnoNames() {
  static const auto* names = new std::vector<std::string>(Keys(Errnos()));
  return *names;
}

std::string ErrnoName(int value) {
  // Prefer the canonical spelling over aliases (EAGAIN over EWOULDBLOCK).
  static const char* const kPreferred[] = {"EAGAIN", "EOPNOTSUPP"};
  for (const char* name : kPreferred) {
    if (Errnos().at(name) == value) return name;
  }
  for (const auto& [name, number] : Errnos()) {
    if (number == value) return name;
  }
  return std::to_string(value);
}

}  // namespace cocoon::frontend
