// The checked, OS-neutral intermediate representation of one resolved profile.
//
// The checker produces it (inheritance and includes already resolved); every
// back end and the enforcer consume it. Invariants, established by the checker
// and relied on downstream:
//  - every path is absolute and canonical (no "//", ".", "..", trailing "/");
//  - mounts are sorted by target and unique per target;
//  - syscall rules are sorted by (name, conditions) and de-duplicated, and the
//    syscall default action is explicit;
//  - sizes are bytes, times are milliseconds, percentages are whole percent;
//  - a Limit that is not `set` imposes nothing (the back ends still apply the
//    hard-coded safety limits such as RLIMIT_CORE=0).
// Once built it is treated as immutable: pass it by const reference.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace cocoon::ir {

// ---------------------------------------------------------------- network
enum class NetworkMode { kOff, kOn, kAllowList };

struct NetworkEndpoint {
  std::string host;  // DNS name, IPv4 or IPv6 literal (no brackets)
  uint16_t port = 0;
  bool operator==(const NetworkEndpoint&) const = default;
};

struct Network {
  NetworkMode mode = NetworkMode::kOff;
  std::vector<NetworkEndpoint> allow;  // only for kAllowList; sorted, unique
};

// ------------------------------------------------------------- filesystem
enum class RootKind {
  kHost,    // an empty tmpfs root into which host system dirs are bound read-only
  kRootfs,  // a bundle's own root directory (for example a busybox tree)
};

enum class MountKind {
  kReadOnly,  // bind, remounted ro,nosuid,nodev (recursively)
  kWritable,  // bind, read-write, nosuid,nodev
  kTmpfs,     // fresh tmpfs of size_bytes
};

struct Mount {
  MountKind kind = MountKind::kReadOnly;
  std::string source;  // host path (bind mounts); empty for tmpfs
  std::string target;  // path inside the sandbox
  uint64_t size_bytes = 0;  // tmpfs only
  bool optional = false;    // a missing bind source is skipped, not an error
  bool operator==(const Mount&) const = default;
};

enum class WorkMode {
  kStaged,  // sandbox writes land on a size-capped tmpfs/overlay; verified, then committed
  kDirect,  // host dir bind-mounted writable; quota by RLIMIT_FSIZE only
};

struct WorkDir {
  std::string path = "/work";  // where the work dir appears inside the sandbox
  uint64_t quota_bytes = 0;    // 0: no quota beyond the disk limit
  WorkMode mode = WorkMode::kStaged;
};

struct Copy {
  std::string source;       // host path
  std::string destination;  // relative path under the work dir
  bool operator==(const Copy&) const = default;
};

enum class DeviceAccess { kDenied, kAllowed };

struct Devices {
  DeviceAccess gpu = DeviceAccess::kDenied;  // /dev/nvidia*, /dev/dri
  DeviceAccess tty = DeviceAccess::kDenied;  // /dev/tty
  DeviceAccess kvm = DeviceAccess::kDenied;  // /dev/kvm
};

struct Filesystem {
  RootKind root = RootKind::kHost;
  std::string rootfs;                  // host path, for kRootfs
  std::vector<Mount> mounts;           // sorted by target, unique per target
  WorkDir work;
  std::vector<Copy> copies;
  std::vector<std::string> hidden;     // masked inside the sandbox; sorted, unique
  Devices devices;
};

// ----------------------------------------------------------------- limits
enum class Enforcement {
  kRequired,    // if no mechanism can enforce it, the run is refused
  kBestEffort,  // applied where possible; the Outcome says when it was not
};

struct Limit {
  bool set = false;
  uint64_t value = 0;  // unit fixed by the field (see Limits)
  Enforcement enforcement = Enforcement::kRequired;
};

// What the enforcer applies when a policy leaves these unset (always some
// RLIMIT_NOFILE and RLIMIT_FSIZE: enforcer/limits/limit_plan.h); `explain`
// shows them.
inline constexpr uint64_t kDefaultOpenFiles = 1024;
inline constexpr uint64_t kDefaultFileSizeBytes = 16ull << 30;  // 16 GiB
// Signals one sandbox may have queued at once: RLIMIT_SIGPENDING, always set
// by the enforcer and the OCI config (queued signals are charged to the host
// user too).
inline constexpr uint64_t kSandboxPendingSignals = 1024;

struct Limits {
  Limit wall_time_ms;
  Limit cpu_time_ms;
  Limit memory_bytes;
  Limit processes;
  Limit open_files;
  Limit file_size_bytes;
  Limit disk_bytes;
  Limit output_bytes;  // per captured stream
  Limit cpu_percent;   // 100 = one full core
};

// --------------------------------------------------------------- syscalls
enum class ActionKind {
  kAllow,
  kErrno,        // fail with errno_value
  kKillProcess,  // SIGSYS to the whole process
  kLog,          // allow, and record an audit event
  kNotify,       // ask the supervisor (seccomp user notification)
  kTrap,         // SIGSYS delivered to the thread (for in-process handlers)
};

struct Action {
  ActionKind kind = ActionKind::kErrno;
  int errno_value = 0;  // kErrno only
  bool operator==(const Action&) const = default;
};

// How restrictive an action is (higher is more restrictive): where rules of
// one syscall overlap, the more restrictive action wins, kill > trap > errno
// > notify > log > allow (backends/seccomp/effective_rules.h). The checker
// uses the same order to find rules that can never apply.
inline int ActionRank(const Action& action) {
  switch (action.kind) {
    case ActionKind::kKillProcess: return 6;
    case ActionKind::kTrap: return 5;
    case ActionKind::kErrno: return 4;
    case ActionKind::kNotify: return 3;
    case ActionKind::kLog: return 2;
    case ActionKind::kAllow: return 1;
  }
  return 0;
}

// Whether `a` wins over `b` where two of a policy's rules for one syscall
// overlap: the higher rank, and between two errno actions the lower errno
// value. (The compiler's prologue outranks a policy rule of equal rank.)
inline bool ActionOutranks(const Action& a, const Action& b) {
  if (ActionRank(a) != ActionRank(b)) return ActionRank(a) > ActionRank(b);
  return a.kind == ActionKind::kErrno && a.errno_value < b.errno_value;
}

enum class CompareOp { kEq, kNe, kLt, kLe, kGt, kGe, kMaskedEq };

// One comparison on a syscall argument. For kMaskedEq: (arg & mask) == value.
// The checker lowers `!=` on a masked value, `in {...}` and `or` into several
// rules, so that each rule's conditions are a plain AND (as in libseccomp and
// OCI, where conditions of one entry are ANDed and entries are ORed).
struct ArgCondition {
  uint8_t arg = 0;  // 0..5
  CompareOp op = CompareOp::kEq;
  uint64_t value = 0;
  uint64_t mask = 0;  // kMaskedEq only
  bool operator==(const ArgCondition&) const = default;
};

struct SyscallRule {
  std::string name;                      // libseccomp name, checked against its table
  Action action;
  std::vector<ArgCondition> conditions;  // ANDed; empty = unconditional
  std::string group;                     // the @group it came from, "" if named singly
  bool operator==(const SyscallRule&) const = default;
};

enum class Arch { kX86_64, kX32, kX86, kAarch64 };

// A set of syscall rules a back end cannot express (e.g. two exceptions on
// one argument of an allowed syscall): the checker reports it at the policy
// statement that made `syscall`'s rules (frontend::FrontendOptions::
// syscall_rule_check, backends::SyscallRuleProblems).
struct SyscallRuleProblem {
  std::string syscall;
  std::string message;
  std::string help;  // empty: the checker's advice on overlapping conditions
};

struct Syscalls {
  // Applies to every syscall no rule matches. Explicit by construction: the
  // checker fills it from the policy or the built-in default (errno ENOSYS).
  Action default_action{ActionKind::kErrno, 38 /* ENOSYS */};
  bool default_explicitly_allows = false;  // the policy wrote `default allow` or `default log` itself
  std::vector<SyscallRule> rules;          // sorted, de-duplicated
  std::vector<Arch> architectures{Arch::kX86_64};  // extra ABIs only when the policy adds them
  // Prologue syscalls the policy deliberately reopened (setns, bpf, ...); the
  // back end warns for each.
  std::vector<std::string> reopened;
};

// ------------------------------------------------------------- environment
struct EnvVar {
  std::string name;
  std::string value;
  bool operator==(const EnvVar&) const = default;
};

struct Environment {
  bool clear = true;                 // start from an empty environment
  std::vector<EnvVar> set;           // sorted by name, unique
  std::vector<std::string> pass;     // names copied from the caller; sorted, unique
  std::vector<std::string> unset;    // names removed from an inherited environment (clear == false); sorted, unique
};

// --------------------------------------------------------------- runtimes
struct Runtime {
  std::string name;                       // "python", "node", ...
  std::vector<std::string> interpreters;  // candidate absolute paths, in search order
  std::vector<std::string> flags;         // hermetic flags, e.g. -I -S -B
  std::string code_flag;                  // e.g. "-c", "-e"; empty = script file only
  std::string file_extension;             // ".py"
  std::vector<std::string> version_args;  // e.g. {"--version"}
};

// ------------------------------------------------------------------ user
struct SandboxUser {
  // The ids the command runs as inside the user namespace. The default is an
  // unprivileged 65534 ("nobody"), so a compromised process holds no
  // capabilities even inside its own namespace; see docs/security.md.
  uint32_t uid = 65534;
  uint32_t gid = 65534;
};

// ------------------------------------------------------------ provenance
// Where a resolved setting came from, so `cocoon explain` can say
// "memory 128MiB (from profile strict, policies/strict.cocoon:14)".
struct Origin {
  std::string profile;
  std::string file;
  uint32_t line = 0;
};

// ------------------------------------------------------------------ policy
struct Policy {
  std::string name;                  // the resolved profile's name
  std::string description;
  std::vector<std::string> lineage;  // this profile first, then its ancestors
  std::string source_sha256;         // over the root file and all includes, in load order
  std::vector<std::string> source_files;
  // Each source file as the loader read it, in source_files' order (then,
  // for a file an include or import found through a symlink, that path
  // too): its canonical absolute path ("" for text not read from a file)
  // or the path found, and the
  // SHA-256 of the exact bytes parsed. The artifact cache records these and
  // never re-reads a file after the compile: an edit in between would pair
  // the plan of the old text with the digest of the new.
  struct SourceDigest {
    std::string path;
    std::string sha256;
  };
  std::vector<SourceDigest> source_digests;
  // Where a file put later would change what an include or import reads
  // (frontend::Program::shadowing_paths): they held no file when compiled.
  std::vector<std::string> shadowing_paths;

  Network network;
  Filesystem filesystem;
  Limits limits;
  Syscalls syscalls;
  Environment environment;
  std::string cwd = "/work";
  std::string hostname = "cocoon";
  SandboxUser user;
  std::optional<Runtime> runtime;

  // Key: a dotted setting name such as "limits.memory", "network",
  // "filesystem.mount:/usr", "syscalls.rule:ptrace".
  std::map<std::string, Origin> provenance;
};

}  // namespace cocoon::ir
