#include "enforcer/workdir/idmapped_tree.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <sys/prctl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace cocoon::enforcer {
namespace {

Status WriteMap(pid_t pid, const char* file, const std::string& line) {
  std::string path = "/proc/" + std::to_string(pid) + "/" + file;
  OwnedFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError("open " + path);
  // One write: the kernel takes a map only whole (user_namespaces(7)).
  if (write(fd.get(), line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    return ErrnoError("write " + path + " '" + line + "'");
  }
  return Status::Ok();
}

// A user namespace that holds nothing but the mapping: a child is born in
// it (clone(CLONE_NEWUSER) works from a threaded process, where unshare
// would not), we write its maps and keep a reference to the namespace
// through /proc/<pid>/ns/user, then kill and reap the child. The namespace
// lives on as long as the fd, and the idmapped mount, hold it.
Result<OwnedFd> MappingOnlyUserNamespace(const IdShift& shift) {
  const long parent = syscall(SYS_getpid);
  long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, nullptr, nullptr, nullptr, 0);
  if (pid < 0) return ErrnoError("clone(CLONE_NEWUSER) for the work dir's idmapping");
  if (pid == 0) {
    // Raw system calls only: this is a copy of a possibly threaded process.
    // It holds copies of all our fds (pipes, sockets, MCP's stdout) while it
    // lives: drop them all, so it can delay no EOF. And it must not outlive us: SIGKILL on
    // our death, and exit at once if we died before that was armed.
    syscall(SYS_close_range, 0U, ~0U, 0U);
    syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (syscall(SYS_getppid) != parent) syscall(SYS_exit_group, 0);
    // ppoll with no fds and no timeout: sleep until killed (pause(2) has no
    // system call of its own on arm64).
    for (;;) syscall(SYS_ppoll, nullptr, 0, nullptr, nullptr, 0);
  }
  auto reap = [pid] {
    kill(static_cast<pid_t>(pid), SIGKILL);
    while (waitpid(static_cast<pid_t>(pid), nullptr, 0) < 0 && errno == EINTR) {}
  };
  Status maps = WriteMap(static_cast<pid_t>(pid), "uid_map",
                         std::to_string(shift.from_uid) + " " + std::to_string(shift.to_uid) + " 1\n");
  if (maps.ok()) {
    maps = WriteMap(static_cast<pid_t>(pid), "gid_map",
                    std::to_string(shift.from_gid) + " " + std::to_string(shift.to_gid) + " 1\n");
  }
  OwnedFd userns;
  if (maps.ok()) {
    std::string path = "/proc/" + std::to_string(pid) + "/ns/user";
    userns.Reset(open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!userns.valid()) maps = ErrnoError("open " + path);
  }
  reap();
  if (!maps.ok()) return maps;
  return userns;
}

}  // namespace

Result<OwnedFd> IdmappedReadOnlyTree(int dir_fd, const std::string& dir, const IdShift& shift) {
  COCOON_ASSIGN_OR_RETURN(OwnedFd userns, MappingOnlyUserNamespace(shift));
  // Cloned from the fd, not by path: the dir the caller checked and scanned.
  OwnedFd tree(static_cast<int>(
      syscall(SYS_open_tree, dir_fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH)));
  if (!tree.valid()) return ErrnoError("open_tree(OPEN_TREE_CLONE) of " + dir);
  struct mount_attr attr {};
  attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  attr.userns_fd = static_cast<__u64>(userns.get());
  if (syscall(SYS_mount_setattr, tree.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
    return ErrnoError("idmapping " + dir + " (mount_setattr MOUNT_ATTR_IDMAP; the filesystem may not support it)");
  }
  return tree;
}

}  // namespace cocoon::enforcer
