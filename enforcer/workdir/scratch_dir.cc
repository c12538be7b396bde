#include "enforcer/workdir/scratch_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstdio>
#include <ctime>
#include <mutex>

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

namespace {

constexpr char kFallbackLockName[] = "lock";

std::string FallbackPrefix(uid_t euid) { return ".cocoon-" + std::to_string(euid) + "-"; }

// A directory (not a link to one) of `euid`'s that no one else can use:
// what the XDG Base Directory spec promises of $XDG_RUNTIME_DIR (0700), and
// checked, since the variable is only a name.
bool IsOwnPrivateDir(const std::string& path, uid_t euid) {
  struct stat st {};
  return !path.empty() && path[0] == '/' && lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
         st.st_uid == euid && (st.st_mode & 077) == 0;
}

// tmp/.cocoon-<euid>-XXXXXX, 0711, with its lock held. The lock is inside
// it, not beside it in /tmp: another user could plant that name between
// the mkdtemp and the lock's O_EXCL create.
Result<std::string> MakeFallbackStateDir(const std::string& tmp, uid_t euid, OwnedFd* lock) {
  std::string path = tmp + "/" + FallbackPrefix(euid) + "XXXXXX";
  if (mkdtemp(path.data()) == nullptr) return ErrnoError("making a state directory in " + tmp);
  OwnedFd dir(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (dir.valid() && fchmod(dir.get(), 0711) == 0) {
    lock->Reset(openat(dir.get(), kFallbackLockName, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (lock->valid() && flock(lock->get(), LOCK_EX | LOCK_NB) == 0) return path;
  }
  Status error = ErrnoError("making the state directory " + path);
  lock->Reset();
  const size_t slash = path.rfind('/');
  OwnedFd parent(open(tmp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (parent.valid()) (void)tree::RemoveTree(parent.get(), path.substr(slash + 1));
  return error;
}

}  // namespace

Result<std::unique_ptr<StateDir>> StateDir::Choose(const StateDirPlaces& places) {
  if (places.euid == 0) {
    // Only root can make a name in /run; without one (a container), /tmp.
    auto run = EnsurePrivateDir(places.run + "/cocoon", 0711);
    if (run.ok()) return std::unique_ptr<StateDir>(new StateDir(*run, OwnedFd()));
  } else if (IsOwnPrivateDir(places.xdg_runtime_dir, places.euid)) {
    auto xdg = EnsurePrivateDir(places.xdg_runtime_dir + "/cocoon", 0711);
    if (xdg.ok()) return std::unique_ptr<StateDir>(new StateDir(*xdg, OwnedFd()));
  }
  auto fixed = EnsurePrivateDir(places.tmp + "/.cocoon-" + std::to_string(places.euid), 0711);
  if (fixed.ok()) return std::unique_ptr<StateDir>(new StateDir(*fixed, OwnedFd()));
  // Taken by another user (or unusable): never used, and no reason to fail.
  OwnedFd lock;
  auto made = MakeFallbackStateDir(places.tmp, places.euid, &lock);
  if (!made.ok()) return made.status().WithContext(fixed.status().message());
  return std::unique_ptr<StateDir>(new StateDir(std::move(*made), std::move(lock)));
}

StateDir::~StateDir() {
  if (!lock_.valid() || getpid() != creator_) return;
  const size_t slash = path_.rfind('/');
  OwnedFd parent(open(path_.substr(0, slash).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (parent.valid()) (void)tree::RemoveTree(parent.get(), path_.substr(slash + 1));
}

size_t SweepAbandonedFallbackStateDirs(const std::string& tmp, uid_t euid, std::chrono::seconds min_age) {
  OwnedFd parent_fd(open(tmp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent_fd.valid()) return 0;
  auto entries = tree::ListDir(parent_fd.get());
  if (!entries.ok()) return 0;
  const std::string prefix = FallbackPrefix(euid);
  size_t removed = 0;
  for (const tree::DirEntry& entry : *entries) {
    const std::string& name = entry.name;
    if (name.size() != prefix.size() + kUniqueChars || name.compare(0, prefix.size(), prefix) != 0) continue;
    // Only a directory of ours is opened: another user's of this name (or a
    // link) is theirs, and left alone.
    struct stat st {};
    if (fstatat(parent_fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != euid) {
      continue;
    }
    OwnedFd dir(openat(parent_fd.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    struct stat opened {};
    if (!dir.valid() || fstat(dir.get(), &opened) != 0 || opened.st_dev != st.st_dev || opened.st_ino != st.st_ino) {
      continue;
    }
    // No lock: its creator died between mkdtemp and the lock (the age check
    // waits that moment out). A lock nobody holds: its creator is gone.
    OwnedFd lock;
    struct stat lock_st {};
    if (fstatat(dir.get(), kFallbackLockName, &lock_st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (!OldEnough(st, min_age)) continue;
    } else if (!TakeAbandonedLock(dir.get(), kFallbackLockName, &lock)) {
      continue;
    }
    if (tree::RemoveTreeIfItIs(parent_fd.get(), name, st.st_dev, st.st_ino).ok()) ++removed;
  }
  return removed;
}

namespace {

// The process's state dir, chosen once (PrivateStateDir).
struct ProcessStateDir {
  std::mutex mutex;
  std::unique_ptr<StateDir> chosen;
};

ProcessStateDir& TheProcessStateDir() {
  static ProcessStateDir state;
  return state;
}

}  // namespace

void RemoveProcessStateDir() {
  ProcessStateDir& state = TheProcessStateDir();
  std::lock_guard<std::mutex> hold(state.mutex);
  state.chosen.reset();
}

Result<std::string> PrivateStateDir() {
  ProcessStateDir& state = TheProcessStateDir();
  std::lock_guard<std::mutex> hold(state.mutex);
  std::unique_ptr<StateDir>& chosen = state.chosen;
  if (chosen == nullptr) {
    StateDirPlaces places;
    places.euid = geteuid();
    if (const char* xdg = getenv("XDG_RUNTIME_DIR")) places.xdg_runtime_dir = xdg;
    COCOON_ASSIGN_OR_RETURN(chosen, StateDir::Choose(places));
    // What killed processes left: their fallback dirs, and stage dirs in
    // /tmp/.cocoon-<euid> when this process uses another state dir (a
    // process of this user with another $XDG_RUNTIME_DIR, or of an older
    // cocoon, made them there). Sampled (sweep_sampler.h): /tmp may be big.
    static SweepSampler state_dir_sweeps;
    if (state_dir_sweeps.ShouldSweepNow()) {
      (void)SweepAbandonedFallbackStateDirs(places.tmp, places.euid, std::chrono::minutes(10));
      const std::string fixed = places.tmp + "/.cocoon-" + std::to_string(places.euid);
      struct stat st {};
      // Ours, so no other user can rename another in its place (sticky /tmp).
      if (chosen->path() != fixed && lstat(fixed.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
          st.st_uid == places.euid && (st.st_mode & 022) == 0) {
        (void)SweepAbandonedScratchDirs(fixed, kStageDirPrefix, std::chrono::minutes(10));
      }
    }
  }
  return chosen->path();
}

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

size_t SweepUnlockedFiles(const std::string& parent, const std::function<bool(const std::string& name)>& wanted) {
  OwnedFd parent_fd(open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent_fd.valid()) return 0;
  auto entries = tree::ListDir(parent_fd.get());
  if (!entries.ok()) return 0;
  size_t removed = 0;
  for (const tree::DirEntry& entry : *entries) {
    if (!wanted(entry.name)) continue;
    // Exclusive only when no holder has it, shared or exclusive; removed
    // while held, so a holder-to-be that opened it meanwhile finds its name
    // gone once it has its lock (and makes it again).
    OwnedFd lock;
    if (TakeAbandonedLock(parent_fd.get(), entry.name, &lock) && unlinkat(parent_fd.get(), entry.name.c_str(), 0) == 0) {
      ++removed;
    }
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
