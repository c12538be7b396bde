#include "cli/host_overlap_guard.h"

#include <pwd.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string_view>

#include "compiler/frontend/search_paths.h"
#include "enforcer/artifact_cache.h"
#include "enforcer/workdir/host_path.h"
#include "enforcer/workdir/scratch_dir.h"

namespace cocoon::cli {
namespace {

// `path` absolute, with its symlinks resolved as far as it exists (a log not
// yet created still sits in a real directory; a relative one in the cwd).
std::string RealOrAsGiven(const std::string& path) {
  if (path.empty()) return path;
  std::string absolute = path;
  if (absolute.front() != '/') {
    char cwd[PATH_MAX];
    if (getcwd(cwd, sizeof(cwd)) == nullptr) return absolute;
    absolute = std::string(cwd) + "/" + absolute;
  }
  char buffer[PATH_MAX];
  if (realpath(absolute.c_str(), buffer) != nullptr) return buffer;
  const auto slash = absolute.find_last_of('/');
  if (slash == 0) return absolute;
  if (realpath(absolute.substr(0, slash).c_str(), buffer) != nullptr) return std::string(buffer) + absolute.substr(slash);
  return absolute;
}

bool Within(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

// A file or directory as the kernel knows it: two names of one inode (a
// hard link, a bind mount of a directory) have the same id.
struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  bool operator==(const FileId&) const = default;
};

std::optional<FileId> IdOf(const std::string& path) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0) return std::nullopt;
  return FileId{st.st_dev, st.st_ino};
}

// The ids of `real_path` (resolved) and of every directory above it: a tree
// holds the file iff its root is one of them, whatever name the tree goes by.
std::vector<FileId> IdChain(const std::string& real_path) {
  std::vector<FileId> chain;
  if (real_path.empty() || real_path.front() != '/') return chain;
  std::string at = real_path;
  for (;;) {
    if (auto id = IdOf(at)) chain.push_back(*id);
    if (at == "/") break;
    const size_t slash = at.find_last_of('/');
    at = slash == 0 ? "/" : at.substr(0, slash);
  }
  return chain;
}

// mountinfo's octal escapes (\040 for a space, proc(5)).
std::string UnescapeMountPath(std::string_view field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      const char a = field[i + 1], b = field[i + 2], c = field[i + 3];
      if (a >= '0' && a <= '3' && b >= '0' && b <= '7' && c >= '0' && c <= '7') {
        out += static_cast<char>((a - '0') * 64 + (b - '0') * 8 + (c - '0'));
        i += 3;
        continue;
      }
    }
    out += field[i];
  }
  return out;
}

// Every mount point of this mount namespace (field 5 of /proc/self/mountinfo).
std::vector<std::string> MountPoints() {
  std::vector<std::string> points;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    size_t begin = 0;
    for (int field = 0; field < 4 && begin != std::string::npos; ++field) {
      begin = line.find(' ', begin);
      if (begin != std::string::npos) ++begin;
    }
    if (begin == std::string::npos) continue;
    points.push_back(UnescapeMountPath(std::string_view(line).substr(begin, line.find(' ', begin) - begin)));
  }
  return points;
}

// Whether the tree at `dir` (resolved) shows the file whose IdChain is
// `file_chain` by another name than its path: `dir` is one of the file's
// directories (or the file itself) under another name (a bind mount of it,
// a hard link of the file), or a mount below `dir` is (binds are
// recursive). The path comparison (Within) cannot see either.
class AliasCheck {
 public:
  bool Shows(const std::string& dir, const std::vector<FileId>& file_chain) {
    if (file_chain.empty()) return false;
    auto in_chain = [&](const std::string& path) {
      auto id = IdOf(path);
      return id && std::find(file_chain.begin(), file_chain.end(), *id) != file_chain.end();
    };
    if (in_chain(dir)) return true;
    if (!mount_points_) mount_points_ = MountPoints();
    for (const std::string& point : *mount_points_) {
      if (point != dir && Within(point, dir) && in_chain(point)) return true;
    }
    return false;
  }

 private:
  std::optional<std::vector<std::string>> mount_points_;  // read once, when first needed
};


// `place` (resolved) against a protected `target` by inode, for what path
// comparison misses, a second name made by a bind mount: whether `place` is
// `target` or lies inside it (`inside` too), or shows it (is one of its
// directories, or holds a mount that is: AliasCheck).
bool OverlapsByAnotherName(const std::string& place, const std::string& target, bool inside, AliasCheck& alias) {
  auto target_id = IdOf(target);
  if (!target_id) return false;
  if (inside) {
    const std::vector<FileId> place_ids = IdChain(place);
    if (std::find(place_ids.begin(), place_ids.end(), *target_id) != place_ids.end()) return true;
  }
  return alias.Shows(place, IdChain(target));
}

// Where a file created at `path` would land: its symlinks followed as far
// as they exist (a dangling one too: creating through it makes its
// target), the missing rest taken as written. Never fails.
std::string WhereAFileWouldLand(const std::string& path) {
  std::deque<std::string> todo;
  for (const auto& part : std::filesystem::path(path)) {
    if (part != "/") todo.push_back(part.string());
  }
  std::filesystem::path resolved = "/";
  for (int links = 0; !todo.empty();) {
    const std::string part = todo.front();
    todo.pop_front();
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      resolved = resolved.parent_path();
      continue;
    }
    const std::filesystem::path candidate = resolved / part;
    struct stat st {};
    if (lstat(candidate.c_str(), &st) != 0) {
      // Missing: what comes after lands below it, as written.
      std::filesystem::path rest = candidate;
      for (const std::string& more : todo) rest /= more;
      return rest.lexically_normal().string();
    }
    if (!S_ISLNK(st.st_mode) || ++links > 40) {  // 40: the kernel's own bound on links followed
      resolved = candidate;
      continue;
    }
    char target[PATH_MAX];
    const ssize_t n = readlink(candidate.c_str(), target, sizeof(target) - 1);
    if (n <= 0) return candidate.string();
    const std::filesystem::path link(std::string(target, static_cast<size_t>(n)));
    std::deque<std::string> more;
    for (const auto& component : link) {
      if (component != "/") more.push_back(component.string());
    }
    todo.insert(todo.begin(), more.begin(), more.end());
    if (link.is_absolute()) resolved = "/";
  }
  return resolved.string();
}

// What of the policy `place` holds (a work dir, committed back after the
// run, or a writable bind's source, written in place), or "": the sandbox
// could rewrite a policy file there, or put a file where an include or
// import looks before the one it read (the importing file's own directory
// comes before the shipped policies/: docs/language.md), and the next run
// would enforce the sandbox's policy. The artifact cache would not save it:
// an edited source or a new file at such a path is a miss, and the
// recompile reads them.
std::string PolicyInside(const std::string& place, const HostPathsToGuard& paths) {
  for (const std::string& file : paths.policy_sources) {
    if (Within(file, place)) return "holds the policy file " + file;
  }
  for (const std::string& shadow : paths.policy_shadowing_paths) {
    const std::string normal = std::filesystem::path(shadow).lexically_normal().string();
    if (Within(normal, place) || Within(WhereAFileWouldLand(shadow), place)) {
      return "holds " + normal + ", where the policy's include or import looks before the file it reads (a file put "
             "there would be read instead)";
    }
  }
  return "";
}

// The policy search path ($COCOON_POLICY_PATH, else the shipped policies/)
// that `place` is, holds or lies in, with what it is, or "": every
// `import "strict"` and every `cocoon run -r NAME` (its runtimes/) reads
// there, so a sandbox that could write there would rewrite the presets of
// later runs that name none of this run's files, and those would record no
// override. The search path is what this process would read: the same
// environment decides for the next run of the same caller.
//
// What is protected is where the files really are: each search dir, its
// runtimes/ and the *.cocoon files of both, every symlink resolved (a
// runtimes/ that links elsewhere puts the presets there). `place` is
// compared by inode as well as by path, so that a bind mount of one of
// them, or a tree with one mounted below it, is seen under any name.
std::string SearchDirOverlap(const std::string& place, AliasCheck& alias) {
  const std::vector<FileId> place_ids = IdChain(place);
  auto place_is_below = [&](const std::string& real) {
    auto id = IdOf(real);
    return id && std::find(place_ids.begin(), place_ids.end(), *id) != place_ids.end();
  };
  for (const std::string& dir : frontend::DefaultSearchPaths()) {
    const std::string real = RealOrAsGiven(dir);
    std::vector<std::pair<std::string, std::string>> protected_paths = {{real, "the policy search directory " + real}};
    // `in` is a resolved directory that is protected itself: a file that is
    // no symlink lies in it and is covered by it, so only links are
    // resolved (the type comes with the directory listing; resolving every
    // preset cost ~100 readlink calls per launch with a work dir).
    auto add_cocoon_files = [&](const std::string& in) {
      std::error_code ec;
      for (const auto& entry : std::filesystem::directory_iterator(in, ec)) {
        if (entry.path().extension() != ".cocoon") continue;
        std::error_code type_ec;
        if (!entry.is_symlink(type_ec) || type_ec) continue;
        const std::string file = RealOrAsGiven(entry.path().string());
        if (!Within(file, real)) protected_paths.emplace_back(file, "the policy file " + file + " of the search directory " + real);
      }
    };
    add_cocoon_files(real);
    const std::string runtimes = RealOrAsGiven(real + "/runtimes");
    if (!Within(runtimes, real)) {
      protected_paths.emplace_back(runtimes, "the runtimes directory " + runtimes + " of the policy search directory " + real);
    }
    add_cocoon_files(runtimes);
    for (const auto& [path, what] : protected_paths) {
      if (Within(place, path)) return (place == path ? "is " : "is inside ") + what;
      if (Within(path, place)) return "holds " + what;
      if (place_is_below(path)) return "is, or is inside, " + what + " by another name (a bind mount)";
      if (alias.Shows(place, IdChain(path))) return "shows " + what + " by another name (a bind mount)";
    }
  }
  return "";
}

// Work dirs no run should write back into. /usr/local, /var and /root hold
// ordinary project dirs (/root/project, /var/lib/ci/workspace): only those
// dirs themselves are refused.
bool IsSystemTree(const std::string& dir) {
  // /var/tmp is shared and sticky like /tmp; /var/lib, /var/cache, /var/log
  // and /var/mail are every daemon's (a staged commit replaces the dir whole).
  for (const char* exact : {"/", "/var", "/root", "/home", "/tmp", "/var/tmp", "/var/lib", "/var/cache", "/var/log",
                            "/var/mail", "/var/spool", "/usr/local", "/srv", "/opt", "/mnt", "/media"}) {
    if (dir == exact) return true;
  }
  if (Within(dir, "/usr/local")) return false;
  for (const char* tree : {"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/run",
                           "/var/run", "/proc", "/sys", "/dev"}) {
    if (Within(dir, tree)) return true;
  }
  return false;
}

// Where Cocoon keeps its per-run state (enforcer/workdir/scratch_dir.h):
// the new root's mount point, the overlay's stage dirs, the work dir locks.
// A sandbox that could write there could break or subvert later runs. Every
// place a run of this user may choose, not only this process's choice: a
// later run without $XDG_RUNTIME_DIR would use /tmp/.cocoon-<uid>.
std::string StateDirOverlap(const std::string& path) {
  std::vector<std::string> places = {"/run/cocoon", "/tmp/.cocoon-" + std::to_string(geteuid())};
  if (const char* xdg = getenv("XDG_RUNTIME_DIR"); xdg != nullptr && xdg[0] == '/') {
    places.push_back(RealOrAsGiven(xdg) + "/cocoon");
  }
  if (auto chosen = enforcer::PrivateStateDir(); chosen.ok()) places.push_back(RealOrAsGiven(*chosen));
  for (const std::string& place : places) {
    if (Within(path, place) || Within(place, path)) return place;
  }
  // A fallback state dir of some process: /tmp/.cocoon-<uid>-XXXXXX.
  const std::string fallback = "/tmp/.cocoon-";
  if (path.compare(0, fallback.size(), fallback) == 0) return path.substr(0, path.find('/', fallback.size()));
  return "";
}

// The hidden host path (HostPathsToGuard::hidden_host_paths) that `path`
// is, is inside or holds, said so; or "".
std::string HiddenOverlap(const std::string& path, const std::vector<std::string>& hidden_host_paths,
                          AliasCheck& alias) {
  for (const std::string& given : hidden_host_paths) {
    const std::string hidden = RealOrAsGiven(given);
    if (Within(path, hidden)) return (path == hidden ? "is " : "is inside ") + hidden + ", which the policy hides";
    if (Within(hidden, path)) return "holds " + hidden + ", which the policy hides";
    if (OverlapsByAnotherName(path, hidden, true, alias)) {
      return "is, is inside or holds " + hidden + ", which the policy hides, by another name (a bind mount)";
    }
  }
  return "";
}

}  // namespace

std::vector<std::string> CallersHomes() {
  std::vector<std::string> named;
  if (const char* home = getenv("HOME"); home != nullptr && home[0] == '/') named.push_back(home);
  // Under sudo the caller is the user who ran it: their home counts too
  // (root's sandbox reads what is world-readable there).
  std::optional<uid_t> sudo_uid;
  if (const char* sudo = getenv("SUDO_UID"); sudo != nullptr && sudo[0] != '\0') {
    char* end = nullptr;
    unsigned long value = strtoul(sudo, &end, 10);
    if (*end == '\0') sudo_uid = static_cast<uid_t>(value);
  }
  // fgetpwent reads /etc/passwd itself: getpwuid goes through NSS modules,
  // which a static cocoon cannot load.
  if (FILE* passwd = fopen("/etc/passwd", "re")) {
    while (const struct passwd* entry = fgetpwent(passwd)) {
      const bool callers = entry->pw_uid == geteuid() || (sudo_uid && entry->pw_uid == *sudo_uid);
      if (callers && entry->pw_dir != nullptr && entry->pw_dir[0] == '/') named.push_back(entry->pw_dir);
    }
    fclose(passwd);
  }
  std::vector<std::string> homes;
  for (const std::string& home : named) {
    std::error_code ec;
    std::string canonical = std::filesystem::weakly_canonical(home, ec).string();
    while (canonical.size() > 1 && canonical.back() == '/') canonical.pop_back();
    if (ec || canonical.empty() || std::find(homes.begin(), homes.end(), canonical) != homes.end()) continue;
    homes.push_back(canonical);
  }
  return homes;
}

bool HoldsCallersHome(const std::string& dir) {
  std::vector<std::string> homes = CallersHomes();
  homes.push_back("/home");  // every user's, when the caller's is there
  for (const std::string& home : homes) {
    if (Within(home, dir)) return true;
  }
  return false;
}

// Keys, tokens and passwords by their usual names: ssh and gpg keys, the
// cloud CLIs' credentials, container registry and cluster logins, pass(1)'s
// store, and the files git, curl and psql read passwords from.
constexpr const char* kCredentialStores[] = {".ssh",  ".gnupg", ".aws", ".azure", ".kube", ".docker", ".password-store",
                                             ".config/gcloud", ".config/gh", ".netrc", ".git-credentials", ".pgpass"};

namespace {

// The caller's credential stores, each as named and where it points (a
// store that is a symlink, a dotfiles repo's gnupg/, is where it points: a
// work dir holding the target holds the keys). Worked out once per launch:
// CallersHomes reads the password database.
std::vector<std::string> CredentialStores(const std::vector<std::string>& homes) {
  std::vector<std::string> stores;
  for (const std::string& home : homes) {
    for (const char* store : kCredentialStores) {
      const std::string named = (home == "/" ? "" : home) + "/" + store;
      stores.push_back(named);
      if (std::string real = RealOrAsGiven(named); real != named) stores.push_back(real);
    }
  }
  return stores;
}

std::string CredentialsOverlap(const std::string& path, const std::vector<std::string>& stores) {
  for (const std::string& credentials : stores) {
    if (Within(path, credentials)) return (path == credentials ? "is " : "is inside ") + credentials;
    if (Within(credentials, path)) return "holds " + credentials;
  }
  return "";
}

// The two checks above by inode: a bind mount of the home (or of /home, or
// a credential store) is the same directory under a name the path
// comparison cannot see.
bool HoldsHomeByAnotherName(const std::string& dir, const std::vector<std::string>& homes, AliasCheck& alias) {
  for (const std::string& home : homes) {
    if (OverlapsByAnotherName(dir, home, false, alias)) return true;
  }
  return OverlapsByAnotherName(dir, "/home", false, alias);
}

std::string CredentialsByAnotherName(const std::string& path, const std::vector<std::string>& stores,
                                     AliasCheck& alias) {
  for (const std::string& credentials : stores) {
    if (OverlapsByAnotherName(path, credentials, true, alias)) return credentials + " by another name (a bind mount)";
  }
  return "";
}

}  // namespace

std::string CallersCredentialsOverlap(const std::string& path) {
  return CredentialsOverlap(path, CredentialStores(CallersHomes()));
}

Result<GuardedHostPaths> CheckHostPathsForLaunch(const HostPathsToGuard& paths) {
  // Resolved only when there is a work dir or a copy to hold it against: a
  // plain launch (the warm-cache hot path) pays no realpath for it.
  const bool writes_or_copies = !paths.work_dir.empty() || !paths.copies.empty() || !paths.writable_sources.empty();
  const std::string cache = writes_or_copies ? RealOrAsGiven(enforcer::ArtifactCache::DefaultDir()) : std::string();
  const std::string log = RealOrAsGiven(paths.audit_log == "-" ? "" : paths.audit_log);
  const std::string key = RealOrAsGiven(paths.audit_key);
  // A tree holds the log or key by its path, or by another name: a bind
  // mount of one of their directories, a hard link (which audit/keys.cc and
  // audit/sink.cc refuse for the key and the log, later, when they are opened).
  AliasCheck alias;
  // Read once for the work dir and every copy (the password database).
  const std::vector<std::string> homes = writes_or_copies ? CallersHomes() : std::vector<std::string>();
  const std::vector<std::string> stores = CredentialStores(homes);
  auto holds_home = [&](const std::string& dir) {
    if (Within("/home", dir)) return true;  // every user's, when the caller's is there
    for (const std::string& home : homes) {
      if (Within(home, dir)) return true;
    }
    return HoldsHomeByAnotherName(dir, homes, alias);
  };
  std::optional<std::vector<FileId>> log_ids, key_ids;  // stat'd when first needed
  auto holds_log = [&](const std::string& dir) {
    if (log.empty()) return false;
    if (!log_ids) log_ids = IdChain(log);
    return Within(log, dir) || alias.Shows(dir, *log_ids);
  };
  auto holds_key = [&](const std::string& dir) {
    if (key.empty()) return false;
    if (!key_ids) key_ids = IdChain(key);
    return Within(key, dir) || alias.Shows(dir, *key_ids);
  };
  GuardedHostPaths guarded;
  if (!paths.work_dir.empty()) {
    auto resolved = enforcer::ResolveHostPath(paths.work_dir);
    if (!resolved.ok()) return resolved.status().WithContext("work dir " + paths.work_dir);
    const std::string& work = *resolved;
    auto refuse = [&](const std::string& what) {
      return InvalidArgumentError("work dir " + work + ": " + what +
                                  "; the sandbox's writes are committed there. Give a project directory of its own");
    };
    if (IsSystemTree(work)) return refuse("a system directory");
    if (holds_home(work)) {
      return InvalidArgumentError("work dir " + work + ": is or holds your home directory, whose credentials "
                                  "(~/.ssh, tokens) the sandbox would read and whose dotfiles (~/.bashrc, "
                                  "~/.ssh/authorized_keys) it would rewrite; its writes are committed there. Give a "
                                  "project directory of its own");
    }
    if (std::string credentials = CredentialsOverlap(work, stores); !credentials.empty()) {
      return refuse(credentials + " (your credentials)");
    }
    if (std::string credentials = CredentialsByAnotherName(work, stores, alias); !credentials.empty()) {
      return refuse("is, is inside or holds " + credentials + " (your credentials)");
    }
    if (std::string state = StateDirOverlap(work); !state.empty()) {
      return refuse("overlaps Cocoon's state dir " + state + " (what later runs are built from)");
    }
    if (std::string hidden = HiddenOverlap(work, paths.hidden_host_paths, alias); !hidden.empty()) {
      return InvalidArgumentError("work dir " + work + ": " + hidden + " (`hide`); the sandbox would see it in its "
                                  "work dir, and a flag does not undo a policy's hide. Give a directory that holds "
                                  "nothing hidden");
    }
    if (!cache.empty() && (Within(cache, work) || (Within(work, cache) && !paths.work_dir_is_ours))) {
      return refuse("overlaps Cocoon's artifact cache " + cache + " (compiled policies every launch trusts)");
    }
    if (holds_log(work)) return refuse("holds the audit log " + log);
    if (holds_key(work)) return refuse("holds the audit key " + key);
    if (std::string search = SearchDirOverlap(work, alias); !search.empty()) {
      return InvalidArgumentError("work dir " + work + ": " + search + " (where `import` and `cocoon run -r` find "
                                  "policies); the sandbox's writes are committed there, and later runs would enforce "
                                  "what it left. Give a project directory of its own");
    }
    if (std::string policy = PolicyInside(work, paths); !policy.empty()) {
      return InvalidArgumentError("work dir " + work + ": " + policy +
                                  "; the sandbox's writes are committed there, and later runs would enforce what it "
                                  "left. Keep the policy and what it imports outside the work dir and writable mounts");
    }
    guarded.work_dir = work;
  }
  for (const std::string& copy : paths.copies) {
    auto resolved = enforcer::ResolveHostPath(copy);
    if (!resolved.ok()) return resolved.status().WithContext("--copy " + copy);
    const std::string& source = *resolved;
    auto refuse = [&](const std::string& what) {
      return InvalidArgumentError("--copy " + copy + ": " + what + "; it would be handed to the sandbox");
    };
    if (source == "/" || Within(source, "/proc") || Within(source, "/sys") || Within(source, "/dev")) {
      return refuse("a kernel or system tree");
    }
    if (!cache.empty() && (Within(source, cache) || Within(cache, source))) return refuse("overlaps Cocoon's artifact cache");
    if (holds_home(source)) {
      return refuse("is or holds your home directory, with its credentials (~/.ssh, tokens)");
    }
    if (std::string credentials = CredentialsOverlap(source, stores); !credentials.empty()) {
      return refuse(credentials + " (your credentials)");
    }
    if (std::string credentials = CredentialsByAnotherName(source, stores, alias); !credentials.empty()) {
      return refuse("is, is inside or holds " + credentials + " (your credentials)");
    }
    if (std::string state = StateDirOverlap(source); !state.empty()) {
      return refuse("overlaps Cocoon's state dir " + state + " (what later runs are built from)");
    }
    if (std::string hidden = HiddenOverlap(source, paths.hidden_host_paths, alias); !hidden.empty()) {
      return InvalidArgumentError("--copy " + copy + ": " + hidden + " (`hide`); a flag does not undo a policy's "
                                  "hide. Copy a path that holds nothing hidden");
    }
    if (holds_key(source)) return refuse("is or holds the audit key " + key);
    if (holds_log(source)) return refuse("is or holds the audit log " + log);
    guarded.copies.push_back(source);
  }
  // A bind (`--ro`, the current directory, a policy's readonly) that shows
  // the key lets the sandbox sign events; one that shows the log lets it read
  // every earlier run's. Rootless the sandbox user is the caller on the host
  // and reads its 0600 files; as root it is an unprivileged uid that only
  // "other" permission bits let in. A bind of the host's /proc is refused
  // by the enforcer wherever the launch comes from (enforcer/workdir/
  // host_path.h); with an audit trail it is refused here too, before the log
  // is opened, so that bad input leaves no record behind. Without a trail
  // that is the only check left, and the enforcer makes it on the path it
  // resolves for the mount anyway: a warm launch resolves each bind once.
  auto sandbox_may_read = [](const std::string& path) {
    struct stat st{};
    if (stat(path.c_str(), &st) != 0) return false;
    return geteuid() != 0 || (st.st_mode & S_IROTH) != 0;
  };
  const bool has_audit_trail = !key.empty() || !log.empty();
  for (size_t i = 0; has_audit_trail && i < paths.bound_sources.size(); ++i) {
    const std::string& bound = paths.bound_sources[i];
    const std::string source = RealOrAsGiven(bound);
    if (enforcer::ShowsHostProc(source)) {
      return InvalidArgumentError("the mount of " + bound + " would show the host's /proc to the sandbox, with every "
                                  "host process and its root directory; the sandbox has a /proc of its own");
    }
    if (holds_key(source) && sandbox_may_read(key)) {
      return InvalidArgumentError("the mount of " + bound + " would show the audit key " + key +
                                  " to the sandbox; keep the key outside every bound directory");
    }
    if (holds_log(source) && sandbox_may_read(log)) {
      return InvalidArgumentError("the mount of " + bound + " would show the audit log " + log +
                                  " to the sandbox; keep the log outside every bound directory");
    }
  }
  // A writable bind lets the sandbox change, rename or remove what is below
  // it, whatever the files' own modes (rootless, it is their owner): the
  // compiled policies every launch trusts, the audit record and its key, and
  // the kernel's interfaces (cgroup limits in /sys/fs/cgroup, device nodes).
  for (const std::string& bound : paths.writable_sources) {
    const std::string source = RealOrAsGiven(bound);
    auto refuse = [&](const std::string& what) {
      return InvalidArgumentError("the writable mount of " + bound + " " + what +
                                  "; bind a directory of the project's own writable, or use `work`/`tmpfs`");
    };
    // /dev/shm and /dev/mqueue are shared memory, not the kernel's interfaces.
    const bool ipc = Within(source, "/dev/shm") || Within(source, "/dev/mqueue");
    for (const char* kernel : {"/sys", "/dev", "/proc"}) {
      if (!ipc && (Within(source, kernel) || Within(kernel, source))) {
        return refuse("would let the sandbox write the kernel's interfaces (" + std::string(kernel) + ")");
      }
    }
    if (!cache.empty() && (Within(cache, source) || Within(source, cache))) {
      return refuse("overlaps Cocoon's artifact cache " + cache + " (compiled policies every launch trusts)");
    }
    if (holds_log(source)) return refuse("holds the audit log " + log);
    if (holds_key(source)) return refuse("holds the audit key " + key);
    if (std::string search = SearchDirOverlap(source, alias); !search.empty()) {
      return InvalidArgumentError("the writable mount of " + bound + " " + search +
                                  " (where `import` and `cocoon run -r` find policies); later runs would enforce what "
                                  "the sandbox left there. Bind a directory of the project's own writable, or use "
                                  "`work`/`tmpfs`");
    }
    if (std::string policy = PolicyInside(source, paths); !policy.empty()) {
      return InvalidArgumentError("the writable mount of " + bound + " " + policy +
                                  "; later runs would enforce what the sandbox left there. Keep the policy and what "
                                  "it imports outside the work dir and writable mounts");
    }
  }
  return guarded;
}

}  // namespace cocoon::cli
