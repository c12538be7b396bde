#include "enforcer/limits/host_caps.h"

#include <linux/magic.h>
#include <sys/statfs.h>
#include "compiler/common/file_read.h"

#include <unistd.h>

#include <string>
#include <string_view>
#include <vector>

namespace cocoon::enforcer {
namespace {

std::vector<std::string_view> Split(std::string_view text, char sep) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string_view::npos) end = text.size();
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

bool Contains(const std::vector<std::string_view>& list, std::string_view item) {
  for (auto entry : list) {
    if (entry == item) return true;
  }
  return false;
}

// mountinfo escapes spaces etc. as \040 (proc(5)); cgroup mounts never need
// it in practice, but decode so a path is never misread.
std::string Unescape(std::string_view field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      int value = 0;
      bool octal = true;
      for (size_t k = 1; k <= 3; ++k) {
        char c = field[i + k];
        if (c < '0' || c > '7') octal = false;
        value = value * 8 + (c - '0');
      }
      if (octal) {
        out.push_back(static_cast<char>(value));
        i += 3;
        continue;
      }
    }
    out.push_back(field[i]);
  }
  return out;
}

// An unreadable file is an absent fact about the host (host_caps.h), never
// an error.
std::string ReadSmallFile(const std::string& path) {
  auto text = ReadFileToString(path);
  return text.ok() ? std::move(*text) : std::string();
}

// Applies one mountinfo line: "... mountpoint opts - fstype source superopts".
void ApplyMountLine(std::string_view line, HostCapabilities& caps) {
  auto fields = Split(line, ' ');
  size_t dash = 0;
  while (dash < fields.size() && fields[dash] != "-") ++dash;
  if (dash < 5 || dash + 3 > fields.size()) return;
  std::string_view fstype = fields[dash + 1];
  std::string mount_point = Unescape(fields[4]);
  if (fstype == "cgroup2") {
    if (!caps.v2.mounted) {
      caps.v2.mounted = true;
      caps.v2.mount = mount_point;
    }
    return;
  }
  if (fstype != "cgroup") return;
  auto options = Split(fields[dash + 3], ',');
  auto set = [&](CgroupHierarchy& hierarchy, std::string_view controller) {
    if (Contains(options, controller) && !hierarchy.mounted) {
      hierarchy.mounted = true;
      hierarchy.mount = mount_point;
    }
  };
  set(caps.v1_memory, "memory");
  set(caps.v1_pids, "pids");
  set(caps.v1_cpu, "cpu");
  set(caps.v1_freezer, "freezer");
}

// Applies one /proc/self/cgroup line: "hierarchy-id:controllers:path".
void ApplyCgroupLine(std::string_view line, HostCapabilities& caps) {
  size_t first = line.find(':');
  if (first == std::string_view::npos) return;
  size_t second = line.find(':', first + 1);
  if (second == std::string_view::npos) return;
  std::string_view id = line.substr(0, first);
  auto controllers = Split(line.substr(first + 1, second - first - 1), ',');
  std::string path(line.substr(second + 1));
  if (id == "0" && controllers.size() == 1 && controllers[0].empty()) {
    caps.v2.own_path = path;
    return;
  }
  if (Contains(controllers, "memory")) caps.v1_memory.own_path = path;
  if (Contains(controllers, "pids")) caps.v1_pids.own_path = path;
  if (Contains(controllers, "cpu")) caps.v1_cpu.own_path = path;
  if (Contains(controllers, "freezer")) caps.v1_freezer.own_path = path;
}

bool DirWritable(const std::string& dir) { return access(dir.c_str(), W_OK | X_OK) == 0; }

// v2 controllers usable for a child group: in our cgroup.controllers, and
// either already in cgroup.subtree_control or enable-able by us (we can write
// the file). Enabling happens in Cgroup::Create.
void ProbeV2Controllers(HostCapabilities& caps) {
  std::string dir = caps.v2.Dir();
  auto available = ReadSmallFile(dir + "/cgroup.controllers");
  while (!available.empty() && (available.back() == '\n' || available.back() == ' ')) available.pop_back();
  auto names = Split(available, ' ');
  bool can_enable = access((dir + "/cgroup.subtree_control").c_str(), W_OK) == 0;
  caps.v2.writable = caps.v2.writable && can_enable;
  caps.v2_memory = Contains(names, "memory");
  caps.v2_pids = Contains(names, "pids");
  caps.v2_cpu = Contains(names, "cpu");
}

}  // namespace

std::string CgroupHierarchy::Dir() const {
  if (own_path.empty() || own_path == "/") return mount;
  return mount + own_path;
}

HostCapabilities ParseCgroupLayout(std::string_view mountinfo, std::string_view proc_cgroup) {
  HostCapabilities caps;
  for (auto line : Split(mountinfo, '\n')) ApplyMountLine(line, caps);
  for (auto line : Split(proc_cgroup, '\n')) ApplyCgroupLine(line, caps);
  return caps;
}

Result<HostCapabilities> DetectHostCapabilities() {
  std::string mountinfo = ReadSmallFile("/proc/self/mountinfo");
  std::string proc_cgroup = ReadSmallFile("/proc/self/cgroup");
  if (mountinfo.empty()) return FailedPreconditionError("cannot read /proc/self/mountinfo (is /proc mounted?)");
  HostCapabilities caps = ParseCgroupLayout(mountinfo, proc_cgroup);
  caps.interface_mounts = ParseHostInterfaceMounts(mountinfo);
  caps.privilege = geteuid() == 0 ? Privilege::kRoot : Privilege::kUnprivileged;
  caps.sandbox_host_uid = geteuid();
  for (CgroupHierarchy* h : {&caps.v2, &caps.v1_memory, &caps.v1_pids, &caps.v1_cpu, &caps.v1_freezer}) {
    h->writable = h->mounted && DirWritable(h->Dir());
  }
  if (caps.v2.mounted) ProbeV2Controllers(caps);
  if (caps.v1_memory.mounted) {
    caps.v1_memsw = access((caps.v1_memory.Dir() + "/memory.memsw.limit_in_bytes").c_str(), F_OK) == 0;
    caps.v1_kmem_tcp = access((caps.v1_memory.Dir() + "/memory.kmem.tcp.limit_in_bytes").c_str(), F_OK) == 0;
  }
  return caps;
}

bool CgroupV2ControllersMayBeInUse() {
  // A unified (pure v2) host: /sys/fs/cgroup is cgroup2 itself. One
  // statfs, not a read: cgroupfs reads cost ~10 us each on this machine.
  struct statfs fs {};
  if (statfs("/sys/fs/cgroup", &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC) return true;
  // A hybrid host (v1 controllers, an empty cgroup2 at
  // /sys/fs/cgroup/unified, as systemd mounts it and as on this machine).
  std::string text = ReadSmallFile("/sys/fs/cgroup/unified/cgroup.controllers");
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  auto names = Split(text, ' ');
  return Contains(names, "memory") || Contains(names, "pids") || Contains(names, "cpu");
}

}  // namespace cocoon::enforcer
