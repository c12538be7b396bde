// Sandbox paths as host paths, for the back ends without a mount namespace.
//
// Why: on Linux a policy path is where the sandbox sees it (the launch plan
// binds `readonly /opt/app as /app` at /app). macOS Seatbelt and Windows ACLs
// have no mounts: the process sees the host's own file system, so a rule on
// the sandbox path /app/secrets names a path that usually does not exist
// there and protects nothing, while /opt/app/secrets stays readable. Those
// back ends write their rules on the host path instead.
#pragma once

#include <string>
#include <vector>

#include "compiler/ir/policy_ir.h"

namespace cocoon::backends {

// `sandbox_path` (canonical, absolute) on the host: below the innermost bind
// mount that holds it (target == it or a parent), the mount's source plus
// the rest of the path. Unchanged when no bind mount holds it, when the
// innermost mount is a tmpfs (no host counterpart), or when the bind is not
// aliased (source == target).
std::string HostPathOf(const ir::Filesystem& filesystem, const std::string& sandbox_path);

// Whether HiddenNames may look at the compiling host's file system.
enum class HostLookup {
  kLexical,            // the policy's text only (plus the merged-/usr links)
  kResolveOnThisHost,  // also realpath(3) of each bind source and hidden path here
};

// Every sandbox path that shows the host file or directory `hide HIDDEN`
// names, for a back end that masks by sandbox path (OCI maskedPaths): what
// is hidden is the host object, and every other name a bind gives it is
// masked too (docs/language.md, as the enforcer's AddAliasMasks does at
// launch). First HIDDEN itself; then, when HIDDEN lies in a bind (or in a
// `root rootfs` tree), for each bind whose host source holds that host path
// the same path below the bind's target, and for each bind whose source lies
// inside it the bind's target. A name inside a deeper mount (which shows
// something else there) or below another name of the list is left out.
//
// Host paths are compared in several spellings, each a name of the same
// object on some host: as written; with the merged-/usr links (/bin, /sbin,
// /lib, /lib32, /lib64, /libx32 -> /usr/...) taken as links, since the
// runtime binds what they point to on a merged-/usr host (on another host
// that masks a path that is absent, which runtimes skip, or a same-named
// file: more than asked, never less); and with kResolveOnThisHost, as
// realpath(3) resolves it on the compiling host (a bind of a symlink shows
// its target). Symlinks of the run host that the compiling host lacks are
// unknown here: compile where you run.
std::vector<std::string> HiddenNames(const ir::Filesystem& filesystem, const std::string& hidden, HostLookup lookup);

}  // namespace cocoon::backends
