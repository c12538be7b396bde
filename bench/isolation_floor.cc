// isolation_floor: the bare isolation sequence of `cocoon enforce`, with
// nothing else, as a reference point for bench/run (issue 4's table has a
// row for it: "bare C prototype of the full sequence").
//
// It does what the enforcer's child does, in the same order and with the
// same kernel calls (clone with a user and pid namespace, the child's own
// mount/uts/ipc/net namespaces, loopback up, a fresh tmpfs root with the
// given binds, /proc, device binds, masks, pivot_root and a lazy detach of
// the old root, v1 cgroups joined by the child, a cgroup namespace, rlimits,
// a new session, every capability dropped, no_new_privs, Landlock, a
// precompiled seccomp program, execve with a clean environment), and what
// the supervisor must do (uid/gid maps, the cgroups, waiting for the
// sandbox, removing the cgroups). It has no policy, no cache, no plan, no
// output capture, no Outcome, no audit and next to no error reporting:
// the gap between it and `cocoon enforce` is the cost of everything that
// makes cocoon a product. It is a measuring stick, not a sandbox to use.
//
// Arguments (the mounts in the order given; bench/floor_args.py derives
// them from a compiled plan so that both build the same tree):
//   --ro-bind SRC DST | --ro-bind-try SRC DST | --dev-bind SRC DST
//   --symlink TARGET LINK | --tmpfs DST BYTES | --proc DST | --mask PATH
//   --ro-self PATH (bind PATH read-only over itself: /proc/sys and such)
//   --landlock-ro PATH | --landlock-rw PATH | --landlock-dev PATH (Landlock
//     rules, checked after pivot_root; none given: no Landlock)
//   --seccomp FILE (raw BPF, as `cocoon compile --target linux` writes it)
//   --cgroups-v1 MEMORY_BYTES PIDS CPU_QUOTA_US (root only)
//   --hostname NAME | --chdir DIR | -- CMD [ARG...]
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

namespace {

enum class OpKind { kRoBind, kRoBindTry, kDevBind, kSymlink, kTmpfs, kProc, kMask, kRoSelf };
struct Op {
  OpKind kind;
  const char* a;  // source, link target, or the path
  const char* b;  // destination, link path, or tmpfs size
};

constexpr int kMaxOps = 128;
Op ops[kMaxOps];
int op_count = 0;
const char* hostname = "sandbox";
const char* work_dir = "/";
char* const* command = nullptr;
bool use_cgroups = false;
const char* cgroup_values[3];  // memory.limit_in_bytes, pids.max, cpu.cfs_quota_us
const char* const kCgroupParents[3] = {"/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/cpu"};
const char* const kCgroupKnobs[3] = {"memory.limit_in_bytes", "pids.max", "cpu.cfs_quota_us"};
char cgroup_name[64];
struct LandlockRule {
  char kind;  // 'r' read and execute, 'w' everything, 'd' a device's read and write
  const char* path;
};
LandlockRule landlock_rules[kMaxOps];
int landlock_count = 0;
char root_dir[64];
sock_filter filter[4096];
sock_fprog filter_program{0, filter};

[[noreturn]] void Die(const char* what) {
  dprintf(2, "isolation_floor: %s: %s\n", what, strerror(errno));
  _exit(125);
}

void WriteFile(const char* path, const char* text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, text, strlen(text)) != static_cast<ssize_t>(strlen(text))) Die(path);
  close(fd);
}

// mount_setattr(2) (Linux 5.12); glibc 2.36 has no wrapper.
void SetAttr(const char* path, uint64_t set, bool recursive) {
  struct {
    uint64_t attr_set, attr_clr, propagation, userns_fd;
  } attr{set, 0, 0, 0};
  if (syscall(SYS_mount_setattr, AT_FDCWD, path, recursive ? AT_RECURSIVE : 0, &attr, sizeof attr) != 0) Die(path);
}
constexpr uint64_t kRdonly = 0x1, kNosuid = 0x2, kNodev = 0x4, kNoexec = 0x8;

// Relative to the new root (the cwd while the tree is built).
const char* Rel(const char* path) { return path[0] == '/' ? path + 1 : path; }

void MakeParents(const char* path) {
  char buf[4096];
  snprintf(buf, sizeof buf, "%s", path);
  for (char* p = strchr(buf, '/'); p != nullptr; p = strchr(p + 1, '/')) {
    *p = '\0';
    mkdir(buf, 0755);
    *p = '/';
  }
}

// A mount point of the right type: a bind of a file needs a file.
bool MakeMountPoint(const char* source, const char* target) {
  struct stat st;
  if (stat(source, &st) != 0) return false;
  MakeParents(target);
  if (S_ISDIR(st.st_mode)) {
    if (mkdir(target, 0755) != 0 && errno != EEXIST) Die(target);
  } else {
    int fd = open(target, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) Die(target);
    close(fd);
  }
  return true;
}

void BuildTree() {
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) Die("private propagation");
  if (mount("tmpfs", root_dir, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=1m") != 0) Die("root tmpfs");
  if (chdir(root_dir) != 0) Die("chdir root");
  for (int i = 0; i < op_count; ++i) {
    const Op& op = ops[i];
    switch (op.kind) {
      case OpKind::kRoBind:
      case OpKind::kRoBindTry:
        if (!MakeMountPoint(op.a, Rel(op.b))) {
          if (op.kind == OpKind::kRoBindTry) break;
          Die(op.a);
        }
        if (mount(op.a, Rel(op.b), nullptr, MS_BIND | MS_REC, nullptr) != 0) Die(op.a);
        SetAttr(Rel(op.b), kRdonly | kNosuid | kNodev, true);
        break;
      case OpKind::kDevBind:
        if (!MakeMountPoint(op.a, Rel(op.b))) Die(op.a);
        if (mount(op.a, Rel(op.b), nullptr, MS_BIND, nullptr) != 0) Die(op.a);
        SetAttr(Rel(op.b), kNosuid | kNoexec, false);
        break;
      case OpKind::kSymlink:
        MakeParents(Rel(op.b));
        if (symlink(op.a, Rel(op.b)) != 0) Die(op.b);
        break;
      case OpKind::kTmpfs: {
        char options[64];
        snprintf(options, sizeof options, "size=%s,mode=1777", op.b);
        MakeParents(Rel(op.a));
        mkdir(Rel(op.a), 0755);
        if (mount("tmpfs", Rel(op.a), "tmpfs", MS_NOSUID | MS_NODEV, options) != 0) Die(op.a);
        break;
      }
      case OpKind::kProc: {
        mkdir(Rel(op.a), 0755);
        if (mount("proc", Rel(op.a), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) != 0) Die("proc");
        char limit[4096];
        snprintf(limit, sizeof limit, "%s/sys/user/max_user_namespaces", Rel(op.a));
        int fd = open(limit, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, "1", 1) != 1) Die("max_user_namespaces");
        close(fd);
        break;
      }
      case OpKind::kRoSelf:
        if (mount(Rel(op.a), Rel(op.a), nullptr, MS_BIND | MS_REC, nullptr) != 0) Die(op.a);
        SetAttr(Rel(op.a), kRdonly | kNosuid | kNodev, true);
        break;
      case OpKind::kMask: {
        struct stat st;
        if (lstat(Rel(op.a), &st) != 0) break;  // absent: nothing to hide
        int rc = S_ISDIR(st.st_mode) ? mount("tmpfs", Rel(op.a), "tmpfs", MS_RDONLY, "size=0")
                                     : mount("/dev/null", Rel(op.a), nullptr, MS_BIND, nullptr);
        if (rc != 0) Die(op.a);
        break;
      }
    }
  }
  if (mount(nullptr, ".", nullptr, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, nullptr) != 0) Die("ro root");
  if (syscall(SYS_pivot_root, ".", ".") != 0) Die("pivot_root");
  if (umount2(".", MNT_DETACH) != 0) Die("detach the old root");
}

void ReadByte(int fd, char expected) {
  char c = 0;
  if (read(fd, &c, 1) != 1 || c != expected) _exit(126);
}

void BringUpLoopback() {
  int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  ifreq ifr{};
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "lo");
  if (fd < 0 || ioctl(fd, SIOCGIFFLAGS, &ifr) != 0) Die("lo");
  ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP);
  if (ioctl(fd, SIOCSIFFLAGS, &ifr) != 0) Die("lo up");
  close(fd);
}

void ApplyLandlock() {
  constexpr uint64_t kRead = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
  constexpr uint64_t kDevice = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE;
  long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  if (abi <= 0 || landlock_count == 0) return;
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;
  if (abi >= 2) attr.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
  int ruleset = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0));
  if (ruleset < 0) Die("landlock ruleset");
  for (int i = 0; i < landlock_count; ++i) {
    const LandlockRule& r = landlock_rules[i];
    landlock_path_beneath_attr rule{};
    rule.parent_fd = open(r.path, O_PATH | O_CLOEXEC);
    if (rule.parent_fd < 0) Die(r.path);
    struct stat st;
    fstat(rule.parent_fd, &st);
    rule.allowed_access = r.kind == 'r' ? kRead : r.kind == 'd' ? kDevice : attr.handled_access_fs;
    if (!S_ISDIR(st.st_mode)) {
      rule.allowed_access &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE;
    }
    if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0) Die(r.path);
    close(rule.parent_fd);
  }
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) Die("landlock_restrict_self");
  close(ruleset);
}

void WriteSelf(const char* name, const char* text) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/%s", name);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0 || write(fd, text, strlen(text)) != static_cast<ssize_t>(strlen(text))) Die(path);
  close(fd);
}

// The ids, then the nested user namespace mapping only them (the enforcer's
// enforcer/nested_userns.cc), then every capability dropped.
void DropPrivileges(bool as_root) {
  if (as_root && (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 || setresuid(65534, 65534, 65534) != 0)) {
    Die("setresuid");
  }
  if (as_root && prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) != 0) Die("dumpable");
  char uid_map[32], gid_map[32];
  snprintf(uid_map, sizeof uid_map, "%u %u 1\n", getuid(), getuid());
  snprintf(gid_map, sizeof gid_map, "%u %u 1\n", getgid(), getgid());
  if (unshare(CLONE_NEWUSER) != 0) Die("nested user namespace");
  WriteSelf("setgroups", "deny");
  WriteSelf("gid_map", gid_map);
  WriteSelf("uid_map", uid_map);
  for (int cap = 0; cap <= CAP_LAST_CAP; ++cap) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
  if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                                   SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED, 0, 0, 0) != 0) {
    Die("securebits");
  }
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  if (syscall(SYS_capset, &header, data) != 0) Die("capset");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) Die("no_new_privs");
}

[[noreturn]] void Child(int sync_fd, bool as_root) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (unshare(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET) != 0) Die("unshare");
  ReadByte(sync_fd, 'G');
  int cgroup_dirs[3] = {-1, -1, -1};
  for (int i = 0; use_cgroups && i < 3; ++i) cgroup_dirs[i] = open(kCgroupParents[i], O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (sethostname(hostname, strlen(hostname)) != 0) Die("sethostname");
  BringUpLoopback();
  BuildTree();
  if (use_cgroups) {
    ReadByte(sync_fd, 'C');
    char tasks[128];
    snprintf(tasks, sizeof tasks, "%s/tasks", cgroup_name);
    for (int fd : cgroup_dirs) {
      int t = openat(fd, tasks, O_WRONLY | O_CLOEXEC);
      if (t < 0 || write(t, "0", 1) != 1) Die("join cgroup");
      close(t);
      close(fd);
    }
  }
  if (unshare(CLONE_NEWCGROUP) != 0) Die("cgroup namespace");
  if (chdir(work_dir) != 0) Die(work_dir);
  const rlimit zero{0, 0}, files{256, 256}, size{64 << 20, 64 << 20}, cpu{5, 5};
  setrlimit(RLIMIT_CORE, &zero);
  setrlimit(RLIMIT_RTPRIO, &zero);
  setrlimit(RLIMIT_NOFILE, &files);
  setrlimit(RLIMIT_FSIZE, &size);
  setrlimit(RLIMIT_CPU, &cpu);
  if (setsid() < 0) Die("setsid");
  syscall(SYS_close_range, 3, ~0U, 0);
  DropPrivileges(as_root);
  ApplyLandlock();
  if (filter_program.len > 0 && syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &filter_program) != 0) Die("seccomp");
  char* const env[] = {const_cast<char*>("PATH=/usr/local/bin:/usr/bin:/bin"), const_cast<char*>("HOME=/tmp"), nullptr};
  execve(command[0], command, env);
  Die(command[0]);
}

void ParseArgs(int argc, char** argv) {
  auto need = [&](int i, int n) {
    if (i + n >= argc) {
      dprintf(2, "isolation_floor: %s needs %d argument(s)\n", argv[i], n);
      exit(2);
    }
  };
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    auto add = [&](OpKind kind, int n) {
      need(i, n);
      if (op_count == kMaxOps) exit(2);
      ops[op_count++] = Op{kind, argv[i + 1], n > 1 ? argv[i + 2] : nullptr};
      i += n;
    };
    if (!strcmp(arg, "--")) { command = argv + i + 1; break; }
    else if (!strcmp(arg, "--ro-bind")) add(OpKind::kRoBind, 2);
    else if (!strcmp(arg, "--ro-bind-try")) add(OpKind::kRoBindTry, 2);
    else if (!strcmp(arg, "--dev-bind")) add(OpKind::kDevBind, 2);
    else if (!strcmp(arg, "--symlink")) add(OpKind::kSymlink, 2);
    else if (!strcmp(arg, "--tmpfs")) add(OpKind::kTmpfs, 2);
    else if (!strcmp(arg, "--proc")) add(OpKind::kProc, 1);
    else if (!strcmp(arg, "--mask")) add(OpKind::kMask, 1);
    else if (!strcmp(arg, "--ro-self")) add(OpKind::kRoSelf, 1);
    else if (!strcmp(arg, "--landlock-ro") || !strcmp(arg, "--landlock-rw") || !strcmp(arg, "--landlock-dev")) {
      need(i, 1);
      if (landlock_count == kMaxOps) exit(2);
      const char kind = !strcmp(arg, "--landlock-ro") ? 'r' : !strcmp(arg, "--landlock-rw") ? 'w' : 'd';
      landlock_rules[landlock_count++] = LandlockRule{kind, argv[++i]};
    } else if (!strcmp(arg, "--hostname")) { need(i, 1); hostname = argv[++i]; }
    else if (!strcmp(arg, "--chdir")) { need(i, 1); work_dir = argv[++i]; }
    else if (!strcmp(arg, "--cgroups-v1")) {
      need(i, 3);
      use_cgroups = true;
      for (auto& value : cgroup_values) value = argv[++i];
    } else if (!strcmp(arg, "--seccomp")) {
      need(i, 1);
      int fd = open(argv[++i], O_RDONLY | O_CLOEXEC);
      ssize_t n = fd < 0 ? -1 : read(fd, filter, sizeof filter);
      if (n <= 0 || n % sizeof(sock_filter) != 0 || static_cast<size_t>(n) == sizeof filter) Die(argv[i]);
      filter_program.len = static_cast<unsigned short>(n / sizeof(sock_filter));
      close(fd);
    } else {
      dprintf(2, "isolation_floor: unknown argument %s\n", arg);
      exit(2);
    }
  }
  if (command == nullptr || command[0] == nullptr) {
    dprintf(2, "isolation_floor: missing -- CMD\n");
    exit(2);
  }
}

}  // namespace

int main(int argc, char** argv) {
  ParseArgs(argc, argv);
  const bool as_root = geteuid() == 0;
  if (use_cgroups && !as_root) use_cgroups = false;  // v1 groups are root's only
  snprintf(root_dir, sizeof root_dir, "/tmp/.isolation-floor-%d", static_cast<int>(geteuid()));
  mkdir(root_dir, 0700);
  // Random, like the enforcer's (enforcer/limits/cgroup_names.h): a group
  // that a killed run left behind never collides with a later pid.
  uint64_t nonce = 0;
  if (getrandom(&nonce, sizeof nonce, GRND_NONBLOCK) != sizeof nonce) nonce = static_cast<uint64_t>(time(nullptr));
  snprintf(cgroup_name, sizeof cgroup_name, "isolation-floor-%d-%016llx", static_cast<int>(getpid()),
           static_cast<unsigned long long>(nonce));
  int sync[2];
  if (pipe2(sync, O_CLOEXEC) != 0) Die("pipe");
  pid_t pid = static_cast<pid_t>(syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWPID | SIGCHLD, nullptr, nullptr, nullptr, nullptr));
  if (pid < 0) Die("clone");
  if (pid == 0) {
    close(sync[1]);
    Child(sync[0], as_root);
  }
  close(sync[0]);
  char path[256], map[64];
  if (as_root) {
    snprintf(map, sizeof map, "0 0 1\n65534 65534 1\n");
  } else {
    snprintf(path, sizeof path, "/proc/%d/setgroups", pid);
    WriteFile(path, "deny");
    snprintf(map, sizeof map, "0 %d 1\n", static_cast<int>(getegid()));
    snprintf(path, sizeof path, "/proc/%d/gid_map", pid);
    WriteFile(path, map);
    snprintf(map, sizeof map, "0 %d 1\n", static_cast<int>(geteuid()));
  }
  if (as_root) {
    snprintf(path, sizeof path, "/proc/%d/gid_map", pid);
    WriteFile(path, map);
  }
  snprintf(path, sizeof path, "/proc/%d/uid_map", pid);
  WriteFile(path, map);
  if (write(sync[1], "G", 1) != 1) Die("sync");
  for (int i = 0; use_cgroups && i < 3; ++i) {
    snprintf(path, sizeof path, "%s/%s", kCgroupParents[i], cgroup_name);
    if (mkdir(path, 0755) != 0) Die(path);
    char knob[320];
    snprintf(knob, sizeof knob, "%s/%s", path, kCgroupKnobs[i]);
    WriteFile(knob, cgroup_values[i]);
  }
  if (use_cgroups && write(sync[1], "C", 1) != 1) Die("sync");
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) Die("waitpid");
  for (int i = 0; use_cgroups && i < 3; ++i) {
    snprintf(path, sizeof path, "%s/%s", kCgroupParents[i], cgroup_name);
    rmdir(path);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
