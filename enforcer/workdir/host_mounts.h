// The host mounts a bind must not carry into a sandbox. Binds are recursive
// (mounts.cc: open_tree with AT_RECURSIVE brings every submount along), so
// a procfs or sysfs mounted anywhere below a bound directory shows the
// host's processes or kernel to the sandbox, whatever the bound path is
// called. The path checks (ShowsHostProc, the CLI's IsForbiddenBind) cannot
// see that; only the mount table can.
//
// The table is parsed from /proc/self/mountinfo once per launch, by the host
// probe that reads it anyway (limits/host_caps.h), and kept small: only the
// mounts that matter here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace cocoon::enforcer {

// One mount from /proc/self/mountinfo that shows the host's kernel
// interfaces, or that shows the host's /run (its service sockets) by
// another name.
struct HostInterfaceMount {
  std::string mount_point;  // unescaped, absolute
  std::string fstype;       // "proc", "sysfs", ...; for a /run alias, its own type (tmpfs)
  std::string root;         // the mount's root inside its filesystem (field 4)
  bool run_alias = false;   // a mount of /run's filesystem outside /run (mount --bind /run/docker.sock ...)
};

// Whether a filesystem type is a kernel interface that shows the host (see
// the list in host_mounts.cc).
bool IsHostInterfaceFsType(std::string_view fstype);

// The mounts of `mountinfo` (the text of /proc/self/mountinfo) that are a
// kernel interface, or a view of /run's filesystem outside /run.
std::vector<HostInterfaceMount> ParseHostInterfaceMounts(std::string_view mountinfo);

// Why a bind of the host path `resolved` (symlinks resolved) would show the
// host to the sandbox: a kernel interface mounted at or below it, a /run
// alias below it, or a procfs it lies inside. Empty when none does.
std::string HostInterfaceShownBy(const std::vector<HostInterfaceMount>& mounts, const std::string& resolved);

}  // namespace cocoon::enforcer
