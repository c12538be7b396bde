// --log-json FILE: where the JSON Outcome (or the refusal) also goes, and
// how it gets there without harming what FILE names.
//
// A regular file (or none yet) is replaced through a temporary beside it and
// a rename: a reader never sees half an Outcome, and the file is never opened,
// so a symlink planted by someone who can write its directory is replaced,
// not followed (as root, O_TRUNC through one would clobber any file).
// A character device or a FIFO (/dev/null, a named pipe) of the caller's or
// root's is opened and written to: renaming over it would put a regular file
// in its place, which under /dev as root breaks the host. The same for a
// symlink straight to one when the link is root's or the caller's; one of
// another user's is refused, as is their FIFO or device (it would hand them
// the Outcome), and so is a chain of links or a link on the device's way. A FIFO must have its reader when the run starts, and a
// reader that stops reading holds cocoon for at most kDeviceWriteTimeoutMs.
// /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N (however spelt)
// name cocoon's own descriptors and are written through them; stdout is
// refused when it carries the Outcome already (--json, --stream). Anything
// else (a directory, a socket, a block device) is refused.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "compiler/common/status.h"
#include "enforcer/owned_fd.h"

namespace cocoon::cli {

class LogJsonDestination {
 public:
  static constexpr int kDeviceWriteTimeoutMs = 10000;
  enum class Kind { kReplaceFile, kDevice, kOwnDescriptor };

  // Checked before the run, so that a result nobody can read back is
  // refused before anything runs; a device or FIFO is opened now and held
  // (a FIFO's reader sees its end only after the result). `stdout_has_outcome`:
  // --json or --stream print the Outcome on stdout already.
  static Result<std::shared_ptr<const LogJsonDestination>> Open(const std::string& path, bool stdout_has_outcome);

  Status Write(const nlohmann::json& j) const;

 private:
  LogJsonDestination(std::string path, Kind kind) : path_(std::move(path)), kind_(kind) {}

  std::string path_;
  Kind kind_;
  enforcer::OwnedFd device_;  // kDevice
  int own_fd_ = -1;           // kOwnDescriptor: 1, 2 or N
};

// Opens `path` and writes `j` there: for results written before a run
// could open its destination (a refusal of its flags).
Status WriteLogJsonTo(const std::string& path, bool stdout_has_outcome, const nlohmann::json& j);

}  // namespace cocoon::cli
