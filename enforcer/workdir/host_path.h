// Host paths that cocoon opens on the caller's behalf: the work dir, --copy
// sources and bind sources.
//
// As root, a path through another user's directory is that user's to point
// anywhere: with a symlink there, `--work /home/alice/w` could hand the
// sandbox (and the commit) a directory root owns, `--copy` could copy a file
// only root may read, and a bind could expose what lies below a directory
// closed to others. So a root caller follows only symlinks owned by root
// (what fs.protected_symlinks asks in sticky directories, asked everywhere
// here), and opens the resolved path with no symlink allowed anywhere on
// the way, so that a link put in place after the resolution fails instead of
// being followed. An unprivileged caller reaches nothing through a link that
// it could not reach anyway, and resolves paths as realpath(3) does.
#pragma once

#include <sys/stat.h>

#include <optional>
#include <string>
#include <unordered_map>

#include "compiler/common/status.h"

namespace cocoon::enforcer {

// `path` made absolute and free of symlinks, "." and "..", as realpath(3)
// does, but refusing (as root) a symlink that root does not own. ENOENT is
// reported as kNotFound.
Result<std::string> ResolveHostPath(const std::string& path);

// ResolveHostPath for the many paths of one launch (a plan's bind sources,
// its masks' host paths): each path component is looked up once, where
// strict's twelve /etc files would each lstat /etc and its five merged-/usr
// links each resolve /usr again. What a resolution returns is checked again
// where it is used (the child opens it with no symlink allowed and binds it
// only if it is still the inode seen here), so a host change between two
// resolutions of one launch is caught there as for a single one.
class HostPathResolver {
 public:
  Result<std::string> Resolve(const std::string& path);
  // stat(2) of a path Resolve returned (no symlink in it any more): the
  // lstat seen while resolving it.
  Result<struct stat> StatResolved(const std::string& resolved);
  // The text of the symlink at `path` (not resolved any further), or
  // nullopt if `path` is not a symlink or cannot be looked up.
  std::optional<std::string> SymlinkText(const std::string& path);

 private:
  struct Lookup {
    int error = 0;  // lstat's errno, 0 if it succeeded
    struct stat st {};
    std::string link_text;  // for a symlink
  };
  const Lookup& LookUp(const std::string& candidate);

  std::unordered_map<std::string, Lookup> lookups_;
};

// Whether a bind of `resolved` shows the host's /proc: every host process
// and, through /proc/PID/root, its root directory, which no read-only flag
// on the bind applies to. A bind of / brings it too (binds are recursive).
bool ShowsHostProc(const std::string& resolved);

// Opens `resolved` (a ResolveHostPath result) with openat2's
// RESOLVE_NO_SYMLINKS: fails (ELOOP) if a symlink appeared on the way since.
// `mode`: for O_CREAT.
Result<int> OpenResolvedPath(const std::string& resolved, int flags, mode_t mode = 0);

}  // namespace cocoon::enforcer
