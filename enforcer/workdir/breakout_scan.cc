#include "enforcer/workdir/breakout_scan.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "enforcer/poll_now.h"
#include "enforcer/workdir/dirent64.h"

namespace cocoon::enforcer {
namespace {

constexpr size_t kDentsBuffer = 32 * 1024;

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// A regular file with more than one link: remembered until the walk ends,
// when the links seen inside the tree are compared with st_nlink.
struct MultiLink {
  // Every name seen: each is a way to the same outside file, and direct
  // mode must remove them all (it once removed only the smallest).
  std::vector<std::string> paths;
  nlink_t nlink = 0;
};

// A directory waiting to be listed. Owns `fd`.
struct DirJob {
  int fd = -1;
  std::string path;
  uint32_t depth = 0;
};

// What one worker found; merged at the end.
struct WorkerState {
  std::unique_ptr<char[]> buffer;  // allocated by the worker that uses it
  std::vector<BreakoutFinding> findings;
  std::unordered_map<ino_t, MultiLink> multi_links;
  uint64_t entries = 0, directories = 0, regular_files = 0, symlinks = 0, bytes = 0, foreign_owned = 0,
           unreadable_by_caller = 0;
  std::string first_foreign_owned;
  int level = 0;  // nesting of inline Walk calls (each needs its own buffer)
  bool caller = false;  // the thread that called ScanForBreakouts (it starts the others)
};

class Scanner {
 public:
  Scanner(int root_fd, const ScanOptions& options) : root_fd_(root_fd), options_(options) {}
  Result<ScanReport> Run();

 private:
  static constexpr size_t kMaxQueued = 128;  // bounds the fds parked in the queue

  // The calling thread walks alone until the tree proves big: a thread
  // costs ~0.1 ms to start and join here (more when it wakes an idle vCPU),
  // which every small staged run (an MCP call's work dir) would pay twice,
  // at Prepare and after the run, for nothing.
  static constexpr uint64_t kEntriesBeforeWorkers = 1024;

  unsigned WorkersWithinFdLimit() const;
  void Worker(WorkerState& state);
  void MaybeStartWorkers();
  bool Pop(DirJob& job);
  void Done();
  void Fail(Status status);
  Status Walk(WorkerState& state, int dir_fd, std::string& path, uint32_t depth);
  Status Entry(WorkerState& state, int dir_fd, std::string& path, const char* name, unsigned char type,
               uint32_t depth);
  void CheckSymlink(WorkerState& state, int dir_fd, const std::string& path, const char* name);
  void CheckStat(WorkerState& state, const std::string& path, const struct stat& st);
  void CountOwner(WorkerState& state, int dir_fd, const std::string& path, const char* name, const struct stat& st);
  void Add(WorkerState& state, const std::string& path, const char* kind, std::string target = "") {
    findings_total_.fetch_add(1, std::memory_order_relaxed);
    finding_bytes_total_.fetch_add(path.size() + target.size(), std::memory_order_relaxed);
    state.findings.push_back(BreakoutFinding{path, kind, std::move(target)});
  }
  // The findings caps (ScanOptions::max_findings, max_finding_bytes), over
  // every worker.
  Status CheckFindingsBudget() const;

  int root_fd_;
  const ScanOptions& options_;
  dev_t root_dev_ = 0;
  std::atomic<uint64_t> total_entries_{0};
  std::atomic<bool> cancelled_{false};  // options_.cancel_fd became readable
  std::atomic<uint64_t> findings_total_{0}, finding_bytes_total_{0};  // over every worker
  std::atomic<uint64_t> path_bytes_total_{0};  // ScanOptions::max_path_bytes, over every worker
  std::vector<WorkerState> states_;    // [0]: the calling thread's
  std::vector<std::thread> workers_;  // started by MaybeStartWorkers, for states_[1..]

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<DirJob> queue_;
  int busy_ = 0;  // workers holding a job
  bool stop_ = false;
  Status error_;
};

// Worst case, every worker is max_depth levels deep inline (one fd per
// level) while the queue is full: threads * max_depth + kMaxQueued fds, plus
// the ones the process already holds. Fewer workers keep that inside
// RLIMIT_NOFILE (1024 by default: 3 workers at the default depth).
unsigned Scanner::WorkersWithinFdLimit() const {
  constexpr uint64_t kOtherFds = 64;  // the supervisor's own pipes, sockets, logs
  struct rlimit limit {};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return ~0U;
  uint64_t reserved = kMaxQueued + kOtherFds;
  if (limit.rlim_cur <= reserved + options_.max_depth) return 1;
  return static_cast<unsigned>(std::max<uint64_t>(1, (limit.rlim_cur - reserved) / std::max<uint64_t>(1, options_.max_depth)));
}

Result<ScanReport> Scanner::Run() {
  struct stat st {};
  if (fstat(root_fd_, &st) != 0) return ErrnoError("stat of the work dir");
  if (!S_ISDIR(st.st_mode)) return InvalidArgumentError("work dir is not a directory");
  root_dev_ = st.st_dev;
  int root_copy = fcntl(root_fd_, F_DUPFD_CLOEXEC, 0);
  if (root_copy < 0) return ErrnoError("dup of the work dir fd");
  lseek(root_copy, 0, SEEK_SET);
  queue_.push_back(DirJob{root_copy, "", 0});
  unsigned threads = options_.threads ? options_.threads : std::min(4u, std::max(1u, std::thread::hardware_concurrency()));
  threads = std::min(threads, WorkersWithinFdLimit());
  states_ = std::vector<WorkerState>(threads);
  states_[0].caller = true;
  workers_.reserve(threads);  // MaybeStartWorkers never reallocates while threads run
  Worker(states_[0]);
  for (auto& worker : workers_) worker.join();
  for (DirJob& job : queue_) close(job.fd);  // left over after a failure
  const bool stopped = cancelled_.load();
  if (!error_.ok() && !stopped) return error_;

  ScanReport report;
  report.workers = static_cast<uint32_t>(1 + workers_.size());
  report.stopped = stopped;
  std::unordered_map<ino_t, MultiLink> links;
  for (WorkerState& state : states_) {
    report.entries += state.entries;
    report.directories += state.directories;
    report.regular_files += state.regular_files;
    report.symlinks += state.symlinks;
    report.bytes += state.bytes;
    report.foreign_owned += state.foreign_owned;
    report.unreadable_by_caller += state.unreadable_by_caller;
    if (!state.first_foreign_owned.empty() &&
        (report.first_foreign_owned.empty() || state.first_foreign_owned < report.first_foreign_owned)) {
      report.first_foreign_owned = state.first_foreign_owned;
    }
    report.findings.insert(report.findings.end(), state.findings.begin(), state.findings.end());
    for (auto& [ino, link] : state.multi_links) {
      MultiLink& merged = links[ino];
      merged.paths.insert(merged.paths.end(), std::make_move_iterator(link.paths.begin()),
                          std::make_move_iterator(link.paths.end()));
      merged.nlink = link.nlink;
    }
  }
  // Every link of the inode inside the tree: the file is the tree's own. A
  // walk that stopped early has not seen every link, so it judges none. In
  // direct mode none is judged either: the sandbox cannot have made a link to
  // a file outside the work dir (the work dir is a bind mount of its own, and
  // link(2) across mounts is EXDEV), so every such link is the host's own
  // (git's hardlinked objects, pnpm's store, `cp -al` trees), and removing
  // it, as remediation would, destroys the host's data.
  for (const auto& [ino, link] : links) {
    if (stopped || options_.mode == ScanMode::kDirect || link.paths.size() >= link.nlink) continue;
    for (const std::string& path : link.paths) report.findings.push_back(BreakoutFinding{path, "hardlink", ""});
  }
  std::sort(report.findings.begin(), report.findings.end(), [](const BreakoutFinding& a, const BreakoutFinding& b) {
    return a.path != b.path ? a.path < b.path : a.kind < b.kind;
  });
  return report;
}

bool Scanner::Pop(DirJob& job) {
  std::unique_lock lock(mutex_);
  wake_.wait(lock, [this] { return stop_ || !queue_.empty() || busy_ == 0; });
  if (stop_ || queue_.empty()) {
    stop_ = true;  // no work queued and nobody can queue more: the walk is over
    wake_.notify_all();
    return false;
  }
  job = std::move(queue_.front());
  queue_.pop_front();
  ++busy_;
  return true;
}

void Scanner::Done() {
  std::lock_guard lock(mutex_);
  --busy_;
  wake_.notify_all();
}

void Scanner::Fail(Status status) {
  std::lock_guard lock(mutex_);
  if (error_.ok()) error_ = std::move(status);
  stop_ = true;
  wake_.notify_all();
}

void Scanner::Worker(WorkerState& state) {
  if (!state.buffer) state.buffer.reset(new char[kDentsBuffer]);
  DirJob job;
  while (Pop(job)) {
    FdCloser closer(job.fd);
    Status status = Walk(state, job.fd, job.path, job.depth);
    if (!status.ok()) Fail(std::move(status));
    Done();
    if (state.caller) MaybeStartWorkers();
  }
}

// Once the tree has shown kEntriesBeforeWorkers entries and directories are
// waiting, the other workers join (once). A thread that cannot be started
// leaves the walk to those that are.
void Scanner::MaybeStartWorkers() {
  if (!workers_.empty() || states_.size() < 2) return;
  if (total_entries_.load(std::memory_order_relaxed) < kEntriesBeforeWorkers) return;
  {
    std::lock_guard lock(mutex_);
    if (stop_ || queue_.empty()) return;
  }
  for (size_t i = 1; i < states_.size(); ++i) {
    try {
      workers_.emplace_back([this, i] { Worker(states_[i]); });
    } catch (const std::exception&) {  // no thread (EAGAIN): the others walk on
      break;
    }
  }
}

Status Scanner::Walk(WorkerState& state, int dir_fd, std::string& path, uint32_t depth) {
  // Each nesting level inline needs its own buffer (the parent's is still
  // being iterated); the worker's own buffer serves the first level.
  std::unique_ptr<char[]> nested;
  char* buffer = state.buffer.get();
  if (state.level > 0) {
    nested.reset(new char[kDentsBuffer]);
    buffer = nested.get();
  }
  ++state.level;
  struct Leave {
    int& level;
    ~Leave() { --level; }
  } leave{state.level};
  for (;;) {
    long n = syscall(SYS_getdents64, dir_fd, buffer, kDentsBuffer);
    if (n < 0) return ErrnoError("reading directory '" + path + "'");
    if (n == 0) return Status::Ok();
    uint64_t count = 0;
    for (long offset = 0; offset < n;) {
      auto* d = reinterpret_cast<LinuxDirent64*>(buffer + offset);
      offset += d->d_reclen;
      const char* name = d->d_name;
      if (name[0] == '.' && (name[1] == 0 || (name[1] == '.' && name[2] == 0))) continue;
      ++count;
      COCOON_RETURN_IF_ERROR(Entry(state, dir_fd, path, name, d->d_type, depth));
      COCOON_RETURN_IF_ERROR(CheckFindingsBudget());
    }
    if (total_entries_.fetch_add(count, std::memory_order_relaxed) + count > options_.max_entries) {
      return ResourceExhaustedError("work dir has more than " + std::to_string(options_.max_entries) + " entries");
    }
    if (FdReadableNow(options_.cancel_fd)) {
      cancelled_ = true;
      return Status(ErrorCode::kUnavailable, "the scan was stopped");  // ends the walk; Run reports what it saw
    }
    if (state.caller) MaybeStartWorkers();  // a big directory can keep the caller here a long time
  }
}

Status Scanner::CheckFindingsBudget() const {
  if (path_bytes_total_.load(std::memory_order_relaxed) > options_.max_path_bytes) {
    return ResourceExhaustedError("the work dir's paths and link targets add up to more than " +
                                  std::to_string(options_.max_path_bytes >> 20) +
                                  " MiB (deeply nested long names): verification keeps them in memory, so it is "
                                  "not verified");
  }
  if (findings_total_.load(std::memory_order_relaxed) <= options_.max_findings &&
      finding_bytes_total_.load(std::memory_order_relaxed) <= options_.max_finding_bytes) {
    return Status::Ok();
  }
  return ResourceExhaustedError("the work dir holds more breakout findings than verification keeps (" +
                                std::to_string(options_.max_findings) + " findings or " +
                                std::to_string(options_.max_finding_bytes >> 20) +
                                " MiB of their paths): it is not verified");
}

Status Scanner::Entry(WorkerState& state, int dir_fd, std::string& path, const char* name, unsigned char type,
                      uint32_t depth) {
  size_t old_size = path.size();
  if (!path.empty()) path.push_back('/');
  path.append(name);
  ++state.entries;
  path_bytes_total_.fetch_add(path.size(), std::memory_order_relaxed);
  struct stat st {};
  const bool count_owners = options_.owner_uid >= 0;
  if (type == DT_UNKNOWN || type == DT_REG || type == DT_DIR || (count_owners && type == DT_LNK)) {
    // Regular files need nlink and mode; directories need st_dev (a mount
    // inside the tree is not entered). DT_UNKNOWN (some filesystems) needs it all;
    // symlinks are stat'd too when their owners are counted.
    if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      Add(state, path, "unreadable");
      path.resize(old_size);
      return Status::Ok();
    }
    type = IFTODT(st.st_mode);
    if (count_owners) CountOwner(state, dir_fd, path, name, st);
  }
  Status status;
  switch (type) {
    case DT_DIR: {
      ++state.directories;
      if (st.st_dev != root_dev_) {
        Add(state, path, "mount");
        break;
      }
      // A setuid bit on a directory means nothing on Linux, and the commit
      // copies directories with mode & 01777: not a finding (it would drop
      // the whole subtree from the commit, host files the sandbox could not
      // have removed with it).
      if (depth + 1 > options_.max_depth) {
        // Not entered: what it holds is unknown, so the whole directory is a
        // finding (left out of a commit) rather than an error that would
        // cost the run its Outcome.
        Add(state, path, "too-deep");
        break;
      }
      int child = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (child < 0) {
        Add(state, path, "unreadable");
        break;
      }
      {
        std::lock_guard lock(mutex_);
        if (queue_.size() < kMaxQueued) {
          queue_.push_back(DirJob{child, path, depth + 1});
          wake_.notify_one();
          child = -1;
        }
      }
      if (child >= 0) {  // queue full: descend here (the caller may not get back to its loop for a while)
        if (state.caller) MaybeStartWorkers();
        FdCloser closer(child);
        status = Walk(state, child, path, depth + 1);
      }
      break;
    }
    case DT_REG:
      ++state.regular_files;
      state.bytes += static_cast<uint64_t>(st.st_size);
      CheckStat(state, path, st);
      break;
    case DT_LNK:
      ++state.symlinks;
      CheckSymlink(state, dir_fd, path, name);
      break;
    case DT_CHR:
      if (options_.mode == ScanMode::kOverlayUpper) {
        // Overlayfs whiteouts are char 0:0 (Documentation/filesystems/overlayfs.rst).
        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == 0) break;
      }
      Add(state, path, "device");
      break;
    case DT_BLK: Add(state, path, "device"); break;
    case DT_FIFO: Add(state, path, "fifo"); break;
    case DT_SOCK: Add(state, path, "socket"); break;
    default: Add(state, path, "unreadable"); break;
  }
  path.resize(old_size);
  return status;
}

void Scanner::CountOwner(WorkerState& state, int dir_fd, const std::string& path, const char* name,
                         const struct stat& st) {
  const bool foreign = static_cast<int64_t>(st.st_uid) != options_.owner_uid ||
                       static_cast<int64_t>(st.st_gid) != options_.owner_gid;
  if (foreign) {
    if (state.first_foreign_owned.empty() || path < state.first_foreign_owned) state.first_foreign_owned = path;
    ++state.foreign_owned;
  }
  // What a copy needs: read a file, read and search a directory. The kernel
  // decides (supplementary groups, ACLs), asked only where the owner's bits
  // do not already settle it.
  int need = S_ISREG(st.st_mode) ? R_OK : S_ISDIR(st.st_mode) ? R_OK | X_OK : 0;
  bool owner_can = (need & R_OK ? st.st_mode & S_IRUSR : 1) && (need & X_OK ? st.st_mode & S_IXUSR : 1);
  if (need != 0 && (foreign || !owner_can) &&
      faccessat(dir_fd, name, need, AT_EACCESS | AT_SYMLINK_NOFOLLOW) != 0) {
    ++state.unreadable_by_caller;
  }
}

void Scanner::CheckStat(WorkerState& state, const std::string& path, const struct stat& st) {
  if (st.st_mode & S_ISUID) Add(state, path, "setuid");
  // setgid without group-execute is mandatory locking, not privilege; the
  // commit drops the bit either way, but only the privileged form is flagged.
  if ((st.st_mode & S_ISGID) && (st.st_mode & S_IXGRP)) Add(state, path, "setgid");
  if (st.st_nlink > 1) {
    MultiLink& link = state.multi_links[st.st_ino];
    link.paths.push_back(path);
    link.nlink = st.st_nlink;
  }
}

bool HasDotDotComponent(const std::string& target) {
  size_t pos = 0;
  while ((pos = target.find("..", pos)) != std::string::npos) {
    bool starts = pos == 0 || target[pos - 1] == '/';
    bool ends = pos + 2 == target.size() || target[pos + 2] == '/';
    if (starts && ends) return true;
    pos += 2;
  }
  return false;
}

void Scanner::CheckSymlink(WorkerState& state, int dir_fd, const std::string& path, const char* name) {
  char target[PATH_MAX + 1];
  ssize_t len = readlinkat(dir_fd, name, target, PATH_MAX);
  if (len < 0) {
    Add(state, path, "unreadable");
    return;
  }
  target[len] = 0;
  path_bytes_total_.fetch_add(static_cast<uint64_t>(len), std::memory_order_relaxed);
  std::string target_string(target, static_cast<size_t>(len));
  if (SymlinkEscapesLexically(path, target_string)) {
    Add(state, path, "symlink-escape", target_string);
    return;
  }
  // Without "..", resolution only descends: each link on the way is checked
  // on its own, and a flagged one is left out of the commit.
  if (!HasDotDotComponent(target_string)) return;
  // Lexically inside, but a component may itself be a link that climbs out
  // (a -> b/.., b -> ..). Let the kernel resolve it confined to the tree:
  // RESOLVE_BENEATH fails with EXDEV on any escape (man 2 openat2).
  struct open_how how {};
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  int fd = static_cast<int>(syscall(SYS_openat2, root_fd_, path.c_str(), &how, sizeof how));
  if (fd >= 0) {
    close(fd);
    return;
  }
  // ENOENT/ENOTDIR: dangling, and it has "..": it could climb out once the
  // missing part appears, so flag it (fail closed). EXDEV, ELOOP: escapes.
  Add(state, path, "symlink-escape", target_string);
}

}  // namespace

bool ScanReport::IsFlagged(const std::string& relative_path) const {
  auto it = std::lower_bound(findings.begin(), findings.end(), relative_path,
                             [](const BreakoutFinding& f, const std::string& p) { return f.path < p; });
  return it != findings.end() && it->path == relative_path;
}

bool SymlinkEscapesLexically(const std::string& link_path, const std::string& target) {
  if (target.empty()) return false;  // the kernel refuses empty targets anyway
  if (target[0] == '/') return true;  // on the host, an absolute target is a host path
  // Depth of the directory holding the link, in components.
  long depth = static_cast<long>(std::count(link_path.begin(), link_path.end(), '/'));
  size_t pos = 0;
  while (pos <= target.size()) {
    size_t end = target.find('/', pos);
    if (end == std::string::npos) end = target.size();
    std::string_view part(target.data() + pos, end - pos);
    if (part == "..") {
      if (--depth < 0) return true;
    } else if (!part.empty() && part != ".") {
      ++depth;
    }
    pos = end + 1;
  }
  return false;
}

Result<ScanReport> ScanForBreakouts(int root_fd, const ScanOptions& options) {
  Scanner scanner(root_fd, options);
  return scanner.Run();
}

Result<ScanReport> ScanForBreakoutsAt(const std::string& root, const ScanOptions& options) {
  int fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return ErrnoError("opening work dir " + root);
  FdCloser closer(fd);
  return ScanForBreakouts(fd, options);
}

}  // namespace cocoon::enforcer
