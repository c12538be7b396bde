// What the sandbox's child process reads after clone: a flat, fully
// precomputed description of every step, built by the parent
// (child_spec_builder.cc) from the LaunchPlan. The parent builds it while the
// child is already creating its namespaces (launcher.cc says why), then
// copies it into a shared arena mapped before clone (child_spec_arena.h); the
// child reads it only after the parent's 'G' byte, and only follows pointers
// into that arena. It never allocates, parses or formats, and makes only raw
// system calls: it runs between clone and execve in the address space of a
// possibly multi-threaded parent, sharing the calling thread's TLS
// (memory_sharing_clone.h).
//
// The first failing step is reported to the parent as a ChildError over the
// error pipe (O_CLOEXEC: a successful execve closes it, so EOF = success).
#pragma once

#include <linux/filter.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "enforcer/limits/limit_plan.h"
#include "enforcer/workdir/staging.h"

namespace cocoon::enforcer {

// Steps, in the order the child runs them. Stable numbers: they cross the pipe.
enum class ChildStep : int {
  kNone = 0,
  kStdio,            // dup2 of the stdio pipes onto 0, 1, 2
  kParentDeathSignal,
  kSyncWait,         // waiting for the parent to write the uid/gid maps
  kUnshareCgroup,
  kHostname,
  kLoopback,
  kMountPrivate,
  kMountNewRoot,
  kMkdirTarget,
  kBind,
  kMountAttr,        // mount_setattr(ro,nosuid,nodev) on a bind and its submounts
  kTmpfs,
  kWorkDir,          // enforcer/workdir MountWorkDirInChild
  kProc,
  kDevice,
  kSymlink,
  kMask,
  kRootReadOnly,
  kPivotRoot,
  kDetachOldRoot,
  kChdir,
  kRlimit,
  kSetsid,
  kCloseFds,
  kSecurebits,
  kCapBoundingSet,
  kCapAmbient,
  kSetgroups,
  kSetgid,
  kSetuid,
  kCapset,
  kNoNewPrivs,
  kLandlockCreate,
  kLandlockRule,
  kLandlockRestrict,
  kSeccomp,
  kListenerHandoff,
  kExec,
  // Appended (the numbers above are stable); see child_main.cc for the order.
  kJoinCgroup,       // open the v1 parent dirs, write "0" into each group's `tasks` (Cgroup::V1ParentDirs)
  kBrokerListener,   // network allow-lists: 127.0.0.1 listener sent to the parent (net.cc)
  kScheduler,        // leave an inherited SCHED_FIFO/RR for SCHED_OTHER
  kUnshareNamespaces,  // mount, uts, ipc [, net]: made by the child itself (launcher.cc)
  kBindSource,       // open a bind's source without following symlinks and check it is the one the parent saw
  kMountPoint,       // open a mount point inside a bound host directory without following symlinks
  kReadOnlyPath,     // bind a /proc entry (/proc/sys...) onto itself read-only
  kNestedUserNamespace,  // unshare the second user namespace the command runs in (nested_userns.cc)
  kNestedIdMaps,     // write its setgroups, gid_map, uid_map (detail 0, 1, 2)
  kDumpable,         // PR_SET_DUMPABLE 1 after the id change (caps.cc BecomeSandboxUser)
  kUserNamespaceLimit,  // user.max_user_namespaces = 1, inotify caps, through the new /proc (detail: which; nested_userns.cc)
};

const char* ChildStepName(ChildStep step);

struct ChildError {
  int step = 0;    // ChildStep
  int err = 0;     // errno
  int detail = 0;  // index of the mount op / landlock rule, or the RLIMIT_* resource
};

enum class ChildMountKind : int {
  kBind,         // a detached clone of the source's tree (open_tree), attr_set on it, then attached
  kTmpfs,        // tmpfs with `data` options
  kWorkDir,      // the staged work dir (enforcer/workdir) at target
  kProc,
  kDevice,       // bind a host device node onto an empty file
  kSymlink,      // symlink(source, target)
  kMaskFile,     // bind /dev/null (inside the new root) over a file, read-only
  kMaskDir,      // empty read-only tmpfs over a directory
  kReadOnlyInPlace,  // the target's own tree (a /proc entry) bound onto itself with attr_set
};

struct ChildMountOp {
  ChildMountKind kind = ChildMountKind::kBind;
  const char* source = nullptr;  // host path (binds, devices), link text (symlink)
  const char* target = nullptr;  // absolute path under the new root mount point
  const char* data = nullptr;    // tmpfs options
  bool target_is_dir = true;     // create a directory (else an empty file) as mount point
  uint64_t attr_set = 0;         // MOUNT_ATTR_* for kBind / kDevice
  unsigned long flags = 0;       // mount(2) flags for tmpfs/proc
  // Length of the longest ancestor of the target (as seen inside the
  // sandbox) that an earlier op already made or mounted: the child's
  // mkdir -p starts below it. 0: every ancestor from the new root.
  size_t existing_parent_len = 0;
  // The mount point itself exists (a /proc entry being masked, or a path
  // inside a bound host directory): no mkdir or open for it.
  bool mount_point_exists = false;
  // The target lies inside a bound host directory, which others on the host
  // may change while the child runs: it is opened beneath the new root with
  // no symlink followed, and mounted on through that fd (mounts.cc).
  bool target_in_host_tree = false;
  // kBind: the source as the parent stat()ed it. The child binds only that
  // directory or file (mounts.cc OpenBindSource).
  dev_t source_dev = 0;
  ino_t source_ino = 0;
  // The target lies in the work dir (a bind nested in it, e.g. `run`'s
  // read-only cwd at /work/main/docs): the directories and the empty file
  // the child makes for it there are given to the sandbox's user (these
  // ids, inside), not left to the id the child builds the tree as (host
  // root, as root). A sandbox may move one out from under its mount, and
  // what it leaves in the work dir is committed to the work dir's owner
  // only when it is the sandbox's. -1: not in the work dir.
  int64_t owner_uid = -1;
  int64_t owner_gid = -1;
};

struct ChildLandlockRule {
  const char* path = nullptr;    // inside the sandbox (after pivot_root)
  uint64_t access = 0;           // LANDLOCK_ACCESS_FS_* for this ABI
  bool optional = false;
};

// Shared (MAP_SHARED) page for handing the seccomp listener fd to the parent
// without any syscall after the filter is loaded (see child_main.cc).
struct ListenerHandoff {
  std::atomic<int> listener_fd{-1};  // set by the child after seccomp()
  std::atomic<int> taken{0};         // set by the parent after pidfd_getfd()
  std::atomic<int> abandon{0};       // parent gave up: the child must _exit
  // The child's own getrusage ru_maxrss (KiB) just before seccomp and
  // execve: what the kernel keeps in the child's maxrss from its life before
  // exec (exec_mmap saves the old address space's high-water mark), which
  // is cocoon's own memory (memory_sharing_clone.h). wait4's ru_maxrss for
  // the sandbox includes it, so a figure not above it says nothing about
  // the command (finish.cc). 0: not reached.
  std::atomic<long> pre_exec_maxrss_kib{0};
};

struct ChildSpec {
  int work_sock = -1;  // socketpair end for MountWorkDirInChild (-1: no staging)
  pid_t parent_pid = 0;

  // v1 cgroups: the directories the parent creates the sandbox's groups in
  // after clone (Cgroup::V1ParentDirs), NULL-terminated. The child opens
  // them (O_PATH) as soon as it has its spec, while it still sees the host's
  // mount tree; once its own tree is built, it waits for the parent's second
  // sync byte ('C': the groups exist and hold their limits) and moves itself
  // by writing "0" into openat(dir, cgroup_tasks_path) for each, before it
  // unshares its cgroup namespace. See Cgroup::V1ParentDirs for why not the
  // parent.
  char* const* cgroup_parent_dirs = nullptr;
  size_t cgroup_parent_count = 0;
  const char* cgroup_tasks_path = nullptr;  // "<group name>/tasks"
  bool unshare_cgroup = true;
  const char* hostname = nullptr;
  size_t hostname_len = 0;
  bool loopback = false;
  // Network allow-lists: socketpair end over which the child sends its
  // in-namespace 127.0.0.1 TCP listener to the connect broker (-1: none).
  int broker_sock = -1;

  const char* new_root = nullptr;        // host dir the new root tmpfs is mounted on
  const char* new_root_data = nullptr;   // "mode=0755,size=..."
  const ChildMountOp* mounts = nullptr;
  size_t mount_count = 0;
  const WorkMountChildSpec* work_spec = nullptr;  // for kWorkDir

  const char* cwd = nullptr;  // inside
  const RlimitSet* rlimits = nullptr;

  uint32_t uid = 65534;
  uint32_t gid = 65534;
  // The nested user namespace's maps, "<uid> <uid> 1\n" and the same for
  // the gid: the sandbox keeps its ids and nothing else is mapped.
  const char* nested_uid_map = nullptr;
  size_t nested_uid_map_len = 0;
  const char* nested_gid_map = nullptr;
  size_t nested_gid_map_len = 0;
  bool drop_supplementary_groups = false;  // as root (setgroups is allowed)

  int landlock_abi = 0;                   // 0: skip
  uint64_t landlock_handled_fs = 0;
  uint64_t landlock_scoped = 0;
  uint32_t landlock_restrict_flags = 0;
  const ChildLandlockRule* landlock_rules = nullptr;
  size_t landlock_rule_count = 0;

  const sock_fprog* seccomp = nullptr;    // required: the child refuses to exec without it
  bool seccomp_listener = false;
  ListenerHandoff* handoff = nullptr;

  const char* const* exec_candidates = nullptr;  // full paths to try, in order
  size_t exec_candidate_count = 0;
  char* const* argv = nullptr;
  char* const* envp = nullptr;
};

// What the child needs before its spec exists, set by the parent before
// clone. It lives in the StartedChild, which outlives the child's use of it
// (the child reads it in the parent's memory, memory_sharing_clone.h).
struct ChildBootstrap {
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  int sync_fd = -1;    // read end; the parent writes 'G' once the spec and maps are written ('C': v1 groups made)
  int error_fd = -1;   // write end, O_CLOEXEC
  // CLONE_NEW* flags the child passes to unshare(2) first thing: every
  // namespace but the user and pid ones, which clone3 makes.
  int unshare_flags = 0;
  // The child's socketpair ends (-1: none), also named in the spec; kept
  // open when the child closes everything else it inherited.
  int work_sock = -1;
  int broker_sock = -1;
  // In the shared arena mapped before clone; written by the parent after
  // clone and read only once 'G' has arrived.
  const ChildSpec* spec = nullptr;
};

// The child's entry point: creates its namespaces, waits for the spec,
// applies it and execs. Never returns.
[[noreturn]] void RunChild(const ChildBootstrap& boot) noexcept;

}  // namespace cocoon::enforcer
