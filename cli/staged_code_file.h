// Code staged as a file for one run, and removed when no run uses it.
//
// Code too long for an argv string (64 KiB), or for a runtime that only runs
// files (go, rust, java), is written to the quick dir named by its hash
// (WriteContentAddressed) and bound read-only at /cocoon/main<ext>: the
// generated policy names that path, so identical code gives an identical
// policy and hits the compiled-artifact cache. Pruning spares files younger
// than ten minutes (enforcer/cache_pruning.h), so left in place each
// distinct snippet stayed on the host's disk for that long: an MCP client
// sending 1 MiB snippets filled it at ~18 GiB per ten minutes.
//
// A StagedCodeFile holds a shared flock(2) on the file from before the
// policy is compiled until the run has ended; the last holder (the one that
// can take the lock exclusively) removes it. Removing it costs the cache
// nothing: the next run of the same code writes the same name again, and
// the policy naming it is still the cached one. A holder that was killed
// leaves its file; a later Stage sweeps those nobody holds (SweepAbandoned).
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "compiler/common/status.h"

namespace cocoon::cli {

class StagedCodeFile {
 public:
  // Writes (or finds) QuickDir()/<sha256 of bytes><suffix> and holds it.
  static Result<std::shared_ptr<StagedCodeFile>> Stage(const std::string& bytes, const std::string& suffix);
  // Removes the file unless another holder, in this process or another,
  // still holds it.
  ~StagedCodeFile();
  // Removes the staged code files in quick_dir that nobody holds: those of
  // runs that were killed (no destructor ran). Stage calls it now and then
  // (one call in 16); returns how many went.
  static size_t SweepAbandoned(const std::string& quick_dir);
  StagedCodeFile(const StagedCodeFile&) = delete;
  StagedCodeFile& operator=(const StagedCodeFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  StagedCodeFile(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;
  int fd_;  // open on the file, with the shared lock
};

}  // namespace cocoon::cli
