#include "cli/staged_code_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>

#include "cli/agent_run_util.h"
#include "enforcer/sweep_sampler.h"
#include "enforcer/workdir/scratch_dir.h"

namespace cocoon::cli {
namespace {

// Whether `path` still names the file open as `fd` (not removed, nor
// replaced, since it was opened).
bool StillNamed(int fd, const std::string& path) {
  struct stat open_file {}, named {};
  return fstat(fd, &open_file) == 0 && lstat(path.c_str(), &named) == 0 && open_file.st_dev == named.st_dev &&
         open_file.st_ino == named.st_ino;
}

int FlockRetryingEintr(int fd, int operation) {
  int result;
  do {
    result = flock(fd, operation);
  } while (result != 0 && errno == EINTR);
  return result;
}

// The quick dir's names of staged code: "<sha256 hex><extension>", the
// extension one word (".py"; a temporary has more dots). Not ".cocoon": the
// generated policies beside them are cached, not held.
bool IsStagedCodeName(const std::string& name) {
  constexpr size_t kHashChars = 64;
  if (name.size() < kHashChars) return false;
  for (size_t i = 0; i < kHashChars; ++i) {
    if (!std::isxdigit(static_cast<unsigned char>(name[i]))) return false;
  }
  const std::string extension = name.substr(kHashChars);
  if (extension.empty()) return true;
  if (extension[0] != '.' || extension.size() == 1 || extension == ".cocoon") return false;
  for (size_t i = 1; i < extension.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(extension[i]);
    if (!std::isalnum(c) && c != '_' && c != '-' && c != '+') return false;
  }
  return true;
}

}  // namespace

size_t StagedCodeFile::SweepAbandoned(const std::string& quick_dir) {
  return enforcer::SweepUnlockedFiles(quick_dir, IsStagedCodeName);
}

Result<std::shared_ptr<StagedCodeFile>> StagedCodeFile::Stage(const std::string& bytes, const std::string& suffix) {
  // The last holder of an earlier run may remove the file between our
  // finding it and our lock: then it is written again. Each round that
  // fails does so because another run finished meanwhile, so a few suffice.
  for (int attempt = 0; attempt < 16; ++attempt) {
    COCOON_ASSIGN_OR_RETURN(std::string path, WriteContentAddressed(bytes, suffix));
    int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      if (errno == ENOENT) continue;
      return ErrnoError("open " + path);
    }
    // Blocks only while a last holder removes the file (it holds the lock
    // exclusively for an unlink).
    if (FlockRetryingEintr(fd, LOCK_SH) != 0) {
      Status failed = ErrnoError("flock " + path);
      close(fd);
      return failed;
    }
    if (StillNamed(fd, path)) {
      // A killed run (SIGKILL, the OOM killer) never removed its file: the
      // agent's code stayed on disk. Now and then (sweep_sampler.h), the
      // ones nobody holds go; ours is held already.
      static enforcer::SweepSampler sweeps;
      if (sweeps.ShouldSweepNow()) (void)SweepAbandoned(path.substr(0, path.rfind('/')));
      return std::shared_ptr<StagedCodeFile>(new StagedCodeFile(std::move(path), fd));
    }
    close(fd);
  }
  return Status(ErrorCode::kUnavailable, "the staged code file kept being removed by other runs finishing; retry");
}

StagedCodeFile::~StagedCodeFile() {
  // Exclusive only when no other holder has it shared: then no run is
  // about to bind it, and one that opens it from now on finds it gone (or
  // replaced) once it has the lock, and writes it again.
  if (FlockRetryingEintr(fd_, LOCK_EX | LOCK_NB) == 0 && StillNamed(fd_, path_)) unlink(path_.c_str());
  close(fd_);
}

}  // namespace cocoon::cli
