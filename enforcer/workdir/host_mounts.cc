#include "enforcer/workdir/host_mounts.h"

#include <string>
#include <utility>
#include <string_view>
#include <vector>

namespace cocoon::enforcer {
namespace {

// Kernel interfaces that show or change the host, whatever mount namespace
// they are reached from:
// - proc: every host process, /proc/PID/root (their root directories),
//   environ and cmdline; sysfs: the host's devices, network interfaces,
//   kernel knobs; devtmpfs: the host's device nodes; devpts: the host's
//   terminals (a write to one types into someone's shell).
// - debugfs, tracefs, securityfs (the LSMs' policies, IMA), selinuxfs,
//   smackfs, apparmorfs, bpf (pinned maps and programs), pstore (the kernel's
//   crash logs), efivarfs (firmware variables, some of which brick a
//   machine when removed), configfs, fusectl, binfmt_misc (which
//   interpreter runs which binary, host-wide), rpc_pipefs and nfsd.
// - cgroup and cgroup2: the host's resource controls (limits, freezer,
//   device rules) and every group's processes.
// - nsfs: a bound namespace file (/proc/PID/ns/*), which setns(2) enters.
// - mqueue: the host IPC namespace's POSIX message queues.
// Not listed: hugetlbfs (memory files, like a tmpfs of huge pages: data,
// not an interface) and the ordinary data filesystems.
constexpr std::string_view kInterfaceTypes[] = {
    "proc",       "sysfs",   "devtmpfs", "devpts",   "debugfs",  "tracefs", "securityfs", "selinuxfs",
    "smackfs",    "apparmorfs", "bpf",   "pstore",   "efivarfs", "configfs", "fusectl",  "binfmt_misc",
    "rpc_pipefs", "nfsd",    "cgroup",   "cgroup2",  "nsfs",     "mqueue",
};

std::vector<std::string_view> MountInfoFields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  while (start <= line.size()) {
    size_t end = line.find(' ', start);
    if (end == std::string_view::npos) end = line.size();
    fields.push_back(line.substr(start, end - start));
    start = end + 1;
  }
  return fields;
}

// mountinfo escapes spaces, tabs, newlines and backslashes as octal (\040, proc(5)).
std::string UnescapeMountField(std::string_view field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size() && field[i + 1] >= '0' && field[i + 1] <= '3' &&
        field[i + 2] >= '0' && field[i + 2] <= '7' && field[i + 3] >= '0' && field[i + 3] <= '7') {
      out += static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 + (field[i + 3] - '0'));
      i += 3;
      continue;
    }
    out += field[i];
  }
  return out;
}

bool PathAtOrUnder(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

struct MountInfoLine {
  std::string device;  // "major:minor"
  HostInterfaceMount mount;
};

}  // namespace

bool IsHostInterfaceFsType(std::string_view fstype) {
  for (std::string_view type : kInterfaceTypes) {
    if (fstype == type) return true;
  }
  return false;
}

std::vector<HostInterfaceMount> ParseHostInterfaceMounts(std::string_view mountinfo) {
  // "id parent major:minor root mount_point options [optional...] - fstype source superoptions"
  std::vector<MountInfoLine> lines;
  // The filesystems mounted at /run or /var/run, or below: (device, root).
  std::vector<std::pair<std::string, std::string>> run_trees;
  size_t start = 0;
  while (start < mountinfo.size()) {
    size_t end = mountinfo.find('\n', start);
    if (end == std::string_view::npos) end = mountinfo.size();
    auto fields = MountInfoFields(mountinfo.substr(start, end - start));
    start = end + 1;
    size_t dash = 6;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    if (fields.size() < 5 || dash + 1 >= fields.size()) continue;
    MountInfoLine line;
    line.device = std::string(fields[2]);
    line.mount.root = UnescapeMountField(fields[3]);
    line.mount.mount_point = UnescapeMountField(fields[4]);
    line.mount.fstype = std::string(fields[dash + 1]);
    // Only memory filesystems at /run count as /run's (the tmpfs at /run,
    // /run/user/UID, /run/lock): what is mounted there from a disk is data of
    // that disk, not service sockets. Toolbox and distrobox bind the host's
    // `/` at /run/host, which made every mount of the root filesystem a /run
    // alias, and every bind, work dir and copy of it refused.
    const bool memory_fs = line.mount.fstype == "tmpfs" || line.mount.fstype == "ramfs";
    if (memory_fs &&
        (PathAtOrUnder(line.mount.mount_point, "/run") || PathAtOrUnder(line.mount.mount_point, "/var/run"))) {
      run_trees.emplace_back(line.device, line.mount.root);
    }
    lines.push_back(std::move(line));
  }
  std::vector<HostInterfaceMount> kept;
  for (MountInfoLine& line : lines) {
    const bool interface = IsHostInterfaceFsType(line.mount.fstype);
    // What a mount at /run shows, mounted elsewhere too: a bind of a host
    // socket (/run/docker.sock) or of a directory of them. The same device
    // and a root at or below that mount's root: a container's /run/secrets,
    // bound from the root filesystem's /var/lib/..., does not make every
    // other mount of the root filesystem one.
    bool run_alias = false;
    const std::string& point = line.mount.mount_point;
    if (!interface && !PathAtOrUnder(point, "/run") && !PathAtOrUnder(point, "/var/run")) {
      for (const auto& [device, root] : run_trees) {
        run_alias = run_alias || (device == line.device && PathAtOrUnder(line.mount.root, root));
      }
    }
    if (!interface && !run_alias) continue;
    line.mount.run_alias = run_alias;
    kept.push_back(std::move(line.mount));
  }
  return kept;
}

std::string HostInterfaceShownBy(const std::vector<HostInterfaceMount>& mounts, const std::string& resolved) {
  for (const HostInterfaceMount& mount : mounts) {
    if (PathAtOrUnder(mount.mount_point, resolved)) {
      const std::string where = mount.mount_point == resolved ? "is" : "holds";
      if (mount.run_alias) {
        return where + " a mount of the host's /run filesystem at " + mount.mount_point + " (" + mount.root +
               " there: the host's service sockets)";
      }
      return where + " a mount of the host's " + mount.fstype + " at " + mount.mount_point;
    }
    if (!PathAtOrUnder(resolved, mount.mount_point)) continue;
    // A bind of a directory inside a procfs, wherever it is mounted, shows
    // the host's processes as /proc itself does (ShowsHostProc, by mount).
    if (mount.fstype == "proc") return "is inside the host's proc mounted at " + mount.mount_point;
    // Inside a second name of the host's /run, or of a kernel interface
    // mounted away from the trees that hold them (/sys, /dev, /proc): the
    // path names neither /run nor /sys, which `--ro` and the docs refuse by
    // name, yet shows what they hold (a bind of /run/svc's sockets, a copy
    // of /sys/class/net). Paths inside the interface trees themselves stay
    // allowed: a policy that names /sys/devices/system/cpu means it.
    if (mount.run_alias) {
      return "is inside a mount of the host's /run filesystem at " + mount.mount_point + " (" + mount.root +
             " there: the host's service sockets)";
    }
    if (!PathAtOrUnder(mount.mount_point, "/sys") && !PathAtOrUnder(mount.mount_point, "/dev") &&
        !PathAtOrUnder(mount.mount_point, "/proc")) {
      return "is inside a mount of the host's " + mount.fstype + " at " + mount.mount_point +
             ", a second name for a kernel interface";
    }
  }
  return "";
}

}  // namespace cocoon::enforcer
