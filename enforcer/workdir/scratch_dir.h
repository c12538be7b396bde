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

#include <chrono>
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

// /tmp/.cocoon-<euid>: this user's own directory for per-run state (the new
// root's mount point, the overlay's stage dirs), made 0711 and refused when
// it is not ours or others can write it. Not /tmp itself: there another user
// can plant a name that a run is about to make (a lock beside a stage dir
// failed 19 runs in 30 with EEXIST) or a FIFO where a sweep opens a lock.
Result<std::string> PrivateStateDir();

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

}  // namespace cocoon::enforcer
