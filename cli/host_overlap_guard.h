// What a launch may never hand a sandbox to write or read through its work
// dir, copies and binds, whichever command asked (enforce, run, pipeline,
// mcp): Cocoon's own trust anchors, the policy being run, and the system
// trees. The work dir's contents are committed back by root after the run,
// and a writable bind is written in place, so a work dir that holds the
// artifact cache would let the sandboxed code rewrite the compiled policy of
// every later launch (the entries carry their own hashes; ownership is
// their only protection), and one that holds the audit log or key would let
// it erase or forge the record; one that holds the policy file, a file it
// includes or imports, or a place an import looks before the file it read
// (the policy's own directory, before the shipped policies/) would let it
// rewrite or shadow the policy of the next run. A bind or copy of the key
// would let it sign events.
#pragma once

#include <string>
#include <vector>

#include "compiler/common/status.h"

namespace cocoon::cli {

struct HostPathsToGuard {
  std::string work_dir;             // "" = none
  // A private dir Cocoon made for this call inside its cache (`cocoon mcp`,
  // a pipeline without --work): only its own contents are committed to.
  bool work_dir_is_ours = false;
  std::vector<std::string> copies;  // --copy sources
  std::vector<std::string> bound_sources;  // the plan's bind sources (read-only and writable)
  std::vector<std::string> writable_sources;  // those of them bound writable
  std::string audit_log, audit_key;
  // The policy's files and the paths where a new file would change what it
  // imports (PolicyArtifacts::source_files, shadowing_paths): a work dir is
  // committed back and a writable bind written in place, so either holding
  // one would let the sandbox rewrite, or shadow, the policy of later runs.
  std::vector<std::string> policy_sources;
  std::vector<std::string> policy_shadowing_paths;
  // The host paths the policy hides (its `hide`s, through the bind that
  // shows each): a work dir or copy must not hand them to the sandbox.
  std::vector<std::string> hidden_host_paths;
};

// The work dir and copies as checked, symlinks resolved: the launch uses
// these, so that a path swapped for a symlink after the check is refused by
// staging's no-symlink open rather than followed.
struct GuardedHostPaths {
  std::string work_dir;
  std::vector<std::string> copies;
};

// The caller's home directories, canonical: $HOME, the password database's
// entry for the effective uid and, under sudo, for SUDO_UID.
std::vector<std::string> CallersHomes();

// Whether `dir` (canonical) is the caller's home directory or a directory
// above it (/home). The sandbox reads with the caller's permissions (rootless
// it is the caller's own uid), so a read-only bind of the home shows its
// credentials: ~/.ssh, ~/.gnupg, cloud and API tokens.
bool HoldsCallersHome(const std::string& dir);

// The caller's credential store that `path` (canonical) is, is inside or
// holds (~/.ssh, ~/.gnupg, ~/.aws, ~/.netrc, ...), or "".
std::string CallersCredentialsOverlap(const std::string& path);

// InvalidArgument naming the flag and the path it collides with.
Result<GuardedHostPaths> CheckHostPathsForLaunch(const HostPathsToGuard& paths);

}  // namespace cocoon::cli
