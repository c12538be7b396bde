// A temporary directory that a later run can tell is abandoned. Cocoon
// makes some directories for one run or one call only: the overlay's stage
// dir (in /tmp), an MCP call's work dir and a pipeline's shared work dir (in
// the private quick cache). They are removed when the run ends, but a
// SIGKILLed supervisor (the OOM killer, a container stop) removes nothing,
// and an agent that is killed often must not fill the disk with them.
//
// Liveness is a lock, not a guess: the creator holds an exclusive flock on a
// sibling file "<dir>.lock" for as long as the directory is in use, and the
// kernel drops it when the creator dies however it dies. The lock is beside
// the directory, not on it, because the directory itself may be a staged
// work dir that the run locks (a second lock on it from the same process
// would conflict with the run's own).
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "compiler/common/status.h"
#include "enforcer/owned_fd.h"

namespace cocoon::enforcer {

class ScratchDir {
 public:
  // Makes parent/<prefix>XXXXXX (mode 0700) and its lock. Now and then (one
  // call in 16) first removes the abandoned ones of this prefix in `parent`
  // (SweepAbandonedScratchDirs with ten minutes).
  static Result<std::unique_ptr<ScratchDir>> Create(const std::string& parent, const std::string& prefix);
  // Removes the directory, everything in it, and then its lock.
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  ScratchDir(OwnedFd parent, std::string name, std::string path, OwnedFd lock);
  OwnedFd parent_;
  std::string name_;
  std::string path_;
  OwnedFd lock_;
};

// This user's own directory for per-run state (the new root's mount point,
// the overlay's stage dirs, the work dir locks), made 0711 and never used
// when it is not ours or others can write it. Not /tmp itself: there
// another user can plant a name that a run is about to make (a lock beside
// a stage dir failed 19 runs in 30 with EEXIST) or a FIFO where a sweep
// opens a lock. Chosen once per process (StateDir::Choose), in this order:
//  - root: /run/cocoon (only root can make names in /run);
//  - $XDG_RUNTIME_DIR/cocoon, when XDG_RUNTIME_DIR is an absolute path to a
//    directory of ours that only we can use (0700, /run/user/<uid>);
//  - /tmp/.cocoon-<euid>;
//  - when that name is taken by another user (who can make it first in the
//    sticky /tmp, and whose directory we cannot remove), a fresh
//    /tmp/.cocoon-<euid>-XXXXXX of this process, silently: the process
//    removes it when it exits, and a later process's sweep when it was
//    killed (SweepAbandonedFallbackStateDirs).
Result<std::string> PrivateStateDir();

// Before an _exit (which runs no destructors): removes this process's
// fallback state dir, if it made one. A later PrivateStateDir chooses again.
void RemoveProcessStateDir();

// Where StateDir::Choose looks; tests point it elsewhere.
struct StateDirPlaces {
  uid_t euid = 0;
  std::string run = "/run";    // root's: <run>/cocoon
  std::string xdg_runtime_dir;  // $XDG_RUNTIME_DIR, "" when unset
  std::string tmp = "/tmp";
};

class StateDir {
 public:
  // The state dir for `places` (PrivateStateDir's order). A fallback dir
  // holds a file "lock" that its process keeps an exclusive flock on.
  static Result<std::unique_ptr<StateDir>> Choose(const StateDirPlaces& places);
  // A fallback dir is removed, with all in it, by the process that made it.
  ~StateDir();
  StateDir(const StateDir&) = delete;
  StateDir& operator=(const StateDir&) = delete;

  const std::string& path() const { return path_; }
  bool is_fallback() const { return lock_.valid(); }

 private:
  StateDir(std::string path, OwnedFd lock) : path_(std::move(path)), lock_(std::move(lock)) {}
  std::string path_;
  OwnedFd lock_;       // fallback only
  pid_t creator_ = getpid();  // a forked child that calls exit() must not remove it
};

// Removes tmp/.cocoon-<euid>-XXXXXX fallback state dirs whose lock nobody
// holds (or that have none and are unchanged for `min_age`: the moment
// between mkdtemp and the lock), when they are directories of `euid`'s:
// another user's entry of that name is left alone, never opened. Best
// effort; returns how many went.
size_t SweepAbandonedFallbackStateDirs(const std::string& tmp, uid_t euid, std::chrono::seconds min_age);

// The overlay's stage dirs in the state dir: ScratchDir prefix.
inline constexpr char kStageDirPrefix[] = "cocoon-stage-";

// Makes `path` with `mode` when it is missing, and returns it when it is a
// directory (not a link to one) that we own and that neither group nor
// others can write; refused otherwise, since in a parent others could write
// it may have been planted.
Result<std::string> EnsurePrivateDir(const std::string& path, mode_t mode);

// Removes the directories parent/<prefix>XXXXXX whose lock nobody holds
// (and stray locks without a directory), when they are this user's and
// unchanged for `min_age`: the age covers the moment between a directory's
// mkdtemp and its lock. Best effort; returns how many directories went.
size_t SweepAbandonedScratchDirs(const std::string& parent, const std::string& prefix, std::chrono::seconds min_age);

// Removes the regular files parent/<name> of this user's, for the names
// `wanted` accepts, that nobody holds a flock(2) on: files whose users hold
// a lock on the file itself while they need it (StagedCodeFile), left
// behind by a user that was killed. The lock must be taken (shared is
// enough) before the file is relied on, and the name checked again after:
// a sweep may remove it in between. Best effort; returns how many went.
size_t SweepUnlockedFiles(const std::string& parent, const std::function<bool(const std::string& name)>& wanted);

}  // namespace cocoon::enforcer
