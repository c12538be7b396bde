#include "enforcer/child_spec_builder.h"

#include <dirent.h>
#include <linux/mount.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <map>
#include <optional>
#include <string_view>

#include "compiler/ir/work_dir_rules.h"
#include "enforcer/landlock.h"
#include "enforcer/tmpfs_inodes.h"
#include "enforcer/workdir/host_path.h"

extern char** environ;

namespace cocoon::enforcer {
namespace {

using backends::PlanMount;
using backends::PlanMountKind;

bool IsUnder(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

// `path` with "." components and repeated slashes removed; nullopt if it
// has a ".." component (not needed for what it is used for below).
std::optional<std::string> NormalizeAbsolute(const std::string& path) {
  std::string out;
  size_t i = 0;
  while (i < path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string_view part(path.data() + i, j - i);
    if (part == "..") return std::nullopt;
    if (!part.empty() && part != ".") {
      out += '/';
      out += part;
    }
    i = j + 1;
  }
  return out.empty() ? "/" : out;
}

// On a merged-/usr host, /bin, /sbin, /lib, /lib32 and /lib64 are symlinks
// into /usr ("usr/bin"). When the plan binds such a top-level path read-only
// and also binds the directory it points into at the same path (/usr at
// /usr), the sandbox gets the host's symlink instead of a second bind of
// /usr/bin: the same files through the same read-only, nosuid, nodev /usr
// mount, and `readlink /bin` inside says what it says on the host. Each such
// bind cost a mkdir, a mount and a mount_setattr at launch and an unmount at
// exit, 5 of strict's 30 mounts. The link lives on the new root's tmpfs,
// which the child remounts read-only before pivot_root, so the sandbox
// cannot retarget it. Returns the link text, or nullopt to bind as before.
std::optional<std::string> HostSymlinkIntoBoundDirectory(const PlanMount& mount, const std::vector<PlanMount>& plan_mounts,
                                                         HostPathResolver& resolver) {
  if (mount.kind != PlanMountKind::kBindReadOnly || mount.source != mount.target) return std::nullopt;
  if (mount.target.size() < 2 || mount.target.find('/', 1) != std::string::npos) return std::nullopt;  // top level only
  std::optional<std::string> text = resolver.SymlinkText(mount.source);
  if (!text || text->empty()) return std::nullopt;
  const std::string& link = *text;
  // The text must name the real path directly (no further symlinks on the
  // way), so that it resolves inside the sandbox exactly as on the host.
  auto lexical = NormalizeAbsolute(link[0] == '/' ? link : "/" + link);
  auto real = resolver.Resolve(mount.source);
  if (!lexical || !real.ok() || *lexical != *real) return std::nullopt;
  for (const PlanMount& other : plan_mounts) {
    if (&other == &mount || other.kind != PlanMountKind::kBindReadOnly || other.source != other.target) continue;
    if (!IsUnder(*real, other.target) || *real == other.target) continue;
    auto other_real = resolver.Resolve(other.source);
    if (other_real.ok() && *other_real == other.source) return link;
  }
  return std::nullopt;
}

constexpr uint64_t kReadOnlyAttrs = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
constexpr uint64_t kWritableAttrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
// Read-only too: opening a device node for writing skips the mount's
// read-only check (special files, do_dentry_open), so /dev/null and friends
// still take writes, while their host inodes' times and modes cannot be
// changed from the sandbox (`touch /dev/null` would otherwise stamp the host's).
constexpr uint64_t kDeviceAttrs = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC;

}  // namespace

const char* PreparedChild::Keep(std::string text) {
  strings_.push_back(std::move(text));
  return strings_.back().c_str();
}

Result<std::unique_ptr<PreparedChild>> PreparedChild::Build(ChildSpecInputs inputs) {
  std::unique_ptr<PreparedChild> prepared(new PreparedChild());
  prepared->inputs_ = std::move(inputs);
  const auto& plan = *prepared->inputs_.plan;
  if (prepared->inputs_.argv.empty() || prepared->inputs_.argv[0].empty()) {
    return InvalidArgumentError("no command to run");
  }
  if (prepared->inputs_.seccomp.empty()) return InvalidArgumentError("no seccomp program: refusing to run unfiltered");
  COCOON_RETURN_IF_ERROR(prepared->AddMounts());
  prepared->AddLandlockRules();
  prepared->BuildEnvironment();
  prepared->BuildExec();

  ChildSpec& spec = prepared->spec_;
  spec.hostname = prepared->Keep(plan.hostname);
  spec.hostname_len = plan.hostname.size();
  spec.loopback = plan.network != ir::NetworkMode::kOn;
  spec.new_root = prepared->Keep(prepared->inputs_.new_root);
  spec.new_root_data = "mode=0755,size=1m";
  spec.mounts = prepared->mounts_.data();
  spec.mount_count = prepared->mounts_.size();
  spec.work_spec = prepared->inputs_.work_spec;
  spec.cwd = prepared->Keep(plan.cwd);
  spec.rlimits = &prepared->inputs_.rlimits;
  spec.uid = plan.uid;
  spec.gid = plan.gid;
  spec.drop_supplementary_groups = prepared->inputs_.drop_supplementary_groups;
  const std::string uid_map = std::to_string(plan.uid) + " " + std::to_string(plan.uid) + " 1\n";
  const std::string gid_map = std::to_string(plan.gid) + " " + std::to_string(plan.gid) + " 1\n";
  spec.nested_uid_map = prepared->Keep(uid_map);
  spec.nested_uid_map_len = uid_map.size();
  spec.nested_gid_map = prepared->Keep(gid_map);
  spec.nested_gid_map_len = gid_map.size();
  spec.landlock_abi = prepared->inputs_.landlock_abi;
  spec.landlock_handled_fs = LandlockHandledFs(spec.landlock_abi);
  spec.landlock_scoped = LandlockScoped(spec.landlock_abi);
  spec.landlock_rules = prepared->landlock_.data();
  spec.landlock_rule_count = prepared->landlock_.size();
  prepared->seccomp_prog_.len = static_cast<unsigned short>(prepared->inputs_.seccomp.size());
  prepared->seccomp_prog_.filter = prepared->inputs_.seccomp.data();
  spec.seccomp = &prepared->seccomp_prog_;
  spec.seccomp_listener = prepared->inputs_.seccomp_listener;
  return prepared;
}

Status PreparedChild::AddMounts() {
  if (inputs_.plan->root == ir::RootKind::kRootfs) COCOON_RETURN_IF_ERROR(AddRootfsEntries());
  for (const auto& mount : inputs_.plan->mounts) {
    COCOON_RETURN_IF_ERROR(AddMount(mount).WithContext(std::string(backends::PlanMountKindName(mount.kind)) + " " +
                                                       (mount.source.empty() ? "" : mount.source + " -> ") + mount.target));
  }
  for (const auto& mount : inputs_.extra_mounts) {
    // What the enforcer adds itself (an allow-list's generated /etc/hosts)
    // goes in after the policy's masks: over a path the policy hides it
    // would undo the `hide`, so it is left out there (names then resolve to
    // nothing in the sandbox; allowed IP addresses still connect).
    const bool hidden = std::any_of(inputs_.plan->mounts.begin(), inputs_.plan->mounts.end(), [&](const PlanMount& m) {
      return m.kind == PlanMountKind::kMask && IsUnder(mount.target, m.target);
    });
    if (hidden) continue;
    COCOON_RETURN_IF_ERROR(AddMount(mount).WithContext("bind " + mount.source + " -> " + mount.target));
  }
  return AddAliasMasks();
}

// A hidden file or directory of the host can show in the sandbox under more
// than one name: a bind of a directory that holds it, besides the one the
// `hide` named (`readonly /usr /bin` on a merged-/usr host binds /bin from
// /usr/bin, so `hide /bin/cat` is /usr/bin/cat too), or a bind of a
// directory inside it (`hide /usr` covers that /bin). Each such name gets a
// mask of its own, on top of every bind, so that the hidden data is
// unreadable by any of them. A name that cannot be masked refuses the launch.
Status PreparedChild::AddAliasMasks() {
  const auto hidden = hidden_hosts_;
  const auto binds = binds_;
  for (const auto& [target, host] : hidden) {
    for (const auto& [inside, source] : binds) {
      std::string alias;
      if (IsUnder(host, source)) {
        const std::string suffix = source == "/" ? (host == "/" ? "" : host) : host.substr(source.size());
        alias = inside == "/" ? (suffix.empty() ? "/" : suffix) : inside + suffix;
      } else if (IsUnder(source, host)) {
        alias = inside;  // the bind shows part of the hidden directory
      } else {
        continue;
      }
      // Already hidden: by this mask, or by one on it or a directory above
      // it (a bind below a hidden path is covered; its mount point is gone).
      const bool hidden_already = std::any_of(masked_targets_.begin(), masked_targets_.end(),
                                              [&](const std::string& masked) { return IsUnder(alias, masked); });
      if (alias == target || hidden_already) continue;
      // A deeper bind at or above the alias shows something else there.
      const bool covered = std::any_of(binds.begin(), binds.end(), [&, &inside = inside](const auto& other) {
        return other.first != inside && IsUnder(other.first, inside) && IsUnder(alias, other.first);
      });
      if (covered) continue;
      COCOON_RETURN_IF_ERROR(AddMount({PlanMountKind::kMask, "", alias, 0, false})
                                 .WithContext("hide " + target + " (the host's " + host + ", also shown at " + alias + ")"));
    }
  }
  return Status::Ok();
}

// `root rootfs DIR`: the new root is still a fresh tmpfs, and each top-level
// entry of the bundle is bound read-only onto it (directories and files) or
// recreated (symlinks; their text is read inside the sandbox). Nothing is ever
// created inside the bundle on the host, and /proc, /dev, the work dir and the
// policy's own mounts still land on the tmpfs. A policy mount whose target is
// a top-level entry replaces that entry. Device nodes, FIFOs and sockets of
// the bundle are not exposed: the enforcer builds its own minimal /dev.
Status PreparedChild::AddRootfsEntries() {
  const auto& plan = *inputs_.plan;
  auto real_root = resolver_.Resolve(plan.rootfs);
  if (!real_root.ok()) return real_root.status().WithContext("root rootfs " + plan.rootfs);
  struct stat root_st;
  if (stat(real_root->c_str(), &root_st) != 0 || !S_ISDIR(root_st.st_mode)) {
    return InvalidArgumentError("root rootfs " + plan.rootfs + " is not a directory");
  }
  std::vector<std::string> names;
  DIR* dir = opendir(real_root->c_str());
  if (dir == nullptr) return ErrnoError("opendir " + *real_root);
  while (struct dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    std::string target = "/" + name;
    if (target == "/proc" || target == "/dev") continue;
    bool replaced = std::any_of(plan.mounts.begin(), plan.mounts.end(),
                                [&](const PlanMount& m) { return m.target == target; });
    if (replaced) continue;
    std::string source = *real_root + target;
    struct stat st;
    if (lstat(source.c_str(), &st) != 0) return ErrnoError("lstat " + source);
    ChildMountOp op;
    op.target = Keep(inputs_.new_root + target);
    if (S_ISLNK(st.st_mode)) {
      char text[PATH_MAX];
      ssize_t n = readlink(source.c_str(), text, sizeof(text) - 1);
      if (n < 0) return ErrnoError("readlink " + source);
      op.kind = ChildMountKind::kSymlink;
      op.source = Keep(std::string(text, static_cast<size_t>(n)));
      rootfs_symlinks_.push_back(target);
    } else if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) {
      op.kind = ChildMountKind::kBind;
      op.source = Keep(source);
      op.source_dev = st.st_dev;
      op.source_ino = st.st_ino;
      op.target_is_dir = S_ISDIR(st.st_mode);
      op.attr_set = kReadOnlyAttrs;
      binds_.emplace_back(target, source);
    } else {
      continue;
    }
    mounted_targets_.emplace_back(target, op.target_is_dir);
    PushOp(op, target, "rootfs " + source + " -> " + target);
  }
  return Status::Ok();
}

void PreparedChild::PushOp(ChildMountOp op, const std::string& target, std::string description) {
  const std::string& work = inputs_.plan->work_path;
  if (op.kind != ChildMountKind::kWorkDir && !work.empty() && target != work && IsUnder(target, work)) {
    op.owner_uid = inputs_.plan->uid;
    op.owner_gid = inputs_.plan->gid;
  }
  // The longest proper ancestor of `target` that an earlier op made.
  for (size_t slash = target.rfind('/'); slash != std::string::npos && slash > 0; slash = target.rfind('/', slash - 1)) {
    if (existing_dirs_.count(target.substr(0, slash)) != 0) {
      op.existing_parent_len = slash;
      break;
    }
  }
  for (size_t slash = target.find('/', 1); slash != std::string::npos; slash = target.find('/', slash + 1)) {
    existing_dirs_.insert(target.substr(0, slash));
  }
  if (op.kind != ChildMountKind::kSymlink && op.target_is_dir) existing_dirs_.insert(target);
  mounts_.push_back(op);
  mount_descriptions_.push_back(std::move(description));
}

bool PreparedChild::InsideBoundHostDirectory(const std::string& target) const {
  // The innermost earlier mount holding `target` decides: a bind is a host
  // directory; a tmpfs, /proc or the work dir is the sandbox's own.
  // The rule `cocoon check` applies too (ir/work_dir_rules.h).
  const std::string* innermost =
      ir::InnermostMountHolding(target, mounted_targets_, [](const auto& mounted) -> const std::string& {
        return mounted.first;
      });
  return innermost != nullptr && std::any_of(binds_.begin(), binds_.end(), [&](const auto& bind) {
           return bind.first == *innermost;
         });
}

bool PreparedChild::TargetHasMountsBelow(const std::string& target) const {
  auto below = [&](const PlanMount& m) { return m.target != target && IsUnder(m.target, target); };
  return std::any_of(inputs_.plan->mounts.begin(), inputs_.plan->mounts.end(), below) ||
         std::any_of(inputs_.extra_mounts.begin(), inputs_.extra_mounts.end(), below);
}

bool PreparedChild::TargetIsHidden(const std::string& target) const {
  return std::any_of(inputs_.plan->mounts.begin(), inputs_.plan->mounts.end(),
                     [&](const PlanMount& m) { return m.kind == PlanMountKind::kMask && m.target == target; });
}

// `hide`: what would be visible at the target is the host /proc for proc
// paths (same kernel), the source of a bind made exactly there, a path in a
// bound host directory, or, with none of those, only the sandbox's own
// directories leading to binds below the target. Each is covered with an
// empty read-only file or directory, on top of whatever an earlier op
// mounted there: hide wins over a bind of the same path (a base policy's
// mount, a child's `readonly`, `cocoon run --ro`). False: nothing to hide.
Result<bool> PreparedChild::PrepareMask(const PlanMount& mount, const std::pair<std::string, std::string>* parent_bind,
                                        ChildMountOp& op) {
  const std::string& target = mount.target;
  const bool in_proc = IsUnder(target, "/proc");
  const std::pair<std::string, std::string>* exact_bind = nullptr;
  for (const auto& bind : binds_) {
    if (bind.first == target) exact_bind = &bind;
  }
  const std::string& work = inputs_.plan->work_path;
  if (!work.empty() && IsUnder(target, work) && parent_bind == nullptr && exact_bind == nullptr) {
    // The checker refuses this too; a plan from elsewhere must not fail
    // open. (Inside a bind nested in the work dir it is that bind's
    // host path that is hidden, as anywhere else.)
    return FailedPreconditionError("hide " + target + " is inside the work dir " + work +
                                   ", which holds the caller's own files: it cannot be hidden there");
  }
  if (symlink_targets_.count(target) != 0) {
    // mount(2) would follow the link: the mask would land on (and hide) the
    // directory it points to under another name, or on the host. (A hidden
    // top-level entry of a `root rootfs` bundle is not made at all.)
    return FailedPreconditionError("hide " + target + ": the sandbox has a symlink there; hide the path it points to");
  }
  std::string host;
  bool from_host_tree = false;
  if (in_proc) {
    host = target;
  } else if (exact_bind != nullptr) {
    host = exact_bind->second;
  } else if (parent_bind != nullptr) {
    host = parent_bind->second + target.substr(parent_bind->first.size());
  }
  struct stat st;
  if (host.empty() || lstat(host.c_str(), &st) != 0) {
    const bool binds_below = !in_proc && std::any_of(binds_.begin(), binds_.end(), [&](const auto& bind) {
      return bind.first != target && IsUnder(bind.first, target);
    });
    if (!binds_below) return false;
    // Only directories the sandbox's own tree made lead to those binds:
    // one empty directory covers them all.
    st = {};
    st.st_mode = S_IFDIR;
  } else if (!in_proc) {
    from_host_tree = true;
    // A hidden path that is, or goes through, a symlink in the bound
    // directory fails open: masking the link leaves its target readable
    // (through the link's other names), and the child's mount(2), run
    // before pivot_root, would follow a link in the middle into the host
    // tree and mask something there instead. Refuse rather than guess.
    auto real = resolver_.Resolve(host);
    if (!real.ok() || *real != host) {
      return FailedPreconditionError("hide " + target + ": on the host that is " + host +
                                     (real.ok() ? ", which is or goes through a symlink to " + *real : "") +
                                     "; hide the real path (and any other name that leads to it)");
    }
  }
  if (S_ISLNK(st.st_mode)) return false;  // a /proc link (self, mounts...): nothing of its own to hide
  if (from_host_tree) hidden_hosts_.emplace_back(target, host);
  masked_targets_.insert(target);
  if (S_ISDIR(st.st_mode)) {
    op.kind = ChildMountKind::kMaskDir;
    op.flags = MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
    op.data = "size=4k,mode=0555";
  } else {
    op.kind = ChildMountKind::kMaskFile;
    op.source = Keep(inputs_.new_root + "/dev/null");
    op.target_is_dir = false;
    op.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC;
  }
  // A /proc entry is there in the sandbox's new procfs (same kernel), and a
  // bind's target is there since that bind: nothing to create (procfs
  // would refuse anyway), and the bound one is opened, as a mount point in
  // a host tree is, without following a symlink.
  op.mount_point_exists = in_proc || exact_bind != nullptr;
  if (exact_bind != nullptr) op.target_in_host_tree = true;
  return true;
}

Status PreparedChild::AddMount(const PlanMount& mount) {
  const std::string& root = inputs_.new_root;
  // mount(2) follows symlinks in its target: a mount point under a bundle's
  // symlink (often absolute, like /lib -> /usr/lib) would resolve against
  // the host root before pivot_root. Ask for the real path instead.
  for (const auto& link : rootfs_symlinks_) {
    if (IsUnder(mount.target, link) && mount.target != link) {
      return FailedPreconditionError("mount target " + mount.target + " is under " + link +
                                     ", a symlink in the rootfs; name the directory it points to");
    }
  }
  // The closest earlier bind containing this target: a mount point inside a
  // bound host directory must already exist there (the child never creates
  // anything on a host filesystem, and mount(2) would follow a symlink).
  const std::pair<std::string, std::string>* parent_bind = nullptr;
  for (const auto& bind : binds_) {
    if (IsUnder(mount.target, bind.first) && mount.target != bind.first) parent_bind = &bind;
  }
  auto host_equivalent = [&]() -> std::string {
    return parent_bind ? parent_bind->second + mount.target.substr(parent_bind->first.size()) : std::string();
  };

  const bool in_host_tree = InsideBoundHostDirectory(mount.target);
  ChildMountOp op;
  op.target = Keep(root + mount.target);
  std::string description = std::string(backends::PlanMountKindName(mount.kind)) + " " +
                            (mount.source.empty() ? "" : mount.source + " -> ") + mount.target;
  switch (mount.kind) {
    case PlanMountKind::kBindReadOnly:
    case PlanMountKind::kBindWritable: {
      // Not for a hidden target either: the mask goes on the bind (a mask
      // cannot go on a symlink, whose directory would stay readable).
      if (inputs_.plan->root != ir::RootKind::kRootfs && !TargetHasMountsBelow(mount.target) &&
          !TargetIsHidden(mount.target)) {
        if (auto link = HostSymlinkIntoBoundDirectory(mount, inputs_.plan->mounts, resolver_)) {
          op.kind = ChildMountKind::kSymlink;
          op.source = Keep(*link);
          description += " (the host's symlink to " + *link + ")";
          break;
        }
      }
      auto real = resolver_.Resolve(mount.source);
      if (!real.ok()) {
        if (mount.optional && real.status().code() == ErrorCode::kNotFound) return Status::Ok();
        return real.status();
      }
      if (ShowsHostProc(*real)) {
        return InvalidArgumentError("the mount of " + mount.source + " (" + *real + ") would show the host's /proc to the "
                                    "sandbox, with every host process and its root directory; the sandbox has a /proc "
                                    "of its own");
      }
      // Binds are recursive: a procfs, sysfs or the like mounted below the
      // source would come along (mounts.cc, open_tree AT_RECURSIVE).
      if (std::string shown = HostInterfaceShownBy(inputs_.interface_mounts, *real); !shown.empty()) {
        return InvalidArgumentError("the mount of " + mount.source + " (" + *real + ") " + shown +
                                    ", which the bind would carry into the sandbox and show the host's kernel "
                                    "interfaces or services there; unmount it, or bind a directory that holds none");
      }
      COCOON_ASSIGN_OR_RETURN(struct stat st, resolver_.StatResolved(*real));
      if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
        return InvalidArgumentError(mount.source + " is neither a directory nor a regular file");
      }
      op.kind = ChildMountKind::kBind;
      op.source = Keep(*real);
      op.source_dev = st.st_dev;
      op.source_ino = st.st_ino;
      op.target_is_dir = S_ISDIR(st.st_mode);
      op.attr_set = mount.kind == PlanMountKind::kBindReadOnly ? kReadOnlyAttrs : kWritableAttrs;
      break;
    }
    case PlanMountKind::kWork:
      op.target_is_dir = true;
      if (inputs_.work_spec != nullptr) {
        op.kind = ChildMountKind::kWorkDir;
      } else {
        uint64_t size = inputs_.work_tmpfs_bytes != 0 ? inputs_.work_tmpfs_bytes
                        : mount.size_bytes != 0       ? mount.size_bytes
                                                      : inputs_.default_work_tmpfs_bytes;
        op.kind = ChildMountKind::kTmpfs;
        op.flags = MS_NOSUID | MS_NODEV;
        op.data = Keep("size=" + std::to_string(size) + ",nr_inodes=" + std::to_string(TmpfsInodeLimit(size)) +
                       ",mode=0755,uid=" + std::to_string(inputs_.plan->uid) + ",gid=" + std::to_string(inputs_.plan->gid));
      }
      break;
    case PlanMountKind::kTmpfs:
      op.kind = ChildMountKind::kTmpfs;
      op.flags = MS_NOSUID | MS_NODEV;
      // POSIX shared memory is data, never code (as in OCI runtimes' /dev/shm).
      if (mount.target == "/dev/shm") op.flags |= MS_NOEXEC;
      op.data = Keep("size=" + std::to_string(mount.size_bytes) +
                     ",nr_inodes=" + std::to_string(TmpfsInodeLimit(mount.size_bytes)) + ",mode=1777");
      break;
    case PlanMountKind::kProc:
      op.kind = ChildMountKind::kProc;
      op.flags = MS_NOSUID | MS_NODEV | MS_NOEXEC;
      break;
    case PlanMountKind::kDevice: {
      struct stat st;
      if (stat(mount.source.c_str(), &st) != 0) {
        if (mount.optional) return Status::Ok();
        return ErrnoError("device " + mount.source);
      }
      if (S_ISDIR(st.st_mode)) {
        // A directory of devices (/dev/dri): a bind like any other, from its
        // real path, of the inode seen here.
        auto real = resolver_.Resolve(mount.source);
        if (!real.ok()) return real.status().WithContext("device " + mount.source);
        if (stat(real->c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return ErrnoError("device " + *real, ENOTDIR);
        op.kind = ChildMountKind::kBind;
        op.source = Keep(*real);
        op.source_dev = st.st_dev;
        op.source_ino = st.st_ino;
        op.attr_set = kDeviceAttrs;
      } else if (S_ISCHR(st.st_mode)) {
        op.kind = ChildMountKind::kDevice;
        op.target_is_dir = false;
        op.attr_set = kDeviceAttrs;
        op.source = Keep(mount.source);
      } else {
        return InvalidArgumentError(mount.source + " is not a character device");
      }
      break;
    }
    case PlanMountKind::kDevSymlink:
      op.kind = ChildMountKind::kSymlink;
      op.source = Keep(mount.source);
      break;
    case PlanMountKind::kReadOnly: {
      // Only entries of the sandbox's own procfs: anything else is a bind,
      // made read-only by its own kind.
      if (!IsUnder(mount.target, "/proc") || mount.target == "/proc") {
        return InvalidArgumentError("read-only " + mount.target + ": only /proc entries are made read-only in place");
      }
      struct stat st;  // same kernel: the host's /proc has the same entries
      if (lstat(mount.target.c_str(), &st) != 0) {
        if (mount.optional && errno == ENOENT) return Status::Ok();
        return ErrnoError("read-only " + mount.target);
      }
      if (S_ISLNK(st.st_mode)) return Status::Ok();  // /proc/self and the like: nothing of their own
      op.kind = ChildMountKind::kReadOnlyInPlace;
      op.target_is_dir = S_ISDIR(st.st_mode);
      op.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC;
      op.mount_point_exists = true;
      break;
    }
    case PlanMountKind::kMask: {
      COCOON_ASSIGN_OR_RETURN(bool masks, PrepareMask(mount, parent_bind, op));
      if (!masks) return Status::Ok();
      parent_bind = nullptr;  // checked in PrepareMask through lstat
      break;
    }
  }
  if (parent_bind != nullptr && op.kind != ChildMountKind::kSymlink) {
    std::string host = host_equivalent();
    auto real = resolver_.Resolve(host);
    if (!real.ok() || *real != host) {
      return FailedPreconditionError("mount point " + mount.target + " must exist (and not be a symlink) on the host as " +
                                     host + ", inside the bound directory " + parent_bind->second);
    }
  }
  if (in_host_tree && op.kind != ChildMountKind::kSymlink) {
    // Checked above to exist on the host. The child neither creates it nor
    // follows a symlink to it (mounts.cc says why).
    if (op.kind == ChildMountKind::kWorkDir) {
      return FailedPreconditionError(
          ir::WorkDirInsideBindReason(mount.target, parent_bind ? parent_bind->second : host_equivalent()));
    }
    op.target_in_host_tree = true;
    op.mount_point_exists = true;
  }
  if (op.kind == ChildMountKind::kBind) binds_.emplace_back(mount.target, op.source);
  if (op.kind == ChildMountKind::kSymlink) symlink_targets_.insert(mount.target);
  mounted_targets_.emplace_back(mount.target, op.target_is_dir);
  PushOp(op, mount.target, std::move(description));
  return Status::Ok();
}

void PreparedChild::AddLandlockRules() {
  int abi = inputs_.landlock_abi;
  if (abi <= 0) return;
  for (const auto& rule : inputs_.plan->landlock) {
    bool is_dir = true;
    bool found = rule.path == "/";
    for (const auto& [target, dir] : mounted_targets_) {
      if (target == rule.path) {
        found = true;
        is_dir = dir;
      }
    }
    if (!found) continue;  // an optional mount that was skipped
    // The child opens rule paths with no symlink followed (landlock.cc). A
    // target made as a symlink (the host's /bin -> usr/bin) points into a
    // bound directory, whose own rule applies there.
    if (symlink_targets_.count(rule.path) != 0) continue;
    uint64_t access = LandlockRuleAccess(rule.access, abi, is_dir);
    if (access == 0) continue;
    landlock_.push_back({Keep(rule.path), access, rule.optional});
  }
}

void PreparedChild::BuildEnvironment() {
  const auto& plan = *inputs_.plan;
  std::map<std::string, std::string> env;
  if (!plan.env_clear) {
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
      std::string text(*entry);
      auto eq = text.find('=');
      if (eq != std::string::npos) env[text.substr(0, eq)] = text.substr(eq + 1);
    }
    for (const auto& name : plan.env_unset) env.erase(name);
  }
  for (const auto& name : plan.env_pass) {
    if (auto given = inputs_.passed_values.find(name); given != inputs_.passed_values.end()) {
      env[name] = given->second;
    } else if (const char* value = getenv(name.c_str()); value != nullptr) {
      env[name] = value;
    }
  }
  for (const auto& var : plan.env_set) env[var.name] = var.value;
  for (const auto& [name, value] : env) env_strings_.push_back(name + "=" + value);
  for (auto& text : env_strings_) envp_.push_back(text.data());
  envp_.push_back(nullptr);
  spec_.envp = envp_.data();
}

void PreparedChild::BuildExec() {
  argv_strings_ = inputs_.argv;
  for (auto& arg : argv_strings_) argv_.push_back(arg.data());
  argv_.push_back(nullptr);
  spec_.argv = argv_.data();
  const std::string& program = argv_strings_[0];
  if (program.find('/') != std::string::npos) {
    exec_strings_.push_back(program);
  } else {
    // execvp semantics over the sandbox's own PATH (the child cannot call
    // execvp: it may allocate).
    std::string path = "/usr/local/bin:/usr/bin:/bin";
    for (const auto& text : env_strings_) {
      if (text.rfind("PATH=", 0) == 0) path = text.substr(5);
    }
    size_t start = 0;
    while (start <= path.size()) {
      size_t end = path.find(':', start);
      if (end == std::string::npos) end = path.size();
      std::string dir = path.substr(start, end - start);
      if (!dir.empty() && dir[0] == '/') exec_strings_.push_back(dir + "/" + program);
      start = end + 1;
    }
  }
  for (const auto& candidate : exec_strings_) exec_candidates_.push_back(candidate.c_str());
  spec_.exec_candidates = exec_candidates_.data();
  spec_.exec_candidate_count = exec_candidates_.size();
}

bool BindsHostWritable(const ChildMountOp& op) {
  return op.kind == ChildMountKind::kBind && (op.attr_set & MOUNT_ATTR_RDONLY) == 0;
}

std::string PreparedChild::DescribeMount(int index) const {
  if (index < 0 || static_cast<size_t>(index) >= mount_descriptions_.size()) return "mount #" + std::to_string(index);
  return mount_descriptions_[static_cast<size_t>(index)];
}

std::string PreparedChild::DescribeLandlockRule(int index) const {
  if (index < 0 || static_cast<size_t>(index) >= landlock_.size()) return "rule #" + std::to_string(index);
  return landlock_[static_cast<size_t>(index)].path;
}

}  // namespace cocoon::enforcer
