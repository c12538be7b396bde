#include "enforcer/workdir/scratch_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>

#include "enforcer/sweep_sampler.h"
#include "enforcer/workdir/tree_ops.h"

namespace cocoon::enforcer {
namespace {

constexpr std::string_view kLockSuffix = ".lock";
constexpr size_t kUniqueChars = 6;  // mkdtemp's XXXXXX

bool OldEnough(const struct stat& st, std::chrono::seconds min_age) {
  return time(nullptr) - st.st_ctim.tv_sec >= min_age.count();
}

// Takes `lock_name` in parent_fd when nobody holds it. The lock file must
// still be the one at that name once held: its owner unlinks it while
// holding it, and a sweeper that opened it just before then would
// otherwise take a dead file for a free lock.
bool TakeAbandonedLock(int parent_fd, const std::string& lock_name, OwnedFd* lock) {
  // A regular file of ours before it is opened: an open of a FIFO planted
  // there would wait for a writer, and no signal ends that wait.
  struct stat named {};
  if (fstatat(parent_fd, lock_name.c_str(), &named, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(named.st_mode) ||
      named.st_uid != geteuid()) {
    return false;
  }
  lock->Reset(openat(parent_fd, lock_name.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!lock->valid()) return false;
  struct stat held {};
  if (fstat(lock->get(), &held) != 0 || !S_ISREG(held.st_mode) || held.st_uid != geteuid()) return false;
  if (flock(lock->get(), LOCK_EX | LOCK_NB) != 0) return false;  // its owner lives
  return fstatat(parent_fd, lock_name.c_str(), &named, AT_SYMLINK_NOFOLLOW) == 0 && named.st_ino == held.st_ino &&
         named.st_dev == held.st_dev;
}

}  // namespace

Result<std::string> EnsurePrivateDir(const std::string& path, mode_t mode) {
  if (mkdir(path.c_str(), mode) != 0 && errno != EEXIST) return ErrnoError("mkdir " + path);
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) return ErrnoError("lstat " + path);
  if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
    return PermissionDeniedError(path + " is not a directory owned by us and writable only by us; remove it");
  }
  return path;
}

Result<std::string> PrivateStateDir() { return EnsurePrivateDir("/tmp/.cocoon-" + std::to_string(geteuid()), 0711); }

size_t SweepAbandonedScratchDirs(const std::string& parent, const std::string& prefix, std::chrono::seconds min_age) {
  OwnedFd parent_fd(open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent_fd.valid()) return 0;
  auto entries = tree::ListDir(parent_fd.get());
  if (!entries.ok()) return 0;
  size_t removed = 0;
  for (const tree::DirEntry& entry : *entries) {
    const std::string& name = entry.name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const bool is_lock = name.size() == prefix.size() + kUniqueChars + kLockSuffix.size() &&
                         name.compare(name.size() - kLockSuffix.size(), kLockSuffix.size(), kLockSuffix) == 0;
    if (!is_lock && name.size() != prefix.size() + kUniqueChars) continue;
    struct stat st {};
    // Only this user's: in a parent others can write (/tmp), a directory of
    // the name another user planted is theirs, and left alone.
    if (fstatat(parent_fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_uid != geteuid() ||
        !OldEnough(st, min_age)) {
      continue;
    }
    OwnedFd lock;
    if (is_lock) {
      // A lock whose directory is gone (its owner died between the two
      // removals); one whose directory exists goes with the directory.
      const std::string dir_name = name.substr(0, name.size() - kLockSuffix.size());
      struct stat dir_st {};
      if (fstatat(parent_fd.get(), dir_name.c_str(), &dir_st, AT_SYMLINK_NOFOLLOW) == 0) continue;
      if (S_ISREG(st.st_mode) && TakeAbandonedLock(parent_fd.get(), name, &lock)) {
        unlinkat(parent_fd.get(), name.c_str(), 0);
      }
      continue;
    }
    if (!S_ISDIR(st.st_mode)) continue;
    const std::string lock_name = name + std::string(kLockSuffix);
    struct stat lock_st {};
    const bool has_lock = fstatat(parent_fd.get(), lock_name.c_str(), &lock_st, AT_SYMLINK_NOFOLLOW) == 0;
    // Without a lock: its creator died between mkdtemp and the lock (the
    // age check has waited that moment out).
    if (has_lock && !TakeAbandonedLock(parent_fd.get(), lock_name, &lock)) continue;
    if (tree::RemoveTreeIfItIs(parent_fd.get(), name, st.st_dev, st.st_ino).ok()) ++removed;
    if (has_lock) unlinkat(parent_fd.get(), lock_name.c_str(), 0);
  }
  return removed;
}

Result<std::unique_ptr<ScratchDir>> ScratchDir::Create(const std::string& parent, const std::string& prefix) {
  // Sampled (sweep_sampler.h): a parent such as /tmp may be big.
  static SweepSampler scratch_sweeps;
  if (scratch_sweeps.ShouldSweepNow()) {
    (void)SweepAbandonedScratchDirs(parent, prefix, std::chrono::minutes(10));
  }
  OwnedFd parent_fd(open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent_fd.valid()) return ErrnoError("opening " + parent);
  std::string path = parent + "/" + prefix + "XXXXXX";
  if (mkdtemp(path.data()) == nullptr) return ErrnoError("making a directory in " + parent);
  std::string name = path.substr(parent.size() + 1);
  const std::string lock_name = name + std::string(kLockSuffix);
  OwnedFd lock(openat(parent_fd.get(), lock_name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!lock.valid() || flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
    Status error = ErrnoError("making the lock " + parent + "/" + lock_name);
    if (lock.valid()) unlinkat(parent_fd.get(), lock_name.c_str(), 0);
    unlinkat(parent_fd.get(), name.c_str(), AT_REMOVEDIR);
    return error;
  }
  return std::unique_ptr<ScratchDir>(new ScratchDir(std::move(parent_fd), std::move(name), std::move(path), std::move(lock)));
}

ScratchDir::ScratchDir(OwnedFd parent, std::string name, std::string path, OwnedFd lock)
    : parent_(std::move(parent)), name_(std::move(name)), path_(std::move(path)), lock_(std::move(lock)) {}

ScratchDir::~ScratchDir() {
  // The lock goes last: while the tree is being removed, a sweep must see
  // it as in use.
  if (tree::RemoveTree(parent_.get(), name_).ok()) {
    unlinkat(parent_.get(), (name_ + std::string(kLockSuffix)).c_str(), 0);
  }
}

}  // namespace cocoon::enforcer
