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

#include <string>

#include "compiler/common/status.h"

namespace cocoon::enforcer {

// `path` made absolute and free of symlinks, "." and "..", as realpath(3)
// does, but refusing (as root) a symlink that root does not own. ENOENT is
// reported as kNotFound.
Result<std::string> ResolveHostPath(const std::string& path);

// Opens `resolved` (a ResolveHostPath result) with openat2's
// RESOLVE_NO_SYMLINKS: fails (ELOOP) if a symlink appeared on the way since.
Result<int> OpenResolvedPath(const std::string& resolved, int flags);

}  // namespace cocoon::enforcer
