#include "cli/host_overlap_guard.h"

#include <climits>
#include <cstdlib>

#include "enforcer/artifact_cache.h"
#include "enforcer/workdir/host_path.h"

namespace cocoon::cli {
namespace {

// `path` with its symlinks resolved as far as it exists (a log not yet
// created still sits in a real directory).
std::string RealOrAsGiven(const std::string& path) {
  if (path.empty()) return path;
  char buffer[PATH_MAX];
  if (realpath(path.c_str(), buffer) != nullptr) return buffer;
  const auto slash = path.find_last_of('/');
  if (slash == std::string::npos || slash == 0) return path;
  if (realpath(path.substr(0, slash).c_str(), buffer) != nullptr) return std::string(buffer) + path.substr(slash);
  return path;
}

bool Within(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

// Work dirs no run should write back into: the root and the system trees.
bool IsSystemTree(const std::string& dir) {
  static const char* kSystem[] = {"/", "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
                                  "/boot", "/root", "/run", "/var", "/proc", "/sys", "/dev"};
  for (const char* system : kSystem) {
    if (dir == system) return true;
  }
  return Within(dir, "/proc") || Within(dir, "/sys") || Within(dir, "/dev");
}

}  // namespace

Status CheckHostPathsForLaunch(const HostPathsToGuard& paths) {
  const std::string cache = RealOrAsGiven(enforcer::ArtifactCache::DefaultDir());
  const std::string log = RealOrAsGiven(paths.audit_log == "-" ? "" : paths.audit_log);
  const std::string key = RealOrAsGiven(paths.audit_key);
  if (!paths.work_dir.empty()) {
    auto resolved = enforcer::ResolveHostPath(paths.work_dir);
    if (!resolved.ok()) return resolved.status().WithContext("work dir " + paths.work_dir);
    const std::string& work = *resolved;
    auto refuse = [&](const std::string& what) {
      return InvalidArgumentError("work dir " + work + ": " + what +
                                  "; the sandbox's writes are committed there. Give a project directory of its own");
    };
    if (IsSystemTree(work)) return refuse("a system directory");
    if (!cache.empty() && (Within(cache, work) || (Within(work, cache) && !paths.work_dir_is_ours))) {
      return refuse("overlaps Cocoon's artifact cache " + cache + " (compiled policies every launch trusts)");
    }
    if (!log.empty() && Within(log, work)) return refuse("holds the audit log " + log);
    if (!key.empty() && Within(key, work)) return refuse("holds the audit key " + key);
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
    if (!key.empty() && Within(key, source)) return refuse("is or holds the audit key " + key);
    if (!log.empty() && Within(log, source)) return refuse("is or holds the audit log " + log);
  }
  return Status::Ok();
}

}  // namespace cocoon::cli
