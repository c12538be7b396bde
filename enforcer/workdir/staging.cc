#include "enforcer/workdir/staging.h"
#include "enforcer/workdir/host_path.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>

#include "enforcer/fd_passing.h"
#include "enforcer/sweep_sampler.h"
#include "enforcer/workdir/change_floor.h"
#include "enforcer/workdir/copy_conflicts.h"
#include "enforcer/workdir/idmapped_tree.h"
#include "enforcer/workdir/tree_ops.h"

namespace cocoon::enforcer {
namespace {

using tree::Fd;

Status CopyString(char* out, size_t size, const std::string& value, const char* what) {
  if (value.size() + 1 > size) return InvalidArgumentError(std::string(what) + " is too long: " + value);
  memcpy(out, value.c_str(), value.size() + 1);
  return Status::Ok();
}

Result<std::string> Canonical(const std::string& path) {
  auto resolved = ResolveHostPath(path);
  if (!resolved.ok()) return resolved.status().WithContext("work dir");
  struct stat st {};
  if (stat(resolved->c_str(), &st) != 0) return ErrnoError("work dir " + path);
  if (!S_ISDIR(st.st_mode)) return InvalidArgumentError("work dir " + path + " is not a directory");
  return resolved;
}

// Overlay options are comma-separated and lowerdir is colon-separated
// (Documentation/filesystems/overlayfs.rst); paths holding either would need
// escaping. Only the stage dir's paths are in the options (the host dir is
// named through /proc/self/fd or the stage dir's "lower").
bool OverlaySafePath(const std::string& path) { return path.find_first_of(",:\\") == std::string::npos; }

Status CheckCopies(const std::vector<ir::Copy>& copies) {
  for (const ir::Copy& copy : copies) {
    struct stat st {};
    if (lstat(copy.source.c_str(), &st) != 0) return ErrnoError("--copy source " + copy.source);
    if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
      return InvalidArgumentError("--copy source " + copy.source + " is not a regular file or directory");
    }
    const std::string& dest = copy.destination;
    if (dest.empty() || dest[0] == '/' || dest == ".." || dest.find("../") != std::string::npos ||
        (dest.size() >= 3 && dest.compare(dest.size() - 3, 3, "/..") == 0)) {
      return InvalidArgumentError("--copy destination must be a relative path inside the work dir: '" + dest + "'");
    }
  }
  return Status::Ok();
}

// The first mount point at `dir` or below it in this mount namespace, from
// /proc/self/mountinfo (field 5, with its octal escapes undone), or "". A
// bind mount from the same filesystem has no device of its own, so only
// the mount table shows it.
std::string MountPointAtOrBelow(const std::string& dir) {
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::string line;
  while (std::getline(mountinfo, line)) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, point;
    if (!(fields >> id >> parent >> devno >> root >> point)) continue;
    std::string unescaped;
    for (size_t i = 0; i < point.size(); ++i) {
      auto octal = [&](size_t at) { return point[at] >= '0' && point[at] <= '7'; };
      if (point[i] == '\\' && i + 3 < point.size() && octal(i + 1) && octal(i + 2) && octal(i + 3)) {
        unescaped += static_cast<char>((point[i + 1] - '0') * 64 + (point[i + 2] - '0') * 8 + (point[i + 3] - '0'));
        i += 3;
      } else {
        unescaped += point[i];
      }
    }
    if (unescaped == dir || (unescaped.size() > dir.size() && unescaped.compare(0, dir.size(), dir) == 0 &&
                             unescaped[dir.size()] == '/')) {
      return unescaped;
    }
  }
  return "";
}

// The host dir's owner (uid and group) shown as the sandbox's host ids.
IdShift IdShiftFor(const struct stat& host, const StagingOptions& options) {
  IdShift shift;
  shift.from_uid = host.st_uid;
  shift.from_gid = host.st_gid;
  shift.to_uid = static_cast<uid_t>(options.sandbox_host_uid);
  shift.to_gid = static_cast<gid_t>(options.sandbox_host_gid >= 0 ? options.sandbox_host_gid : options.sandbox_host_uid);
  return shift;
}

}  // namespace

Result<std::unique_ptr<Staging>> Staging::Prepare(const StagingOptions& options) {
  std::unique_ptr<Staging> staging(new Staging());
  staging->options_ = options;
  COCOON_ASSIGN_OR_RETURN(staging->options_.host_dir, Canonical(options.host_dir));
  COCOON_RETURN_IF_ERROR(CheckCopies(options.copies));
  const std::string& host = staging->options_.host_dir;
  WorkMountChildSpec& spec = staging->spec_;
  COCOON_RETURN_IF_ERROR(CopyString(spec.host_dir, sizeof spec.host_dir, host, "work dir path"));
  staging->quota_bytes_ = options.quota_bytes ? options.quota_bytes : options.default_quota_bytes;
  // size= bounds bytes only: empty files, directories and symlinks use none,
  // so a sandbox could make entries without end (kernel memory on the host,
  // each one scanned, reported and committed). nr_inodes bounds them too.
  snprintf(spec.tmpfs_data, sizeof spec.tmpfs_data, "size=%llu,nr_inodes=%llu,mode=0755",
           static_cast<unsigned long long>(staging->quota_bytes_),
           static_cast<unsigned long long>(WorkDirEntryLimit(staging->quota_bytes_)));

  StagingStrategy strategy = options.strategy;
  if (options.mode == ir::WorkMode::kDirect) strategy = StagingStrategy::kDirect;
  // One open of the host dir serves its stat, the scan, the idmapped clone
  // below and the copy-in (Populate): they all see the same directory.
  COCOON_ASSIGN_OR_RETURN(int host_dir_fd, OpenResolvedPath(host, O_RDONLY | O_DIRECTORY));
  staging->host_dir_fd_.Reset(host_dir_fd);
  COCOON_RETURN_IF_ERROR(CheckCopiesAgainstWorkDir(options.copies, host, host_dir_fd));
  const Fd& host_fd = staging->host_dir_fd_;
  // Staged modes replace the work dir whole when they commit, so two staged
  // runs on one dir must not overlap: the later commit would find a
  // directory the first put there (and refuse, discarding its run's work).
  // The later run is refused before it starts instead. The lock is an
  // flock on this open directory, held until the Staging is gone, so it is
  // the same lock for every run on the dir whatever user runs it and
  // whatever private state dir it picked: root's direct run and the owner's
  // staged run exclude each other too. (A lock file in each user's state
  // dir was tried: runs that picked different state dirs, or a user whose
  // /tmp/.cocoon-UID another user had planted, no longer excluded each
  // other, and a staged run committed a direct sandbox's fresh escaping
  // link; a review showed it.) The price: anyone who can read the dir can
  // take the lock and hold its runs off; the refusal says so. Advisory:
  // other programs may ignore it; the commit's identity check still
  // stands. A filesystem without flock (some network mounts) runs unlocked.
  // Direct runs take it shared: several may write one dir at once, but not
  // while a staged run has it. Otherwise a staged run would take a direct
  // sandbox's fresh escapes for the host's own files and commit them back
  // (and the direct run's scan would then look at the swapped-out tree).
  const bool direct = strategy == StagingStrategy::kDirect;
  if (direct) staging->changed_since_ = RunChangeFloor(host_dir_fd);
  if (flock(host_fd.get(), (direct ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    return FailedPreconditionError(
        "work dir " + host + " is in use by another cocoon run" +
        (direct ? " that stages it" : "") +
        " (or another process that can read it holds a lock on it: `fuser " + host + "` names it)" +
        ": a staged run replaces the work dir whole when it commits, so it must not overlap with any other run on "
        "that dir; wait for that run to finish, or use another work dir");
  }
  std::string state_dir = options.state_dir;
  if (state_dir.empty()) {
    COCOON_ASSIGN_OR_RETURN(state_dir, PrivateStateDir());
  }
  std::optional<ScanReport> host_scan;
  if (strategy != StagingStrategy::kDirect) {
    if (std::string point = MountPointAtOrBelow(host); point == host) {
      return FailedPreconditionError("work dir " + host + " is itself a mount point: cocoon replaces a staged work dir "
                                     "whole when it commits, which a mount point cannot be; use a directory inside it");
    } else if (!point.empty()) {
      return FailedPreconditionError("work dir " + host + " holds a mount point at " + point +
                                     ": cocoon stages the work dir and replaces it whole when it commits, which "
                                     "would reach into that filesystem; unmount it or choose another work dir");
    }
    COCOON_RETURN_IF_ERROR(CheckCommitPossible(host));
    // Under the exclusive lock taken above: no other staged run on this dir
    // is committing. Ten minutes: a live commit directory changes more often.
    // Sampled (sweep_sampler.h): it lists the work dir's parent, which may
    // be big (/tmp).
    static SweepSampler commit_dir_sweeps;
    if (commit_dir_sweeps.ShouldSweepNow()) {
      (void)SweepAbandonedCommitDirs(host, std::chrono::minutes(10));
    }
    // A staged work dir is replaced as a whole when it is committed (and the
    // copy-in walks all of it): a filesystem mounted inside it would be
    // copied, then emptied with the previous contents. Refused up front.
    // The host's own tree: its findings are the caller's files, not the
    // sandbox's making, so the findings caps (kept for the sandbox's trees)
    // do not apply.
    ScanOptions host_options;
    host_options.max_findings = UINT64_MAX;
    host_options.max_finding_bytes = UINT64_MAX;
    host_options.max_path_bytes = UINT64_MAX;
    // Which host ids the sandbox's view of the host dir maps (the rest show
    // as the overflow id, and an overlay cannot copy them up).
    struct stat dir_st {};
    if (fstat(host_fd.get(), &dir_st) != 0) return ErrnoError("work dir " + host);
    if (options.sandbox_host_uid < 0) {  // rootless: the sandbox's user namespace maps the caller's ids only
      host_options.owner_uid = geteuid();
      host_options.owner_gid = getegid();
    } else {  // root: the sandbox's ids, or the dir owner's shifted onto them (IdShiftFor)
      const bool shifted = static_cast<int64_t>(dir_st.st_uid) != options.sandbox_host_uid;
      host_options.owner_uid = dir_st.st_uid;
      host_options.owner_gid = shifted ? dir_st.st_gid : IdShiftFor(dir_st, options).to_gid;
    }
    COCOON_ASSIGN_OR_RETURN(host_scan, ScanForBreakouts(host_fd.get(), host_options));
    for (const BreakoutFinding& finding : host_scan->findings) {
      if (finding.kind == "mount") {
        return FailedPreconditionError("work dir " + host + " holds a mount point at " + finding.path +
                                       ": cocoon stages the work dir and replaces it whole when it commits, which "
                                       "would reach into that filesystem; unmount it or choose another work dir");
      }
      // The scan after the run would not go below this directory, so the
      // commit would leave it out, and replacing the work dir whole would
      // delete the host's own copy of it.
      if (finding.kind == "too-deep") {
        return FailedPreconditionError("work dir " + host + " nests directories deeper than breakout verification "
                                       "goes (" + std::to_string(ScanOptions{}.max_depth) + " levels) at " +
                                       finding.path + ": a staged run could not commit it back; use a shallower "
                                       "work dir, or a policy with `direct` work mode");
      }
    }
  }
  // As root, the sandbox runs as another host uid than the dir's owner: an
  // overlay needs the lower layer idmapped to show the owner's files as
  // the sandbox's (idmapped_tree.h).
  struct stat host_st {};
  if (fstat(host_fd.get(), &host_st) != 0) return ErrnoError("work dir " + host);
  spec.host_dev = host_st.st_dev;
  spec.host_ino = host_st.st_ino;
  const bool needs_idmap = options.sandbox_host_uid >= 0 && static_cast<int64_t>(host_st.st_uid) != options.sandbox_host_uid;
  if (strategy == StagingStrategy::kAuto) {
    // Big dirs go through an overlay (nothing copied in); small ones are
    // copied, which needs no overlayfs and keeps the host dir unmounted.
    // "Big" as a copy on tmpfs would be: a file takes whole pages, so 17,000
    // one-byte files (500 KB) take 68 MB of the quota, and their copy did
    // not fit strict's 64 MiB.
    const uint64_t copy_footprint = host_scan->bytes + host_scan->regular_files * 4096;
    strategy = copy_footprint > options.overlay_threshold_bytes ? StagingStrategy::kOverlay : StagingStrategy::kCopy;
    if (strategy == StagingStrategy::kOverlay && needs_idmap) {
      auto lower = IdmappedReadOnlyTree(host_fd.get(), host, IdShiftFor(host_st, options));
      // Without idmapped mounts (an old kernel, a filesystem without
      // support) the dir is copied, as it always was; if the copy then
      // does not fit, the refusal says why the overlay was not used.
      if (lower.ok()) {
        staging->lower_tree_ = std::move(*lower);
      } else {
        strategy = StagingStrategy::kCopy;
        staging->overlay_declined_ = "the overlay's idmapped lower layer failed: " + lower.status().message();
      }
    }
    if (strategy == StagingStrategy::kOverlay && host_scan->foreign_owned > 0) {
      // The sandbox's user namespace maps one uid and one gid: rootless the
      // caller's, as root the sandbox user's (onto which an idmapped lower
      // layer shifts the dir owner's). Overlayfs copies a changed lower
      // entry up with its owner and group, and for an entry of another
      // owner or group (a team's shared-group directory) that chown cannot
      // be expressed in the namespace, so every write into it, or of it,
      // fails (EOVERFLOW, EPERM; a delete needs no copy-up and works). A
      // copy gives them to the sandbox user, writable like the rest (the
      // commit gives directories back their owner and group); it is taken
      // when it fits the quota and can be read whole.
      std::string who = std::to_string(host_scan->foreign_owned) +
                        (host_scan->foreign_owned == 1 ? " entry" : " entries") + " of the work dir (such as '" +
                        host_scan->first_foreign_owned + "') belong to another user or group";
      const bool fits = copy_footprint + (host_scan->entries + 1) * 4096 <= staging->quota_bytes_ &&
                        host_scan->entries < WorkDirEntryLimit(staging->quota_bytes_);
      if (fits && host_scan->unreadable_by_caller == 0) {
        strategy = StagingStrategy::kCopy;
        staging->lower_tree_.Reset();  // the idmapped lower layer made above: only an overlay takes it
        staging->overlay_declined_ = who + ", which an overlay in the sandbox's user namespace cannot change";
      } else {
        staging->note_ = who + ": the sandbox cannot change them in place (writing or renaming one fails with "
                         "EOVERFLOW: an overlay in the sandbox's user namespace cannot copy it up), and the work dir "
                         "was not copied instead because " +
                         std::string(fits ? "this user cannot read all of it"
                                          : "its copy would not fit the quota (a larger --disk lets it)") +
                         (options.sandbox_host_uid < 0 ? "; or run as their owner, or as root"
                                                       : "; or give them to the work dir's owner and group");
      }
    }
  } else if (strategy == StagingStrategy::kOverlay && needs_idmap) {
    COCOON_ASSIGN_OR_RETURN(staging->lower_tree_, IdmappedReadOnlyTree(host_fd.get(), host, IdShiftFor(host_st, options)));
  }
  spec.strategy = strategy;
  // Which inner mount points (and the directories above them) the child
  // will have to create: the ones the host dir does not have.
  std::set<std::string> scaffolding;
  for (const std::string& point : options.inner_mount_points) {
    for (size_t end = point.find('/'); ; end = point.find('/', end + 1)) {
      std::string prefix = end == std::string::npos ? point : point.substr(0, end);
      struct stat st {};
      if (!prefix.empty() && lstat((host + "/" + prefix).c_str(), &st) != 0 && errno == ENOENT) scaffolding.insert(prefix);
      if (end == std::string::npos) break;
    }
  }
  staging->scaffolding_.assign(scaffolding.begin(), scaffolding.end());
  std::sort(staging->scaffolding_.begin(), staging->scaffolding_.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  if (strategy == StagingStrategy::kOverlay) {
    // Empty on the host (the child mounts its tmpfs there in its own mount
    // namespace), yet one per SIGKILLed run would pile up in /tmp.
    auto stage = ScratchDir::Create(state_dir, kStageDirPrefix);
    if (!stage.ok()) return stage.status().WithContext("creating a staging mount point");
    staging->stage_dir_ = std::move(*stage);
    const std::string pattern = staging->stage_dir_->path();
    if (!OverlaySafePath(pattern)) return InvalidArgumentError("state dir path unusable for overlay: " + pattern);
    COCOON_RETURN_IF_ERROR(CopyString(spec.stage_dir, sizeof spec.stage_dir, pattern, "stage dir"));
    COCOON_RETURN_IF_ERROR(CopyString(spec.upper_dir, sizeof spec.upper_dir, pattern + "/upper", "upper dir"));
    COCOON_RETURN_IF_ERROR(CopyString(spec.overlay_work_dir, sizeof spec.overlay_work_dir, pattern + "/work", "work dir"));
    if (staging->lower_tree_.valid()) {
      spec.idmapped_lower = true;
      COCOON_RETURN_IF_ERROR(CopyString(spec.lower_dir, sizeof spec.lower_dir, pattern + "/lower", "lower dir"));
    }
    // The child puts "lowerdir=..." in front (WorkMountChildSpec).
    // userxattr: overlay metadata in user.* xattrs, which an unprivileged
    // mounter may write (Linux 5.11); trusted.* needs CAP_SYS_ADMIN in the
    // initial namespace.
    std::string data = ",upperdir=" + pattern + "/upper,workdir=" + pattern + "/work,userxattr";
    // mount(2) copies one page of options and cuts the rest: the longest the
    // child can build must fit, or the mount would get truncated options.
    const size_t lower_max = spec.idmapped_lower ? strlen(spec.lower_dir) : sizeof("/proc/self/fd/") - 1 + 10;
    if (sizeof("lowerdir=") - 1 + lower_max + data.size() >= kMountOptionsMax) {
      return InvalidArgumentError("state dir path " + state_dir + " is too long for the overlay's options (" +
                                  std::to_string(kMountOptionsMax) + " bytes in all); use a shorter state dir");
    }
    COCOON_RETURN_IF_ERROR(CopyString(spec.overlay_data, sizeof spec.overlay_data, data, "overlay options"));
  }
  return staging;
}

Staging::~Staging() {
  if (tree_fd_ >= 0) close(tree_fd_);
  if (view_fd_ >= 0) close(view_fd_);
}

void Staging::AdoptFds(int tree_fd, int view_fd) {
  if (tree_fd_ >= 0) close(tree_fd_);
  if (view_fd_ >= 0) close(view_fd_);
  tree_fd_ = tree_fd;
  view_fd_ = view_fd;
}

Status Staging::ReceiveAndPopulate(int sock, int cancel_fd) {
  if (spec_.strategy == StagingStrategy::kDirect) return Status::Ok();
  if (lower_tree_.valid()) {
    // The child attaches it in its own namespace; ours is not needed after.
    const int lower = lower_tree_.get();
    int err = SendFds(sock, 'L', &lower, 1);
    lower_tree_.Reset();
    if (err != 0) return ErrnoError("handing the idmapped work dir to the sandbox", err);
  }
  COCOON_ASSIGN_OR_RETURN(std::vector<int> fds, ReceiveFds(sock, 2, "its staged work dir"));
  AdoptFds(fds[0], fds[1]);
  COCOON_RETURN_IF_ERROR(Populate(cancel_fd).WithContext("filling the staged work dir"));
  ssize_t n;
  do {
    n = write(sock, "G", 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) return ErrnoError("releasing the sandbox after staging");
  return Status::Ok();
}

Status Staging::Populate(int cancel_fd) {
  tree::CopyHooks hooks;
  tree::CopyStats stats;
  // A copy-in of a big dir takes seconds: a cancel (a readable signalfd)
  // stops it, polled once per 16 entries (a poll is ~1 us) and within a big
  // file once per chunk (tree::kCopyChunkBytes).
  uint64_t copied_entries = 0;
  if (cancel_fd >= 0) {
    hooks.tick = [cancel_fd, &copied_entries] {
      if (++copied_entries % 16 == 1 && FdReadableNow(cancel_fd)) {
        return Status(ErrorCode::kUnavailable, "the copy-in was cancelled");
      }
      return Status::Ok();
    };
    hooks.between_chunks = [cancel_fd] {
      return FdReadableNow(cancel_fd) ? Status(ErrorCode::kUnavailable, "the copy-in was cancelled") : Status::Ok();
    };
  }
  if (options_.sandbox_host_uid >= 0) {
    hooks.owner = tree::Owner{true, static_cast<uid_t>(options_.sandbox_host_uid),
                              static_cast<gid_t>(options_.sandbox_host_gid >= 0 ? options_.sandbox_host_gid
                                                                                : options_.sandbox_host_uid)};
    // The work dir's root belongs to the sandbox user. For an overlay this
    // goes through the overlay itself (which chowns its upper root): the
    // overlay caches its root inode's owner from the upper dir at mount
    // time and checks permissions against that copy, so chowning the upper
    // dir underneath would show the new owner to stat(2) but keep refusing
    // the sandbox user's creates (EACCES).
    if (fchown(view_fd_, hooks.owner.uid, hooks.owner.gid) != 0) return ErrnoError("chown of the staged work dir");
    // Only the work dir owner's entries become the sandbox user's: another
    // user's (root's 0600 file in alice's dir) keep their owner, so the
    // sandbox has the access any other user has, as under the overlay's
    // idmapped lower layer, which maps only the owner's ids.
    struct stat host {};
    if (fstat(host_dir_fd_.get(), &host) != 0) return ErrnoError("stat " + options_.host_dir);
    hooks.owner_for_uid = host.st_uid;
  }
  if (spec_.strategy == StagingStrategy::kCopy) {
    // Opened again through the fd Prepare checked and scanned (a new open
    // file description: the scan left the old one's offset at the end).
    Fd host(openat(host_dir_fd_.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!host.valid()) return ErrnoError("opening " + options_.host_dir);
    // The host's own symlinks are copied as they are; remember them so that
    // an unchanged original is not reported (or dropped) as a breakout.
    hooks.on_symlink = [this](const std::string& path, const std::string& target) {
      preexisting_symlinks_[path] = target;
    };
    // The copy keeps the original's times (so `make` inside sees them), and
    // what it took is recorded, so that the commit can give back untouched
    // originals themselves (commit.h, StagedOriginals).
    hooks.on_file = [this](const std::string& path, const struct stat& source, int dst_dir, const std::string& name) {
      const struct timespec times[2] = {source.st_atim, source.st_mtim};
      if (utimensat(dst_dir, name.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) return ErrnoError("utimes " + path);
      struct stat staged {};
      if (fstatat(dst_dir, name.c_str(), &staged, AT_SYMLINK_NOFOLLOW) != 0) return ErrnoError("stat " + path);
      originals_.files[path] = StagedOriginals::File{source.st_dev, source.st_ino, staged.st_ino, staged.st_size,
                                                     staged.st_mtim, staged.st_ctim};
      return Status::Ok();
    };
    originals_.host_entries_recorded = true;
    hooks.on_entry = [this](const std::string& path, const struct stat& source) {
      originals_.host_entries[path] =
          StagedOriginals::Seen{source.st_ino, source.st_ctim, source.st_mode, source.st_uid, source.st_gid,
                                source.st_mtim, source.st_size};
    };
    hooks.on_special = [this](const std::string& path, const struct stat& source) {
      originals_.not_copied[path] = StagedOriginals::Special{source.st_dev, source.st_ino};
    };
    Status copied = tree::CopyTree(host.get(), view_fd_, "", hooks, stats);
    if (!copied.ok()) return copied.code() == ErrorCode::kResourceExhausted || copied.message().find("No space") != std::string::npos
                                ? ResourceExhaustedError("the work dir does not fit in the disk quota: " + copied.message() +
                                                         (overlay_declined_.empty() ? ""
                                                          : " (it was copied rather than overlaid: " +
                                                                overlay_declined_ + ")"))
                                : copied;
    hooks.on_symlink = nullptr;
    hooks.on_entry = nullptr;
    hooks.on_file = nullptr;
    hooks.on_special = nullptr;
  }
  // What --copy brings in is the host's too: its symlinks are recorded like
  // the work dir's own, so that one the sandbox left as it was is kept and
  // not reported as a breakout (one it changed or made is still judged).
  // Its files and specials are not recorded as originals: those are linked
  // back from the work dir's own path at commit, and a --copy source lives
  // elsewhere (the work dir must not share inodes with it).
  hooks.on_symlink = [this](const std::string& path, const std::string& target) {
    preexisting_symlinks_[path] = target;
  };
  for (const ir::Copy& copy : options_.copies) {
    std::string dest = copy.destination;
    size_t slash = dest.rfind('/');
    std::string dir = slash == std::string::npos ? "" : dest.substr(0, slash);
    std::string name = slash == std::string::npos ? dest : dest.substr(slash + 1);
    COCOON_ASSIGN_OR_RETURN(Fd parent, tree::OpenDirPath(view_fd_, dir, tree::CreateMissing::kYes, &hooks.owner));
    auto source = ResolveHostPath(copy.source);
    if (!source.ok()) return source.status().WithContext("--copy source");
    struct stat st {};
    if (lstat(source->c_str(), &st) != 0) return ErrnoError("--copy source " + copy.source);
    // The destination is replaced, never written through (it may be a link).
    COCOON_RETURN_IF_ERROR(tree::RemoveTree(parent.get(), name));
    // So are the work dir's own links there: what the sandbox makes at
    // their paths is its own.
    std::erase_if(preexisting_symlinks_, [&dest](const auto& link) {
      return link.first == dest || link.first.starts_with(dest + "/");
    });
    if (S_ISDIR(st.st_mode)) {
      auto opened = OpenResolvedPath(*source, O_RDONLY | O_DIRECTORY);
      if (!opened.ok()) return opened.status().WithContext("--copy source");
      Fd src(*opened);
      if (mkdirat(parent.get(), name.c_str(), st.st_mode & 0777) != 0) return ErrnoError("creating " + dest);
      COCOON_RETURN_IF_ERROR(tree::ChownAt(parent.get(), name, hooks.owner));
      COCOON_ASSIGN_OR_RETURN(Fd dst, tree::OpenDir(parent.get(), name));
      COCOON_RETURN_IF_ERROR(tree::CopyTree(src.get(), dst.get(), dest, hooks, stats));
    } else {
      // From its directory, opened with no symlink on the way (CopyFile opens
      // the name itself with O_NOFOLLOW).
      size_t last = source->rfind('/');
      auto dir_fd = OpenResolvedPath(last == 0 ? "/" : source->substr(0, last), O_PATH | O_DIRECTORY);
      if (!dir_fd.ok()) return dir_fd.status().WithContext("--copy source");
      Fd source_dir(*dir_fd);
      COCOON_RETURN_IF_ERROR(
          tree::CopyFile(source_dir.get(), source->substr(last + 1), parent.get(), name, st.st_mode, &stats.bytes,
                         hooks.between_chunks));
      COCOON_RETURN_IF_ERROR(tree::ChownAt(parent.get(), name, hooks.owner));
    }
  }
  return Status::Ok();
}

namespace {

// Removes the mount points the child made for inner mounts (and their new
// parents) when they are still empty: an empty directory, or an empty file
// for a file bind. Anything the sandbox put there stays and is verified.
void RemoveScaffolding(int root_fd, const std::vector<std::string>& deepest_first) {
  for (const std::string& path : deepest_first) {
    size_t slash = path.rfind('/');
    auto parent = tree::OpenDirPath(root_fd, slash == std::string::npos ? "" : path.substr(0, slash),
                                    tree::CreateMissing::kNo);
    if (!parent.ok()) continue;
    std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
    struct stat st {};
    if (fstatat(parent->get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      (void)unlinkat(parent->get(), name.c_str(), AT_REMOVEDIR);  // ENOTEMPTY: the sandbox's now
    } else if (S_ISREG(st.st_mode) && st.st_size == 0) {
      (void)unlinkat(parent->get(), name.c_str(), 0);
    }
  }
}

}  // namespace

StagingResult Staging::VerifyAndCommit(const std::atomic<bool>* cancel, int cancel_fd, StagedCommit commit) {
  if (!scaffolding_.empty()) {
    if (spec_.strategy == StagingStrategy::kDirect) {
      RemoveScaffolding(host_dir_fd_.get(), scaffolding_);
    } else if (tree_fd_ >= 0) {
      RemoveScaffolding(tree_fd_, scaffolding_);
    }
  }
  StagingResult result;
  if (spec_.strategy == StagingStrategy::kDirect) {
    VerifyDirect(cancel_fd, result);
  } else if (tree_fd_ < 0) {
    result.error = FailedPreconditionError("the staged work dir was never received from the sandbox");
  } else {
    VerifyAndCommitStaged(cancel, cancel_fd, commit, result);
  }
  return result;
}

// Scans the host dir the sandbox wrote to, then defuses what it found:
// through the fd Prepare opened, which is the directory the child bound
// (it checked; WorkMountChildSpec::host_ino), wherever it is now.
void Staging::VerifyDirect(int cancel_fd, StagingResult& result) {
  ScanOptions scan_options;
  scan_options.mode = ScanMode::kDirect;
  // Not capped: the findings are in the host dir already, and a scan that
  // stopped at the cap would leave every one of them there unremoved.
  scan_options.max_findings = UINT64_MAX;
  scan_options.max_finding_bytes = UINT64_MAX;
  scan_options.max_path_bytes = UINT64_MAX;
  // The sandbox's writes are on the host already, so this runs after a
  // cancelled run too. A signal during it (after a cancel: a second one;
  // the supervisor consumed the first) stops it: the user asked cocoon to
  // stop. What it found until then is still removed (a sandbox could make
  // the scan slow on purpose, so that a Ctrl-C is likely), and the Outcome
  // says the rest of the dir was not verified.
  scan_options.cancel_fd = cancel_fd;
  auto scan = ScanForBreakouts(host_dir_fd_.get(), scan_options);
  if (!scan.ok()) {
    result.error = scan.status();
    return;
  }
  result.scanned = true;
  result.scan = std::move(*scan);
  auto remediated = RemediateDirectTree(host_dir_fd_.get(), result.scan, changed_since_);
  if (!remediated.ok()) {
    result.error = remediated.status();
    return;
  }
  result.commit = std::move(*remediated);
  SetAsidePreexisting(result.scan, result.commit, result.preexisting);
  if (result.scan.stopped) {
    const size_t found = result.scan.findings.size();
    result.error = Status(ErrorCode::kUnavailable,
                          "breakout verification was stopped by SIGINT/SIGTERM/SIGHUP after " +
                              std::to_string(result.scan.entries) + " entries (" + std::to_string(found) +
                              (found == 1 ? " finding" : " findings") + " in them" +
                              (found == 0                               ? ""
                               : result.commit.not_remediated.empty() ? ", removed"
                                                                      : ", removed where they could be") +
                              "); the rest of the dir was not verified");
  } else if (!result.commit.not_remediated.empty()) {
    result.error = Status(ErrorCode::kPermissionDenied,
                          std::to_string(result.commit.not_remediated.size()) + " of " +
                              std::to_string(result.scan.findings.size()) +
                              " entries the scan found could not be removed or defused (first: " +
                              result.commit.remediation_error + "); remove them by hand");
  }
}

// Scans the staged tree, then commits what passed to the host dir.
void Staging::VerifyAndCommitStaged(const std::atomic<bool>* cancel, int cancel_fd, StagedCommit commit,
                                    StagingResult& result) {
  ScanOptions scan_options;
  scan_options.mode = spec_.strategy == StagingStrategy::kOverlay ? ScanMode::kOverlayUpper : ScanMode::kStagedTree;
  auto scan = ScanForBreakouts(tree_fd_, scan_options);
  if (!scan.ok()) {
    result.error = scan.status();
    return;
  }
  result.scanned = true;
  result.scan = std::move(*scan);
  // An original host symlink the sandbox left untouched is the host's own,
  // not a breakout: keep it (it was already there).
  std::erase_if(result.scan.findings, [this](const BreakoutFinding& f) {
    auto it = preexisting_symlinks_.find(f.path);
    return f.kind == "symlink-escape" && it != preexisting_symlinks_.end() && it->second == f.target;
  });
  if (commit == StagedCommit::kDiscard) return;  // verified; nothing goes back
  // A directory the scan could not go into would be left out of the commit
  // whole. As root, that is a way to remove files of the host dir that the
  // sandbox could not have removed itself (root's files inside a directory of
  // the caller's, moved under 256 levels of the sandbox's own): nothing is
  // committed instead.
  for (const BreakoutFinding& finding : result.scan.findings) {
    if (finding.kind != "too-deep") continue;
    result.error = FailedPreconditionError(
        "the sandbox nested directories deeper than breakout verification goes (" +
        std::to_string(scan_options.max_depth) + " levels) at " + finding.path +
        ": nothing was committed (leaving that directory out would remove what it holds from the host dir)");
    return;
  }
  CommitOptions commit_options;
  commit_options.cancel = cancel;
  commit_options.cancel_fd = cancel_fd;
  commit_options.after_install_step_for_test = options_.after_commit_install_step_for_test;
  commit_options.max_bytes = quota_bytes_;
  commit_options.expected_host_dir = HostDirIdentity{static_cast<dev_t>(spec_.host_dev), static_cast<ino_t>(spec_.host_ino)};
  if (spec_.strategy == StagingStrategy::kCopy) {
    commit_options.originals = &originals_;
    if (options_.sandbox_host_uid >= 0) commit_options.sandbox_uid = static_cast<uid_t>(options_.sandbox_host_uid);
  }
  // The host's own links (copy mode) and those --copy brought in (both modes).
  commit_options.host_symlinks = &preexisting_symlinks_;
  commit_options.source =
      spec_.strategy == StagingStrategy::kOverlay ? CommitSource::kOverlayUpper : CommitSource::kStagedTree;
  auto committed = CommitStagedTree(tree_fd_, result.scan, options_.host_dir, commit_options);
  if (!committed.ok()) {
    // The committer checks the flag between entries; a stop there changed
    // nothing on the host (the install is the last step, and undone if it fails).
    result.cancelled = committed.status().code() == ErrorCode::kUnavailable &&
                       ((cancel != nullptr && cancel->load()) || FdReadableNow(cancel_fd));
    result.error = committed.status();
    return;
  }
  result.commit = std::move(*committed);
  result.committed = true;
  if (!result.commit.escaping_after_merge.empty()) {
    for (const auto& finding : result.commit.escaping_after_merge) result.scan.findings.push_back(finding);
    std::sort(result.scan.findings.begin(), result.scan.findings.end(),
              [](const BreakoutFinding& a, const BreakoutFinding& b) { return a.path < b.path; });
  }
}

}  // namespace cocoon::enforcer
