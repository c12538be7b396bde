// The user namespace (issue 4, step 1): who the sandbox runs as, and the
// uid/gid maps the parent writes for the child.
//
// Default inside user: 65534:65534 ("nobody"), from the policy's `user`.
// Why: inside its namespace the sandbox must hold no capability and own
// nothing it did not create. Running as uid 0 inside would make every
// root-owned file the sandbox can see "its own" for DAC purposes within the
// namespace and invite setuid-style confusion in tools that special-case
// uid 0. See docs/security.md.
//
// Maps:
//  rootless: "<inside uid> <caller uid> 1" and setgroups "deny" (required by
//    the kernel for an unprivileged gid_map: user_namespaces(7)). Files the
//    sandbox creates belong to the caller on the host.
//  root: "0 0 1" + "<inside uid> 65534 1" (same for gids), setgroups allowed
//    and emptied by the child. The sandbox process itself runs as host uid
//    65534, never host root; the extra 0->0 line exists only so that the
//    parent (host root) can populate the staged work dir on the child-owned
//    tmpfs (a new inode's owner must be mapped in the tmpfs's namespace) and
//    the child can build its mount tree before it drops to the inside user.
//    The sandboxed program cannot regain uid 0: no capabilities, an empty
//    bounding set, locked securebits and no_new_privs. A policy whose user
//    is 0 inside ("0 65534 1") gets host root at inside id 65535 instead
//    ("0 65534 1" + "65535 0 1"): the child still builds its tree as a
//    mapped id (an unmapped fsuid makes every create fail with EOVERFLOW),
//    then becomes inside 0, which is host 65534.
//
// These are the maps of the sandbox's first user namespace, which owns all
// its other namespaces. The command itself runs in a nested one that maps
// only its own uid and gid to themselves (nested_userns.cc): host root,
// mapped here as root, is not mapped where the command runs.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include <string>

#include "compiler/common/status.h"

namespace cocoon::enforcer {

inline constexpr uid_t kRootSandboxHostUid = 65534;
inline constexpr gid_t kRootSandboxHostGid = 65534;
inline constexpr uint32_t kHostRootInsideIdWhenSandboxIsZero = 65535;

struct IdMaps {
  std::string uid_map;
  std::string gid_map;
  bool deny_setgroups = true;
  bool caller_is_root = false;
  uid_t sandbox_host_uid = 0;  // what the sandboxed program is on the host
  gid_t sandbox_host_gid = 0;
};

IdMaps PlanIdMaps(uint32_t inside_uid, uint32_t inside_gid);

// Writes /proc/<pid>/setgroups, gid_map, uid_map (in that order: setgroups
// must be written before gid_map; user_namespaces(7)).
Status WriteIdMaps(pid_t pid, const IdMaps& maps);

// The refusal text when clone(CLONE_NEWUSER) fails, with how to enable it.
std::string UserNamespaceUnavailableMessage(int err);

}  // namespace cocoon::enforcer
