// A read-only view of a host directory whose owner appears as someone else:
// an idmapped mount (mount_setattr(2) MOUNT_ATTR_IDMAP, Linux 5.12).
//
// Why: as root the sandbox runs as host uid 65534 (userns.h). A big work
// dir is staged through an overlay with the host dir as its lower layer
// (staging.h), but the overlay shows lower files with their host owners, so
// a root-owned checkout would be read-only to the sandbox user, and copying
// it in instead does not fit a small disk quota. Idmapping the lower layer
// makes the dir's owner (say host root) appear as the sandbox's host uid,
// so the sandbox can change its files (the overlay copies them up into the
// quota tmpfs; the host files are never written: the mount is read-only and
// the overlay never writes its lower layer). Files of other owners appear
// unmapped (nobody) and stay read-only to the sandbox: only the dir's
// owner uid and owner gid are mapped, so a file of a third owner is
// governed by its other bits, or its group bits when its group is the
// dir's group (tests/cli: a third owner's 0644 file is read-only).
//
// Who can: only a caller with CAP_SYS_ADMIN in the user namespace that owns
// the host filesystem (host root), on a filesystem that supports idmapped
// mounts (ext4, xfs, btrfs, tmpfs since 6.3, ...). The result is a detached
// mount (open_tree(2) OPEN_TREE_CLONE): the kernel refuses to idmap a mount
// that is already attached, and overlayfs refuses a layer outside the
// mounter's mount namespace, so the sandbox's child attaches it in its own
// namespace with move_mount(2) (work_mount_child.cc) before mounting the
// overlay over it.
#pragma once

#include <sys/types.h>

#include <string>

#include "compiler/common/status.h"
#include "enforcer/owned_fd.h"

namespace cocoon::enforcer {

struct IdShift {
  uid_t from_uid = 0;  // the host owner whose files...
  gid_t from_gid = 0;
  uid_t to_uid = 0;    // ...appear owned by this host uid
  gid_t to_gid = 0;
};

// A detached, read-only, nosuid, nodev mount of the directory open at
// `dir_fd` (not its submounts) with `shift` applied; `dir` names it in errors. Errors name the step (kernel or filesystem support:
// EINVAL/EPERM/ENOSYS) so that the caller can fall back to copying.
Result<OwnedFd> IdmappedReadOnlyTree(int dir_fd, const std::string& dir, const IdShift& shift);

}  // namespace cocoon::enforcer
