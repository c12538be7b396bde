#include "enforcer/workdir/install_entries.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <set>
#include <vector>

#include "enforcer/workdir/tree_ops.h"

namespace cocoon::enforcer {
namespace {

using tree::Fd;

// rename(2): a directory moved to another parent needs write permission on
// itself (its ".." entry changes), on both sides of a RENAME_EXCHANGE. Root
// has it (CAP_DAC_OVERRIDE); an unprivileged committer lacks it on its own
// read-only directories (0555, as Go's module cache makes them, or 0000 as a
// sandbox may leave one). Such a directory is given owner write for the
// move, through an O_PATH fd (which follows the inode wherever the rename
// puts it), and its mode back right after.
struct OwnerWrite {
  Fd fd;  // valid when write was granted
  mode_t mode = 0;
};

Result<OwnerWrite> GrantOwnerWrite(int dir_fd, const std::string& name) {
  OwnerWrite grant;
  if (geteuid() == 0) return grant;
  Fd entry(openat(dir_fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
  struct stat st {};
  if (!entry.valid() || fstat(entry.get(), &st) != 0) return grant;  // the rename reports what is wrong
  if (!S_ISDIR(st.st_mode) || (st.st_mode & S_IWUSR) != 0 || st.st_uid != geteuid()) return grant;
  COCOON_RETURN_IF_ERROR(tree::ChmodThroughPathFd(entry.get(), (st.st_mode & 07777) | S_IWUSR,
                                                  "giving '" + name + "' owner write to move it"));
  grant.fd = std::move(entry);
  grant.mode = st.st_mode & 07777;
  return grant;
}

// Best effort: a directory left with owner write only grants its owner
// what the owner could grant itself.
void GiveBack(const OwnerWrite& grant) {
  if (grant.fd.valid()) (void)tree::ChmodThroughPathFd(grant.fd.get(), grant.mode, "");
}

// renameat2(from_fd/name, to_fd/name, flags), with owner write granted
// where the move needs it.
Status RenameEntry(int from_fd, int to_fd, const std::string& name, unsigned flags, const char* what) {
  COCOON_ASSIGN_OR_RETURN(OwnerWrite from, GrantOwnerWrite(from_fd, name));
  Result<OwnerWrite> to = (flags & RENAME_EXCHANGE) ? GrantOwnerWrite(to_fd, name) : Result<OwnerWrite>(OwnerWrite{});
  if (!to.ok()) {
    GiveBack(from);
    return to.status();
  }
  const int rc = renameat2(from_fd, name.c_str(), to_fd, name.c_str(), flags);
  const int err = errno;
  GiveBack(from);
  GiveBack(*to);
  if (rc != 0) return ErrnoError(std::string(what) + " '" + name + "'", err);
  return Status::Ok();
}

enum class StepKind {
  kExchanged,  // new and old swapped: the old entry is in the new tree's directory
  kMovedIn,    // a name only the new tree had
  kMovedOut,   // a name only the work dir had: now in the new tree's directory
};

struct InstallStep {
  StepKind step;
  std::string name;
};

Status ApplyStep(int new_fd, int host_fd, const InstallStep& done) {
  switch (done.step) {
    case StepKind::kExchanged: return RenameEntry(new_fd, host_fd, done.name, RENAME_EXCHANGE, "swapping in");
    case StepKind::kMovedIn: return RenameEntry(new_fd, host_fd, done.name, RENAME_NOREPLACE, "moving in");
    case StepKind::kMovedOut: return RenameEntry(host_fd, new_fd, done.name, RENAME_NOREPLACE, "moving out");
  }
  return InternalError("unknown install step");
}

Status ReverseStep(int new_fd, int host_fd, const InstallStep& done) {
  switch (done.step) {
    case StepKind::kExchanged: return RenameEntry(new_fd, host_fd, done.name, RENAME_EXCHANGE, "swapping back");
    case StepKind::kMovedIn: return RenameEntry(host_fd, new_fd, done.name, RENAME_NOREPLACE, "moving back out");
    case StepKind::kMovedOut: return RenameEntry(new_fd, host_fd, done.name, RENAME_NOREPLACE, "moving back in");
  }
  return InternalError("unknown install step");
}

Status InstallAll(int new_fd, int host_fd, const InstallOptions& options, std::vector<InstallStep>& done) {
  auto step = [&](StepKind kind, const std::string& name) -> Status {
    if (options.fail_after_steps != 0 && done.size() >= options.fail_after_steps) {
      return Status(ErrorCode::kUnavailable, "install interrupted (test hook)");
    }
    InstallStep next{kind, name};
    COCOON_RETURN_IF_ERROR(ApplyStep(new_fd, host_fd, next));
    done.push_back(std::move(next));
    if (options.after_step_for_test) options.after_step_for_test(done.size());
    return Status::Ok();
  };
  COCOON_ASSIGN_OR_RETURN(auto incoming, tree::ListDir(new_fd));
  std::set<std::string> names;
  for (const auto& entry : incoming) {
    names.insert(entry.name);
    struct stat ours {}, theirs {};
    if (fstatat(new_fd, entry.name.c_str(), &ours, AT_SYMLINK_NOFOLLOW) != 0) {
      return ErrnoError("stat '" + entry.name + "' in the commit directory");
    }
    if (fstatat(host_fd, entry.name.c_str(), &theirs, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) return ErrnoError("stat '" + entry.name + "' in the work dir");
      COCOON_RETURN_IF_ERROR(step(StepKind::kMovedIn, entry.name));
      continue;
    }
    // The host's own original, hard-linked into the new tree: already there.
    if (ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino) continue;
    COCOON_RETURN_IF_ERROR(step(StepKind::kExchanged, entry.name));
  }
  // What the new tree has no name for goes (into the new tree's directory,
  // which the caller removes). Listed after the new entries are in, so
  // the list holds only what is to go.
  COCOON_ASSIGN_OR_RETURN(auto present, tree::ListDir(host_fd));
  for (const auto& entry : present) {
    if (names.count(entry.name) == 0) COCOON_RETURN_IF_ERROR(step(StepKind::kMovedOut, entry.name));
  }
  return Status::Ok();
}

// The work dir itself, when it is the committer's own and lacks owner write
// or search (0555): every rename in it needs both. Its exact mode comes back
// when the grant goes out of scope.
class WorkDirGrant {
 public:
  WorkDirGrant(const WorkDirGrant&) = delete;
  WorkDirGrant& operator=(const WorkDirGrant&) = delete;
  ~WorkDirGrant() {
    if (granted_) (void)fchmod(fd_, mode_);
  }
  static Result<std::unique_ptr<WorkDirGrant>> Take(int host_fd, const std::string& host_dir) {
    auto grant = std::unique_ptr<WorkDirGrant>(new WorkDirGrant(host_fd));
    if (geteuid() == 0) return grant;
    struct stat st {};
    if (fstat(host_fd, &st) != 0) return ErrnoError("stat the work dir " + host_dir);
    if (st.st_uid != geteuid() || (st.st_mode & (S_IWUSR | S_IXUSR)) == (S_IWUSR | S_IXUSR)) return grant;
    if (fchmod(host_fd, (st.st_mode & 07777) | S_IWUSR | S_IXUSR) != 0) {
      return ErrnoError("giving the work dir " + host_dir + " owner write for the commit");
    }
    grant->granted_ = true;
    grant->mode_ = st.st_mode & 07777;
    return grant;
  }

 private:
  explicit WorkDirGrant(int fd) : fd_(fd) {}
  int fd_;
  bool granted_ = false;
  mode_t mode_ = 0;
};

}  // namespace

HostChangeSignalHold::HostChangeSignalHold() {
  sigset_t all;
  sigfillset(&all);
  for (int fault : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS}) sigdelset(&all, fault);
  held_ = pthread_sigmask(SIG_BLOCK, &all, &previous_) == 0;
}

HostChangeSignalHold::~HostChangeSignalHold() {
  if (held_) pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

Status CheckInstallPossible(int new_fd, int host_fd) {
  if (geteuid() == 0) return Status::Ok();
  struct stat host {};
  if (fstat(host_fd, &host) != 0) return ErrnoError("stat the work dir");
  const bool own_work_dir = host.st_uid == geteuid();
  if (!own_work_dir && faccessat(host_fd, ".", W_OK | X_OK, AT_EACCESS) != 0) {
    return FailedPreconditionError("the work dir is another user's (uid " + std::to_string(host.st_uid) +
                                   ") and not writable by this one");
  }
  const bool sticky_not_ours = !own_work_dir && (host.st_mode & S_ISVTX) != 0;
  COCOON_ASSIGN_OR_RETURN(auto incoming, tree::ListDir(new_fd));
  std::set<std::string> names;
  for (const auto& entry : incoming) names.insert(entry.name);
  COCOON_ASSIGN_OR_RETURN(auto present, tree::ListDir(host_fd));
  for (const auto& entry : present) {
    struct stat theirs {};
    if (fstatat(host_fd, entry.name.c_str(), &theirs, AT_SYMLINK_NOFOLLOW) != 0) {
      return ErrnoError("stat '" + entry.name + "' in the work dir");
    }
    if (theirs.st_uid == geteuid()) continue;
    if (names.count(entry.name) != 0) {
      // Left alone when the new tree holds this very inode (hard-linked).
      struct stat ours {};
      if (fstatat(new_fd, entry.name.c_str(), &ours, AT_SYMLINK_NOFOLLOW) == 0 && ours.st_dev == theirs.st_dev &&
          ours.st_ino == theirs.st_ino) {
        continue;
      }
    }
    if (S_ISDIR(theirs.st_mode) || sticky_not_ours) {
      return FailedPreconditionError("'" + entry.name + "' in the work dir is another user's (uid " +
                                     std::to_string(theirs.st_uid) + ")");
    }
  }
  return Status::Ok();
}

Status InstallEntries(int new_fd, int host_fd, const std::string& host_dir, const InstallOptions& options) {
  // Before the grant: its destructor gives the work dir its mode back, and
  // runs before the hold's, still under it.
  HostChangeSignalHold hold;
  COCOON_ASSIGN_OR_RETURN(auto work_dir_grant, WorkDirGrant::Take(host_fd, host_dir));
  std::vector<InstallStep> done;
  Status installed = InstallAll(new_fd, host_fd, options, done);
  if (installed.ok()) return installed;
  for (auto it = done.rbegin(); it != done.rend(); ++it) {
    Status undone = ReverseStep(new_fd, host_fd, *it);
    if (!undone.ok()) {
      return Status(ErrorCode::kDataLoss,
                    "the commit into the work dir " + host_dir + " failed (" + installed.message() + ") after " +
                        std::to_string(done.size()) + " of its entries had gone in, and undoing that failed (" +
                        undone.message() + "): the work dir holds part of the new contents, and the commit "
                        "directory the rest of them with the previous entries they replaced");
    }
  }
  return installed;
}

}  // namespace cocoon::enforcer
