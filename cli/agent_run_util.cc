#include "cli/agent_run_util.h"
#include "compiler/common/display_text.h"
#include "compiler/common/hidden_characters.h"

#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <optional>
#include <set>

#include "enforcer/workdir/host_path.h"
#include "cli/host_overlap_guard.h"
#include "cli/host_probe_util.h"
#include "cli/runtime_util.h"
#include "compiler/backends/host_paths.h"
#include "compiler/common/digest.h"
#include "compiler/common/temp_name.h"
#include "cli/base_summary_util.h"
#include "cli/policy_compile.h"
#include "compiler/frontend/search_paths.h"
#include "enforcer/artifact_cache.h"
#include "enforcer/cache_pruning.h"
#include "enforcer/userns.h"

namespace cocoon::cli {
namespace {

namespace fs = std::filesystem;

struct Base {
  std::string import_path;  // absolute path of the file that defines the base profile
  std::string source;       // QuickPolicy::base_source
  // Compiled, or its cached summary (cli/base_summary_util.h): only the
  // fields BuildQuickPolicy reads are guaranteed to be filled.
  ir::Policy policy;
};

Result<Base> ResolveBase(const QuickPolicyOptions& options) {
  Base base;
  std::string profile = options.profile;
  if (!options.policy_file.empty()) {
    std::error_code ec;
    // run, pipeline and mcp write a policy that extends this one: they need
    // its source, which a `cocoon compile` output does not hold.
    if (fs::is_directory(options.policy_file, ec)) {
      return InvalidArgumentError("--policy " + options.policy_file +
                                  " is a directory: run, pipeline and mcp need a policy file (.cocoon), since " +
                                  "they extend it; to run a directory written by `cocoon compile`, use " +
                                  "`cocoon enforce " + options.policy_file + " -- CMD`");
    }
    base.import_path = fs::absolute(options.policy_file, ec).lexically_normal().string();
    base.source = "policy file";
  } else if (!options.runtime.empty()) {
    auto preset = RuntimePresetPath(options.runtime);
    if (!preset) {
      std::string names;
      for (const auto& n : RuntimePresetNames()) names += (names.empty() ? "" : ", ") + n;
      return InvalidArgumentError("unknown runtime '" + options.runtime + "'; presets: " + names);
    }
    base.import_path = fs::absolute(*preset).lexically_normal().string();
    base.source = "runtime preset";
    profile = options.runtime;
  } else {
    COCOON_ASSIGN_OR_RETURN(base.import_path, FindStrict());
    base.source = "strict";
    profile = "strict";
  }
  if (auto cached = LookupBaseSummary(base.import_path, profile)) {
    base.policy = std::move(*cached);
    return base;
  }
  COCOON_ASSIGN_OR_RETURN(base.policy, CheckPolicyFile(base.import_path, profile));
  StoreBaseSummary(base.import_path, profile, base.policy);
  return base;
}

std::string Bytes(uint64_t n) { return std::to_string(n) + "B"; }
std::string Millis(uint64_t n) { return std::to_string(n) + "ms"; }

// One limit flag against the base: tighten silently, open with an override
// (cocoon run) or clamp to the base (MCP). Returns the value to write, if any.
std::optional<uint64_t> ResolveLimit(const char* name, const char* flag, std::optional<uint64_t> requested,
                                     const ir::Limit& base, OpeningPolicy openings, QuickPolicy& out,
                                     std::set<std::string>& relaxes) {
  if (!requested) return std::nullopt;
  if (!base.set || *requested <= base.value) return requested;
  if (openings == OpeningPolicy::kClampToBase) {
    out.notes.push_back(std::string(name) + " " + std::to_string(*requested) + " clamped to the policy's " +
                        std::to_string(base.value));
    return base.value;
  }
  relaxes.insert("limits");
  out.overrides.push_back("limits." + std::string(name) + ": " + std::to_string(base.value) + " -> " +
                          std::to_string(*requested) + " (" + flag + ")");
  return requested;
}

// As root the sandbox's user is host uid/gid 65534 (enforcer/userns.h). For
// a host path bound into the sandbox at its own path to be usable there:
//  - the bind resolves the path on the host from inside the sandbox's user
//    namespace, as host uid/gid 0 whose capabilities there cover only inodes
//    whose uid and gid are both mapped (0 or 65534): every other directory
//    above it must be searchable by host uid 0 through its permission bits;
//  - inside, the path is reached through directories the sandbox's root
//    tmpfs makes (mode 0755), except below another bound directory (`bound`,
//    e.g. the read-only cwd holding the script): from there down, the host's
//    own directories must be searchable by the sandbox user;
//  - the path itself must be readable (a directory also searchable) by it.
// The sandbox user is "other" unless an inode belongs to uid or gid 65534.
// Returns why not, or "" when it may be -- or when only an ACL could tell
// (the kernel then decides), and for rootless runs, whose sandbox user is
// the caller.
std::string WhySandboxUserCannotRead(const std::string& canonical, const std::vector<std::string>& bound) {
  if (geteuid() != 0) return "";
  const uid_t uid = enforcer::kRootSandboxHostUid;
  const gid_t gid = enforcer::kRootSandboxHostGid;
  auto has_acl = [](const std::string& path) {
    return getxattr(path.c_str(), "system.posix_acl_access", nullptr, 0) > 0;
  };
  auto sandbox_bits = [&](const struct stat& st) -> mode_t {
    return st.st_uid == uid ? (st.st_mode >> 6) & 7 : st.st_gid == gid ? (st.st_mode >> 3) & 7 : st.st_mode & 7;
  };
  auto describe = [](const std::string& path, const struct stat& st) {
    char mode[8];
    snprintf(mode, sizeof mode, "%04o", st.st_mode & 07777);
    return path + " (mode " + mode + ", owner uid " + std::to_string(st.st_uid) + ")";
  };
  // The deepest other bound directory holding the path, if any.
  std::string enclosing;
  for (const std::string& dir : bound) {
    if (dir != canonical && canonical.size() > dir.size() && canonical.compare(0, dir.size(), dir) == 0 &&
        (dir == "/" || canonical[dir.size()] == '/') && dir.size() > enclosing.size()) {
      enclosing = dir;
    }
  }
  for (size_t slash = canonical.find('/', 1); slash != std::string::npos; slash = canonical.find('/', slash + 1)) {
    std::string dir = canonical.substr(0, slash);
    struct stat st {};
    if (stat(dir.c_str(), &st) != 0 || has_acl(dir)) continue;
    // Capabilities in a user namespace cover an inode only when both its
    // uid and its gid are mapped there (privileged_wrt_inode_uidgid); else
    // plain permission bits decide, for host uid 0 / gid 0.
    bool capable = (st.st_uid == 0 || st.st_uid == uid) && (st.st_gid == 0 || st.st_gid == gid);
    mode_t root_bits = st.st_uid == 0 ? (st.st_mode >> 6) & 7 : st.st_gid == 0 ? (st.st_mode >> 3) & 7 : st.st_mode & 7;
    bool host_side = capable || (root_bits & 1) != 0;
    if (!host_side) return "the sandbox cannot reach " + canonical + ": " + describe(dir, st) + " is not searchable by others";
    bool inside_bind = !enclosing.empty() && dir.size() >= enclosing.size();
    if (inside_bind && (sandbox_bits(st) & 1) == 0) {
      return "the sandbox user (uid 65534) cannot enter " + describe(dir, st);
    }
  }
  struct stat st {};
  if (stat(canonical.c_str(), &st) != 0) return "";
  mode_t need = S_ISDIR(st.st_mode) ? 5 : 4;  // r-x or r--
  if ((sandbox_bits(st) & need) == need || has_acl(canonical)) return "";
  return "the sandbox user (uid 65534) cannot read " + describe(canonical, st);
}

void RenderRuntime(const ir::Runtime& r, std::string& text) {
  text += "  runtime " + r.name + " {\n    interpreter";
  for (const auto& i : r.interpreters) text += " " + QuotePolicyString(i);
  text += "\n";
  if (!r.flags.empty()) {
    text += "    flags";
    for (const auto& f : r.flags) text += " " + QuotePolicyString(f);
    text += "\n";
  }
  if (!r.code_flag.empty()) text += "    code_flag " + QuotePolicyString(r.code_flag) + "\n";
  if (!r.file_extension.empty()) text += "    extension " + QuotePolicyString(r.file_extension) + "\n";
  if (!r.version_args.empty()) {
    text += "    version_args";
    for (const auto& v : r.version_args) text += " " + QuotePolicyString(v);
    text += "\n";
  }
  text += "  }\n";
}

bool BaseHasEnv(const ir::Policy& p, const std::string& name) {
  return std::any_of(p.environment.set.begin(), p.environment.set.end(),
                     [&](const ir::EnvVar& v) { return v.name == name; });
}

bool AtOrUnder(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

// The base's `hide` that a bind of host path `source` at `target` would
// undo or show under another name, or "": `target` is or is below a
// hidden path, or `source` is or is below the host path a hidden path
// shows (`hide /app/secrets` under `readonly /opt/app as /app`:
// /opt/app/secrets). The enforcer masks the first kind anyway (hide wins,
// docs/language.md); the second it cannot see. Either way the flag would
// not do what it says: refused, naming the hide.
std::string BaseHides(const ir::Policy& base, const std::string& source, const std::string& target) {
  for (const std::string& hidden : base.filesystem.hidden) {
    if (AtOrUnder(target, hidden) || AtOrUnder(source, backends::HostPathOf(base.filesystem, hidden))) return hidden;
  }
  return "";
}

bool BaseHasMount(const ir::Policy& p, const std::string& target) {
  return std::any_of(p.filesystem.mounts.begin(), p.filesystem.mounts.end(),
                     [&](const ir::Mount& m) { return m.target == target; });
}

// The base's writable mount (tmpfs, writable bind, work dir) that `path`
// lies under, or "": a read-only bind there inherits its Landlock write
// rights (see CheckReadOnlyUnderWritable in compiler/frontend/checker.cc).
std::string WritableMountAbove(const ir::Policy& p, const std::string& path) {
  for (const ir::Mount& m : p.filesystem.mounts) {
    if ((m.kind == ir::MountKind::kTmpfs || m.kind == ir::MountKind::kWritable) && path != m.target &&
        AtOrUnder(path, m.target)) {
      return m.target;
    }
  }
  const std::string& work = p.filesystem.work.path;
  return !work.empty() && path != work && AtOrUnder(path, work) ? work : "";
}

}  // namespace

Result<std::string> FindStrict() {
  for (const std::string& dir : frontend::DefaultSearchPaths()) {
    std::error_code ec;
    std::string path = (fs::path(dir) / "strict.cocoon").string();
    // Absolute: the generated policy imports it from the quick dir, where a
    // relative COCOON_POLICY_PATH entry (read from here) means nothing.
    if (fs::is_regular_file(path, ec)) return fs::absolute(path, ec).lexically_normal().string();
  }
  return NotFoundError("strict.cocoon not found in the policy search path; set COCOON_POLICY_PATH to a directory "
                       "holding it (the repository's or the install's policies/)");
}

std::string QuotePolicyString(const std::string& value) {
  std::string out = "\"";
  for (char c : value) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

bool IsForbiddenBind(const std::string& path) {
  // /tmp and /var/tmp themselves: shared with every user and holding their
  // agents' sockets (ssh-agent, tmux), which a read-only bind does not stop
  // a sandbox from connecting to (the kernel checks no mount flag on a unix
  // socket's connect). /run and what is below it: the host's service and
  // session sockets (docker.sock, /run/user/UID/bus, gpg-agent).
  static const char* kForbidden[] = {"/", "/proc", "/sys", "/dev", "/run", "/var/run", "/boot",
                                     "/root", "/etc", "/tmp", "/var/tmp"};
  for (const char* f : kForbidden) {
    if (path == f) return true;
  }
  for (const char* tree : {"/proc/", "/sys/", "/dev/", "/run/", "/var/run/"}) {
    if (path.rfind(tree, 0) == 0) return true;
  }
  return false;
}

namespace {

// Whether a policy string can hold `path`: the policy front end refuses
// invalid UTF-8, control characters and the characters a review cannot see
// (hidden_characters.h: bidi controls, zero-width ones), so a generated
// policy naming such a path would not check and the whole run would fail.
bool PolicyCanNamePath(const std::string& path) {
  for (size_t i = 0; i < path.size();) {
    const unsigned char c = static_cast<unsigned char>(path[i]);
    if (c < 0x20 || c == 0x7f) return false;
    uint32_t code_point = 0;
    const size_t length = DecodeUtf8(path, i, code_point);
    if (length == 0 || IsHiddenCharacter(code_point)) return false;
    i += length;
  }
  return true;
}

}  // namespace


Result<std::string> CanonicalHostPath(const std::string& path, const char* flag) {
  // As root, only root's symlinks are followed (enforcer/workdir/host_path.h).
  auto resolved = enforcer::ResolveHostPath(path);
  if (!resolved.ok()) {
    if (resolved.status().code() == ErrorCode::kNotFound) {
      return NotFoundError(std::string(flag) + " " + path + ": " + resolved.status().message());
    }
    return resolved.status().WithContext(flag);
  }
  std::string s = *resolved;
  if (IsForbiddenBind(s)) {
    return InvalidArgumentError(std::string(flag) + " " + s + ": refusing to expose this host path to a sandbox");
  }
  struct stat st{};
  if (stat(s.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
    // Read-only means nothing to a unix socket: the sandbox could talk to the service behind it.
    return InvalidArgumentError(std::string(flag) + " " + s + ": a unix socket; binding it would let the sandbox "
                                "talk to the host service behind it");
  }
  return s;
}

Result<uint64_t> ParseMegabytes(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 12) return InvalidArgumentError("'" + text + "' is not a size (e.g. 256 or 1GiB)");
  uint64_t n = std::stoull(text.substr(0, digits));
  std::string unit = text.substr(digits);
  uint64_t factor = 0;
  if (unit.empty() || unit == "M" || unit == "MB" || unit == "MiB" || unit == "m") factor = 1ull << 20;
  else if (unit == "G" || unit == "GB" || unit == "GiB" || unit == "g") factor = 1ull << 30;
  else if (unit == "K" || unit == "KB" || unit == "KiB" || unit == "k") factor = 1ull << 10;
  if (factor == 0 || n == 0) return InvalidArgumentError("'" + text + "' is not a positive size in MiB, or with K/M/G");
  if (n > (uint64_t{1} << 50) / factor) return InvalidArgumentError("'" + text + "' is larger than 1 PiB");  // no wrap
  return n * factor;
}

namespace {
constexpr uint64_t kLeastMemoryBytes = uint64_t{1} << 20;  // checker_limits.cc's floor for `memory`
}  // namespace

Result<uint64_t> ParseMemoryFlag(const std::string& text) {
  COCOON_ASSIGN_OR_RETURN(uint64_t bytes, ParseMegabytes(text));
  if (bytes < kLeastMemoryBytes) return InvalidArgumentError("--mem " + text + " is below the least one can set, 1 MiB");
  return bytes;
}

Result<QuickPolicy> BuildQuickPolicy(const QuickPolicyOptions& options) {
  // The same floor for callers that build options themselves (MCP's
  // memory_max), said about the request rather than the generated file.
  if (options.memory_bytes && *options.memory_bytes < kLeastMemoryBytes) {
    return InvalidArgumentError("a memory limit of " + std::to_string(*options.memory_bytes) +
                                " bytes is below the least one can set, 1 MiB");
  }
  COCOON_ASSIGN_OR_RETURN(Base base, ResolveBase(options));
  QuickPolicy out;
  out.base_profile = base.policy.name;
  out.base_source = base.source;
  out.runtime = base.policy.runtime;
  std::set<std::string> relaxes;
  std::string body;

  // A runtime on top of an explicit --policy: bring the preset's runtime
  // block, environment and extra read-only paths into the generated profile;
  // the limits stay the --policy file's.
  std::optional<ir::Policy> preset;
  if (!options.policy_file.empty() && !options.runtime.empty()) {
    Diagnostics diagnostics;
    preset = LoadRuntimePreset(options.runtime, diagnostics);
    if (!preset) return InvalidArgumentError(diagnostics.Render());
    out.runtime = preset->runtime;
    RenderRuntime(*preset->runtime, body);
  }

  const ir::Limits& limits = base.policy.limits;
  std::string limit_text;
  auto add_limit = [&](const char* key, std::optional<uint64_t> value, bool time) {
    if (value) limit_text += std::string("    ") + key + " " + (time ? Millis(*value) : Bytes(*value)) + "\n";
  };
  auto timeout = ResolveLimit("wall_time", "--timeout", options.timeout_ms, limits.wall_time_ms, options.openings, out, relaxes);
  add_limit("wall_time", timeout, true);
  // A longer wall time is useless if the CPU-time limit still kills at the
  // base's value, so cpu_time follows --timeout (never above it).
  if (timeout && (!limits.cpu_time_ms.set || limits.cpu_time_ms.value != *timeout)) {
    uint64_t cpu = limits.cpu_time_ms.set && *timeout > limits.cpu_time_ms.value &&
                           options.openings == OpeningPolicy::kClampToBase
                       ? limits.cpu_time_ms.value
                       : *timeout;
    // Raising it opens the base policy as much as the wall time does: it is
    // an override of its own in the audit launch event.
    if (limits.cpu_time_ms.set && cpu > limits.cpu_time_ms.value) {
      relaxes.insert("limits");
      out.overrides.push_back("limits.cpu_time: " + std::to_string(limits.cpu_time_ms.value) + " -> " +
                              std::to_string(cpu) + " (--timeout)");
    }
    add_limit("cpu_time", cpu, true);
  }
  std::optional<uint64_t> memory = options.memory_bytes;
  if (memory) {
    std::string note;
    memory = ClampMemoryRequest(*memory, &note);
    if (!note.empty()) out.notes.push_back(note);
  }
  const std::optional<uint64_t> memory_limit =
      ResolveLimit("memory", "--mem", memory, limits.memory_bytes, options.openings, out, relaxes);
  add_limit("memory", memory_limit, false);
  // A runtime's heap cap follows the memory limit in effect (runtime_util.h,
  // kMemoryMibPlaceholder): node's 96 MiB of strict's 128 MiB stayed 96 MiB
  // under --mem 1G, and the heap ran out long before the limit.
  if (out.runtime) {
    const uint64_t in_effect = memory_limit ? *memory_limit : limits.memory_bytes.set ? limits.memory_bytes.value : 0;
    COCOON_ASSIGN_OR_RETURN(out.runtime->flags, ScaleMemoryFlags(*out.runtime, in_effect));
  }
  // A staged work dir is a tmpfs: its files are RAM. The same ceiling as
  // --mem keeps a rootless run (no memory cgroup to charge them to) from
  // holding more of the host's memory than a memory limit could.
  std::optional<uint64_t> disk_request = options.disk_bytes;
  const ir::WorkDir& base_work = base.policy.filesystem.work;
  if (disk_request && base_work.mode != ir::WorkMode::kDirect) {
    std::string note;
    disk_request = ClampMemoryRequest(*disk_request, &note, "disk");
    if (!note.empty()) out.notes.push_back(note + "; the staged work dir is a tmpfs, in RAM");
    const uint64_t memory_cap = memory_limit ? *memory_limit : limits.memory_bytes.set ? limits.memory_bytes.value : 0;
    if (memory_cap != 0 && *disk_request > memory_cap) {
      out.notes.push_back("disk " + FormatBytes(*disk_request) + " is above the memory limit " + FormatBytes(memory_cap) +
                          ": the staged work dir is a tmpfs, and where a memory cgroup enforces the limit (as root, "
                          "or with a delegated cgroup v2) its files count toward it, so writing stops there; raise "
                          "--mem with --disk");
    }
  }
  auto disk = ResolveLimit("disk", "--disk", disk_request, limits.disk_bytes, options.openings, out, relaxes);
  add_limit("disk", disk, false);
  // What the work dir may hold is the smaller of `disk` and the work dir's
  // own quota, and one file stops at `file_size`: a larger --disk has to
  // carry both, as cpu_time follows --timeout, or the override is recorded
  // in the audit log while the base's 64 MiB still caps the run.
  std::string work_text;
  if (disk) {
    const ir::WorkDir& work = base.policy.filesystem.work;
    if (work.quota_bytes != 0 && work.quota_bytes < *disk) {
      relaxes.insert("filesystem");
      out.overrides.push_back("filesystem.work.quota: " + std::to_string(work.quota_bytes) + " -> " +
                              std::to_string(*disk) + " (--disk)");
      work_text = "    work " + QuotePolicyString(work.path) + " quota " + Bytes(*disk) +
                  (work.mode == ir::WorkMode::kDirect ? " direct" : "") + "\n";
    }
    if (limits.file_size_bytes.set && limits.file_size_bytes.value < *disk) {
      relaxes.insert("limits");
      out.overrides.push_back("limits.file_size: " + std::to_string(limits.file_size_bytes.value) + " -> " +
                              std::to_string(*disk) + " (--disk)");
      add_limit("file_size", disk, false);
    }
  }
  if (auto procs = ResolveLimit("processes", "--max-procs", options.processes, limits.processes, options.openings, out, relaxes)) {
    limit_text += "    processes " + std::to_string(*procs) + "\n";
  }

  if (options.network == NetworkFlag::kAllow && base.policy.network.mode != ir::NetworkMode::kOn) {
    if (options.openings == OpeningPolicy::kClampToBase) {
      out.notes.push_back("network stays as the policy says");
    } else {
      relaxes.insert("network");
      // The base's own mode: an allow-list base is widened, not turned on.
      const char* base_mode = base.policy.network.mode == ir::NetworkMode::kAllowList ? "allow-list" : "off";
      out.overrides.push_back(std::string("network: ") + base_mode + " -> on (--allow-network)");
      body += "  network on\n";
    }
  }

  std::string fs_text = work_text;
  std::vector<std::string> ro;
  for (const std::string& path : options.readonly_paths) {
    COCOON_ASSIGN_OR_RETURN(std::string canonical, CanonicalHostPath(path, "--ro"));
    ro.push_back(canonical);
  }
  out.cwd = base.policy.cwd;
  if (options.cwd_mount == CwdMount::kReadOnly && options.readonly_paths.empty()) {
    std::error_code ec;
    std::string cwd = fs::current_path(ec).string();
    if (ec) {
      // getcwd failed: the directory was removed (or renamed out of reach)
      // since this shell entered it, so there is nothing to show by name.
      out.notes.push_back("the current directory is not mounted: its path cannot be found (" + ec.message() +
                          "; it may have been removed since the shell entered it); cd into an existing directory");
    } else if (IsForbiddenBind(cwd)) {
      out.notes.push_back("the current directory " + cwd + " is not mounted (a system or shared path)");
    } else if (!PolicyCanNamePath(cwd)) {
      // Not echoed: the path is what cannot be shown safely.
      out.notes.push_back("the current directory is not mounted: its path holds a control character, an invisible "
                          "or bidirectional-control character, or invalid UTF-8, which a policy cannot name; run "
                          "from another directory, or use --work");
    } else if (HoldsCallersHome(cwd)) {
      // Only the implicit bind: `--ro ~` is the caller's explicit choice.
      out.notes.push_back("the current directory " + cwd + " is not mounted: it is (or holds) a home directory, "
                          "whose credentials (~/.ssh, ~/.gnupg, tokens) must not reach the sandbox; run from a "
                          "project directory, or share one with --ro DIR");
    } else {
      ro.push_back(cwd);
      if (!options.has_work_dir) out.cwd = cwd;
    }
  }
  if (!options.cwd_inside.empty()) out.cwd = options.cwd_inside;
  for (const std::string& path : ro) {
    if (std::string hidden = BaseHides(base.policy, path, path); !hidden.empty()) {
      if (!options.readonly_paths.empty()) {
        return PermissionDeniedError("--ro " + path + ": the base policy hides " + hidden +
                                     " (`hide`); a flag does not undo a policy's hide. Share another path, or use a "
                                     "policy that does not hide it");
      }
      out.notes.push_back("the current directory " + path + " is not mounted: the base policy hides " + hidden);
      continue;
    }
    if (BaseHasMount(base.policy, path)) {
      // The base's own mount there wins (a tmpfs /tmp stays a tmpfs): say so,
      // rather than leave the caller wondering why the host files are missing.
      out.notes.push_back((options.readonly_paths.empty() ? "the current directory " : "--ro ") + path +
                          ": the base policy already mounts this path; its mount is kept");
      continue;
    }
    out.readonly_dirs.push_back(path);
    fs_text += "    readonly " + QuotePolicyString(path) + "\n";
    out.overrides.push_back("filesystem.readonly: " + path + " (--ro" + (options.readonly_paths.empty() ? ", the current directory" : "") + ")");
    relaxes.insert("filesystem");
  }
  for (const std::string& path : out.readonly_dirs) {
    if (std::string why = WhySandboxUserCannotRead(path, out.readonly_dirs); !why.empty()) {
      out.notes.push_back(why + ": it is bound read-only but unreadable inside (chmod o+rX, or run rootless)");
    }
    if (std::string above = WritableMountAbove(base.policy, path); !above.empty()) {
      out.notes.push_back(path + " is bound read-only inside the sandbox's writable " + above +
                          ", whose write access reaches into it: its files cannot be changed, but its FIFOs can be "
                          "opened for writing (docs/security.md, Limitations); run from a directory outside " +
                          above + " if host processes read any there");
    }
  }
  for (const auto& [host, target] : options.readonly_binds) {
    if (std::string hidden = BaseHides(base.policy, host, target); !hidden.empty()) {
      return PermissionDeniedError(host + (target == host ? "" : " (as " + target + ")") + ": the base policy hides " +
                                   hidden + " (`hide`); a script or file the policy hides is not bound in. Move it "
                                   "elsewhere, or use a policy that does not hide it");
    }
    fs_text += "    readonly " + QuotePolicyString(host) + " as " + QuotePolicyString(target) + "\n";
    relaxes.insert("filesystem");
  }
  if (preset) {
    for (const ir::Mount& m : preset->filesystem.mounts) {
      if (m.kind != ir::MountKind::kReadOnly || BaseHasMount(base.policy, m.target)) continue;
      fs_text += "    readonly optional " + QuotePolicyString(m.source) + " as " + QuotePolicyString(m.target) + "\n";
      relaxes.insert("filesystem");
      // Beyond the base policy like --ro, and so recorded like it (the
      // runtime is the caller's choice: an MCP client's `language`).
      if (fs::exists(m.source)) {
        out.overrides.push_back("filesystem.readonly: " + m.source + " (runtime " + options.runtime + ")");
      }
    }
  }
  // One argv string holds at most MAX_ARG_STRLEN (32 pages, 128 KiB): larger
  // code goes in as a file, as for runtimes that only run files, where that
  // runs it the same way. Not everywhere: `php -r` code has no <?php tag (as
  // a file it would be printed, not run) and node resolves require() against
  // the file's dir instead of the cwd; python -I puts neither on sys.path.
  constexpr size_t kMaxInlineCodeBytes = 64 * 1024;
  static const std::set<std::string> kFileRunsInlineCodeAlike = {"python", "python-skill", "bash", "sh",
                                                                 "perl", "ruby", "lua"};
  const bool too_long_inline = options.code && options.code->size() > kMaxInlineCodeBytes;
  if (too_long_inline && out.runtime && !NeedsScriptFile(*out.runtime) &&
      kFileRunsInlineCodeAlike.count(out.runtime->name) == 0) {
    return InvalidArgumentError("the code is larger than 64 KiB, the most " + out.runtime->name +
                                " takes inline: pass it as a script file");
  }
  if (options.code && out.runtime && (NeedsScriptFile(*out.runtime) || too_long_inline)) {
    // Held until the run has ended, then removed (staged_code_file.h).
    COCOON_ASSIGN_OR_RETURN(out.staged_code, StagedCodeFile::Stage(*options.code, out.runtime->file_extension));
    out.code_file = "/cocoon/main" + out.runtime->file_extension;
    fs_text += "    readonly " + QuotePolicyString(out.staged_code->path()) + " as " + QuotePolicyString(out.code_file) + "\n";
    relaxes.insert("filesystem");
  }
  if (options.gpu == GpuFlag::kDeny) fs_text += "    devices { gpu off }\n";
  if (!fs_text.empty()) body += "  filesystem {\n" + fs_text + "  }\n";
  if (!limit_text.empty()) body += "  limits {\n" + limit_text + "  }\n";

  std::string env_text;
  if (preset) {
    for (const ir::EnvVar& v : preset->environment.set) {
      // A name --env gives is the caller's to set (once: a profile cannot
      // both set and pass one name).
      const bool given = std::any_of(options.env.begin(), options.env.end(),
                                     [&](const auto& flag) { return flag.first == v.name; });
      // What the preset sets itself (its throwaway HOME, its caches:
      // "dotfiles and caches stay out of the work dir") wins over the base,
      // or a base's HOME=/work would put them in the work dir, committed to
      // the host. What it inherits (strict's PATH, LANG) yields to the base.
      const auto origin = preset->provenance.find("environment.set:" + v.name);
      const bool presets_own = origin != preset->provenance.end() && origin->second.profile == preset->name;
      if (!given && (presets_own || !BaseHasEnv(base.policy, v.name))) {
        env_text += "    set " + v.name + " " + QuotePolicyString(v.value) + "\n";
      }
    }
  }
  for (const auto& [name, value] : options.env) {
    bool valid_name = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_') &&
                      std::all_of(name.begin(), name.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (!valid_name) return InvalidArgumentError("--env " + name + ": not a variable name");
    if (value.find_first_of("\n\r") != std::string::npos) return InvalidArgumentError("--env " + name + ": newlines are not allowed");
    // Passed by name, the value beside the text: values are often tokens,
    // and the generated policy is a file in the artifact cache, its hash is
    // the cache key, and the audit log (shipped to a SIEM) records overrides.
    env_text += "    pass " + name + "\n";
    out.passed_values[name] = value;
    out.overrides.push_back("environment." + name + ": set (--env)");
  }
  if (!env_text.empty()) {
    body += "  environment {\n" + env_text + "  }\n";
    relaxes.insert("environment");
  }
  if (out.cwd != base.policy.cwd) body += "  cwd " + QuotePolicyString(out.cwd) + "\n";

  std::string header = "# Generated by cocoon from the command-line flags (see `cocoon run --explain`).\n"
                       "import " + QuotePolicyString(base.import_path) + "\n\n"
                       "profile " + out.profile + " extends " + out.base_profile + " {\n"
                       "  description " + QuotePolicyString("cocoon run: " + out.base_profile + " + command-line flags") + "\n";
  if (!relaxes.empty()) {
    header += "  relaxes";
    for (const auto& r : relaxes) header += " " + r;
    header += "\n";
  }
  out.text = header + body + "}\n";
  return out;
}

Result<PreparedRun> PrepareRun(RunSpec spec) {
  std::string script;
  if (!spec.script_path.empty()) {
    COCOON_ASSIGN_OR_RETURN(script, CanonicalHostPath(spec.script_path, "script"));
    struct stat st{};
    if (stat(script.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
      // A directory would bind everything in it (python runs a dir's __main__.py).
      return InvalidArgumentError("script " + spec.script_path + ": not a regular file");
    }
    spec.policy.readonly_binds.emplace_back(script, script);
  }
  PreparedRun run;
  COCOON_ASSIGN_OR_RETURN(run.policy, BuildQuickPolicy(spec.policy));
  if (!script.empty()) run.policy.overrides.push_back("filesystem.readonly: " + script + " (the script)");
  const QuickPolicy& policy = run.policy;
  // Fail here, clearly, rather than with the interpreter's "Permission
  // denied" from inside the sandbox.
  if (!script.empty()) {
    if (std::string why = WhySandboxUserCannotRead(script, policy.readonly_dirs); !why.empty()) {
      return PermissionDeniedError("script " + spec.script_path + ": " + why +
                                   "; make it readable (chmod o+rX) or pass the code with -c or on stdin");
    }
  }
  if (spec.policy.code || !script.empty()) {
    if (!policy.runtime) return InvalidArgumentError("code needs a runtime: pass -r NAME (see `cocoon run --list-runtimes`)");
    auto interpreter = FindInterpreter(*policy.runtime);
    if (!interpreter) {
      std::string searched;
      for (const auto& c : policy.runtime->interpreters) searched += (searched.empty() ? "" : ", ") + c;
      return NotFoundError("runtime '" + policy.runtime->name + "' is not installed on this host (searched " + searched + ")");
    }
    if (!script.empty()) {
      run.argv = RuntimeArgv(*policy.runtime, *interpreter, CodeDelivery::kScriptFile, "", script);
      run.argv.insert(run.argv.end(), spec.script_args.begin(), spec.script_args.end());
    } else {
      CodeDelivery delivery = policy.code_file.empty() ? CodeDelivery::kInline : CodeDelivery::kScriptFile;
      run.argv = RuntimeArgv(*policy.runtime, *interpreter, delivery, *spec.policy.code, policy.code_file);
    }
  } else {
    if (spec.command.empty()) return InvalidArgumentError("nothing to run: give -r NAME with -c CODE or a script, or -- CMD...");
    run.argv = spec.command;
  }
  return run;
}

Result<ir::Policy> CompileQuickPolicy(const QuickPolicy& policy, std::string* warnings) {
  auto compiled = CheckPolicyText("<cocoon run flags>", policy.text, policy.profile, warnings);
  if (!compiled.ok() && compiled.status().code() == ErrorCode::kInvalidArgument) {
    return InvalidArgumentError(compiled.status().message() + "the policy generated from the flags does not check:\n" +
                                policy.text);
  }
  return compiled;
}

namespace {

// <artifact cache>/quick, opened (an O_PATH fd the caller closes). The files
// here become policies and are bound into sandboxes: the cache directory and
// every directory above it must pass the artifact cache's trust check
// (enforcer::OpenTrustedCacheDir: nobody else can rename or swap them), and
// `quick` itself is ours, 0700, opened without following a symlink. Where
// they do not, nothing is written and the run is refused, saying why:
// without the cache `cocoon run` has nowhere to keep its generated policy.
struct OpenedQuickDir {
  int fd = -1;
  std::string path;
};

Result<OpenedQuickDir> OpenQuickDir() {
  std::string cache = enforcer::ArtifactCache::DefaultDir();
  if (cache.empty()) return FailedPreconditionError("no cache directory: set COCOON_CACHE_DIR");
  Result<int> cache_fd = enforcer::OpenTrustedCacheDir(cache, enforcer::CacheDirCreation::kCreateMissing);
  if (!cache_fd.ok()) {
    return PermissionDeniedError("cannot keep the generated policy in the cache directory " + cache + ": " +
                                 cache_fd.status().message() +
                                 "; set COCOON_CACHE_DIR to a directory of your own (mode 0700)");
  }
  OpenedQuickDir quick;
  quick.path = cache + "/quick";
  if (mkdirat(*cache_fd, "quick", 0700) != 0 && errno != EEXIST) {
    int err = errno;
    close(*cache_fd);
    return ErrnoError("mkdir " + quick.path, err);
  }
  quick.fd = openat(*cache_fd, "quick", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int err = errno;
  close(*cache_fd);
  if (quick.fd < 0) return ErrnoError("open " + quick.path + (err == ELOOP || err == ENOTDIR ? " (a symlink?)" : ""), err);
  struct stat st{};
  if (fstat(quick.fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
    close(quick.fd);
    return PermissionDeniedError(quick.path + " must be a directory owned by uid " + std::to_string(geteuid()) +
                                 " with mode 0700");
  }
  return quick;
}

// WriteContentAddressed in the opened quick dir: every call by its fd, so
// the file lands in the directory that was checked.
Result<std::string> WriteContentAddressedAt(const OpenedQuickDir& quick, const std::string& bytes,
                                            const std::string& suffix) {
  const std::string hash = Sha256Hex(bytes);
  const std::string name = hash + suffix;
  const std::string path = quick.path + "/" + name;
  // What is at `name`, from one lstat: a file to reuse, nothing, or a file
  // that is not this content's (to replace).
  enum class Found { kReusable, kNothing, kOther };
  auto found = [&] {
    struct stat st{};
    if (fstatat(quick.fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return errno == ENOENT ? Found::kNothing : Found::kOther;
    }
    const bool reusable = S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
                          static_cast<size_t>(st.st_size) == bytes.size() && (st.st_mode & 0777) == 0644;
    return reusable ? Found::kReusable : Found::kOther;
  };
  if (found() == Found::kReusable) {
    // Fresh again: pruning spares files modified in the last minutes, and
    // this run is about to bind or compile this one.
    utimensat(quick.fd, name.c_str(), nullptr, AT_SYMLINK_NOFOLLOW);
    return path;
  }
  const std::string tmp = name + UniqueTempSuffix();
  // 0644: code and stdin files are bound into the sandbox, whose user (65534
  // inside its namespace) must read them. The 0700 directory keeps other host
  // users out.
  int fd = openat(quick.fd, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) return ErrnoError("create " + quick.path + "/" + tmp);
  bool ok = fchmod(fd, 0644) == 0 && write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
  int err = errno;
  close(fd);
  // link, not rename: a file another thread or process put there meanwhile
  // is the same bytes and may be in use (a staged code file is held by its
  // inode, staged_code_file.h), so it must not be replaced. One removed
  // again before it could be checked is linked anew; only a file that is
  // not reusable is replaced (as it is where the file system has no hard
  // links).
  for (int attempt = 0; ok && linkat(quick.fd, tmp.c_str(), quick.fd, name.c_str(), 0) != 0; ++attempt) {
    const Found there = errno == EEXIST ? found() : Found::kOther;
    if (there == Found::kReusable) break;
    if (there == Found::kNothing && attempt < 16) continue;
    ok = renameat(quick.fd, tmp.c_str(), quick.fd, name.c_str()) == 0;
    err = errno;
    break;
  }
  unlinkat(quick.fd, tmp.c_str(), 0);
  if (!ok) return ErrnoError("write " + path, err);
  // Every distinct -c snippet and flag set adds a file here: keep it bounded.
  if (enforcer::ShouldPruneAfterStore(hash)) {
    enforcer::PruneCacheDir(quick.path, "", enforcer::PruneLimits{.max_files = 1024});
  }
  return path;
}

}  // namespace

Result<std::string> QuickDir() {
  COCOON_ASSIGN_OR_RETURN(OpenedQuickDir quick, OpenQuickDir());
  close(quick.fd);
  return quick.path;
}

Result<std::string> WriteContentAddressed(const std::string& bytes, const std::string& suffix) {
  COCOON_ASSIGN_OR_RETURN(OpenedQuickDir quick, OpenQuickDir());
  Result<std::string> path = WriteContentAddressedAt(quick, bytes, suffix);
  close(quick.fd);
  return path;
}

Result<PolicyArtifacts> QuickPolicyArtifacts(const QuickPolicy& policy, LaunchRequest* launch) {
  COCOON_ASSIGN_OR_RETURN(std::string path, WriteContentAddressed(policy.text, ".cocoon"));
  // Compiled from the text in hand, never from the file read back: the file
  // is only its name (for the key, the diagnostics and relative imports).
  return LoadPolicyTextArtifacts(path, policy.text, policy.profile, launch);
}

std::string ResolvedHostPath(const std::string& path) {
  std::error_code error;
  fs::path absolute = fs::absolute(path, error);
  if (error) return path;
  fs::path resolved = fs::weakly_canonical(absolute, error);
  return error ? absolute.string() : resolved.string();
}

}  // namespace cocoon::cli
