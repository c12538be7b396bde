#include "enforcer/userns.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace cocoon::enforcer {
namespace {

Status WriteProcFile(pid_t pid, const char* name, const std::string& text) {
  std::string path = "/proc/" + std::to_string(pid) + "/" + name;
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open " + path);
  // One write(2): the kernel accepts a map only in a single write.
  ssize_t n = write(fd, text.data(), text.size());
  int err = errno;
  close(fd);
  if (n != static_cast<ssize_t>(text.size())) return ErrnoError("write " + path + " '" + text + "'", n < 0 ? err : EIO);
  return Status::Ok();
}

}  // namespace

IdMaps PlanIdMaps(uint32_t inside_uid, uint32_t inside_gid) {
  IdMaps maps;
  uid_t euid = geteuid();
  gid_t egid = getegid();
  maps.caller_is_root = euid == 0;
  if (!maps.caller_is_root) {
    maps.uid_map = std::to_string(inside_uid) + " " + std::to_string(euid) + " 1\n";
    maps.gid_map = std::to_string(inside_gid) + " " + std::to_string(egid) + " 1\n";
    maps.deny_setgroups = true;
    maps.sandbox_host_uid = euid;
    maps.sandbox_host_gid = egid;
    return maps;
  }
  maps.deny_setgroups = false;
  maps.sandbox_host_uid = kRootSandboxHostUid;
  maps.sandbox_host_gid = kRootSandboxHostGid;
  // Host root needs an inside id while the child builds the tree (see
  // userns.h); when the sandbox user is 0 inside, host root takes another.
  auto map = [](uint32_t inside, uint32_t sandbox_host) {
    uint32_t host_root_inside = inside == 0 ? kHostRootInsideIdWhenSandboxIsZero : 0;
    std::string line = std::to_string(inside) + " " + std::to_string(sandbox_host) + " 1\n";
    std::string root = std::to_string(host_root_inside) + " 0 1\n";
    return host_root_inside < inside ? root + line : line + root;
  };
  maps.uid_map = map(inside_uid, kRootSandboxHostUid);
  maps.gid_map = map(inside_gid, kRootSandboxHostGid);
  return maps;
}

Status WriteIdMaps(pid_t pid, const IdMaps& maps) {
  if (maps.deny_setgroups) COCOON_RETURN_IF_ERROR(WriteProcFile(pid, "setgroups", "deny"));
  COCOON_RETURN_IF_ERROR(WriteProcFile(pid, "gid_map", maps.gid_map));
  COCOON_RETURN_IF_ERROR(WriteProcFile(pid, "uid_map", maps.uid_map));
  return Status::Ok();
}

std::string UserNamespaceUnavailableMessage(int err) {
  return std::string("cannot create the sandbox's user namespace (") + strerror(err) +
         "). Cocoon needs unprivileged user namespaces. Enable them with "
         "`sysctl -w kernel.unprivileged_userns_clone=1` (Debian/Ubuntu kernels) and "
         "`sysctl -w user.max_user_namespaces=15000` (must be > 0); on Ubuntu 23.10+ also "
         "`sysctl -w kernel.apparmor_restrict_unprivileged_userns=0` or an AppArmor profile "
         "allowing userns for cocoon. Inside a container, the runtime's seccomp profile may "
         "block clone(CLONE_NEWUSER).";
}

}  // namespace cocoon::enforcer
