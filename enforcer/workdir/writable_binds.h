// A policy's `writable SRC as DST` binds a host directory (or file) into the
// sandbox read-write, nosuid,nodev. Like a direct work dir, the sandbox
// writes the host's tree in place, and whatever it leaves there stays: nosuid
// holds only inside the sandbox, so `cp /usr/bin/id /wb/id && chmod 6755
// /wb/id` left a setuid binary of the caller's on the host for any local user
// to run, and a FIFO or a link to /etc/shadow waits there for the next host
// tool. So a writable bind is verified after every run as a direct work dir
// is (RemediateDirectTree): scanned through the fd opened before the run
// (the directory the sandbox was given, wherever its path now leads), and
// of the entries the run created or changed (change_floor.h), set-id bits
// are cleared and escaping links, FIFOs, sockets and device nodes removed;
// each is reported in the Outcome, with BreakoutFinding::mount naming the
// bind. The host's own entries there are left alone. A bound file has only
// its set-id bits to clear.
//
// The child binds a writable source only if it is the inode opened here
// (Covers): one swapped in between is refused, so the scan always reads the
// tree the sandbox wrote.
#pragma once

#include <sys/stat.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/common/status.h"
#include "enforcer/outcome.h"
#include "enforcer/owned_fd.h"

namespace cocoon::enforcer {

struct WritableBindSource {
  std::string source;  // host path, as the plan names it
  std::string target;  // inside the sandbox
};

struct WritableBindsResult {
  std::vector<BreakoutFinding> findings;     // the sandbox's, with BreakoutFinding::mount set
  std::vector<BreakoutFinding> preexisting;  // the host's own, left alone (also with mount)
  bool incomplete = false;  // something is left unverified or not defused on the host: `error` says what
  std::string error;
};

class WritableBinds {
 public:
  // Opens each source that resolves now (as root, through root's symlinks
  // only: host_path.h) and takes its change floor. A source that does not
  // resolve is skipped: the child spec's builder then reports it, or binds
  // what appeared meanwhile, which Covers refuses.
  static std::unique_ptr<WritableBinds> Prepare(const std::vector<WritableBindSource>& sources);

  // Whether the inode (dev, ino) is one of the prepared sources.
  bool Covers(dev_t dev, ino_t ino) const;

  // After every sandbox process is dead. `cancel_fd` readable (SIGINT,
  // SIGTERM, SIGHUP) stops a scan: what it found is still defused, and the
  // rest is reported unverified.
  WritableBindsResult Verify(int cancel_fd) const;

 private:
  struct Bind {
    std::string target;
    OwnedFd fd;  // O_RDONLY|O_DIRECTORY for a directory, O_PATH for a file (and an unreadable directory)
    bool is_dir = false;
    std::string unreadable;  // why a directory could not be opened for the scan: reported after the run
    dev_t dev = 0;
    ino_t ino = 0;
    struct timespec changed_since {};
  };
  void VerifyDir(const Bind& bind, int cancel_fd, WritableBindsResult& result) const;
  void VerifyFile(const Bind& bind, WritableBindsResult& result) const;

  std::vector<Bind> binds_;
};

}  // namespace cocoon::enforcer
