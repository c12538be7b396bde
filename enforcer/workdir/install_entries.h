// The last step of a staged commit: the built tree's entries go into the host
// work dir one by one, so that the work dir itself stays the same directory.
//
// The work dir is not replaced: its inode, owner and mode stay, and so does
// the working directory of every process in it (a shell that ran
// `cocoon run --work .`) and every fd open on it. What changes is each of its
// top-level entries, by one renameat2(2) each (man 2 rename), all on one
// filesystem, no data copied:
//  - a name both have: RENAME_EXCHANGE swaps the new entry in and the old one
//    out (a directory with everything below it, in one step);
//  - a name only the new tree has: RENAME_NOREPLACE moves it in;
//  - a name only the work dir has (the sandbox removed it): RENAME_NOREPLACE
//    moves it out;
//  - a name whose new entry IS the work dir's (an untouched original the
//    commit hard-linked): left alone.
// Afterwards the work dir holds exactly what the new tree held, and the new
// tree's directory holds the work dir's previous entries, for the caller to
// remove. Each entry is replaced atomically, the set of entries is not: a
// reader listing the work dir during the install may see some entries new
// and others still old.
//
// A step that fails undoes those before it, in reverse order, so a failed
// install leaves the work dir's entries as they were (and the new tree whole
// in its directory). If undoing fails too, the error is kDataLoss: the work
// dir holds part of the new contents, the new tree's directory the rest and
// the old entries they replaced.
#pragma once

#include <signal.h>

#include <cstdint>
#include <functional>
#include <string>

#include "compiler/common/status.h"

namespace cocoon::enforcer {

struct InstallOptions {
  // Test hook: fail (as a rename error would) after this many steps. 0 = never.
  uint64_t fail_after_steps = 0;
  // Test hook: runs after each step, with the number of steps done (to
  // send a signal or change the host in the middle of the install).
  std::function<void(uint64_t)> after_step_for_test;
};

// Holds, in the calling thread, every signal that could end or stop the
// process, from construction to destruction: the host-changing renames of
// a commit (install, undo, whole-dir swap) run under one, so that neither a
// signal's default action (SIGTERM, SIGQUIT, SIGPROF, SIGXFSZ, a real-time
// signal: terminate; SIGTSTP, SIGTTIN, SIGTTOU: stop) nor an embedding
// program's handler runs in the middle and leaves the work dir half
// installed. Afterwards the previous mask is back, and what came meanwhile
// is delivered then (or stays pending, where the caller holds it too: the
// CLI's signalfd). Not held: SIGKILL and SIGSTOP, which cannot be, and the
// synchronous faults (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS),
// which the kernel would deliver anyway and blocked would only turn into a
// kill. Other threads keep their masks: a multi-threaded embedder holds
// these there itself (the CLI has no other thread while it commits).
class HostChangeSignalHold {
 public:
  HostChangeSignalHold();
  ~HostChangeSignalHold();
  HostChangeSignalHold(const HostChangeSignalHold&) = delete;
  HostChangeSignalHold& operator=(const HostChangeSignalHold&) = delete;

 private:
  bool held_ = false;
  sigset_t previous_{};
};

// Whether InstallEntries(new_fd, host_fd) can make every rename it would,
// decided before the host is touched: Ok, or kFailedPrecondition saying
// why not. rename(2) needs write permission on the work dir, and a directory
// that changes parent needs it on itself (its ".." changes). Root has both.
// An unprivileged committer needs the work dir to be its own (owner write
// is granted for the install when it lacks it) or writable by it, and each
// top-level directory the install would exchange or move out to be its own
// (GrantOwnerWrite); in a sticky work dir that is not its own, every such
// entry. A root-owned `build/` left by `sudo make` is not: the caller then
// swaps the whole work dir instead (commit.cc).
Status CheckInstallPossible(int new_fd, int host_fd);

// Installs the entries of the directory `new_fd` into the directory
// `host_fd` (see above); `host_dir` names the work dir in messages. A
// work dir of the committer's own that lacks owner write (or search) has
// them for the install and its exact mode back afterwards, also after a
// failed install has been undone. Holds the signals (HostChangeSignalHold)
// from the first rename to the last, undo included.
Status InstallEntries(int new_fd, int host_fd, const std::string& host_dir, const InstallOptions& options = {});

}  // namespace cocoon::enforcer
