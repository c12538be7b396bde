#include "compiler/backends/host_paths.h"

#include <climits>
#include <cstdlib>

#include <algorithm>
#include <string_view>

namespace cocoon::backends {
namespace {

// `path` is `dir` or lies below it (both canonical, no trailing '/').
bool AtOrUnder(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path.compare(0, dir.size(), dir) == 0 && (path.size() == dir.size() || path[dir.size()] == '/');
}

// `path` below `dir` (which holds it) as a suffix: "" or "/rest".
std::string SuffixBelow(const std::string& path, const std::string& dir) {
  return dir == "/" ? (path == "/" ? "" : path) : path.substr(dir.size());
}

// `dir` + a suffix from SuffixBelow.
std::string Join(const std::string& dir, const std::string& suffix) {
  if (suffix.empty()) return dir;
  return dir == "/" ? suffix : dir + suffix;
}

// The top-level links of a merged-/usr host (/bin -> usr/bin, ...): a bind
// of /bin there shows /usr/bin.
constexpr std::string_view kMergedUsrLinks[] = {"/bin", "/lib", "/lib32", "/lib64", "/libx32", "/sbin"};

// The names of one host path: as written, through the merged-/usr links,
// and (kResolveOnThisHost) as this host resolves it.
std::vector<std::string> HostSpellings(const std::string& path, HostLookup lookup) {
  std::vector<std::string> out{path};
  for (std::string_view link : kMergedUsrLinks) {
    if (AtOrUnder(path, std::string(link))) out.push_back("/usr" + path);
  }
  if (lookup == HostLookup::kResolveOnThisHost) {
    char resolved[PATH_MAX];
    if (realpath(path.c_str(), resolved) != nullptr) out.emplace_back(resolved);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

struct Bind {
  std::string source;  // host path
  std::string target;  // sandbox path
};

}  // namespace

std::string HostPathOf(const ir::Filesystem& filesystem, const std::string& sandbox_path) {
  const ir::Mount* innermost = nullptr;
  for (const ir::Mount& mount : filesystem.mounts) {
    if (!AtOrUnder(sandbox_path, mount.target)) continue;
    if (innermost == nullptr || mount.target.size() > innermost->target.size()) innermost = &mount;
  }
  if (innermost == nullptr || innermost->kind == ir::MountKind::kTmpfs || innermost->source.empty() ||
      innermost->source == innermost->target) {
    return sandbox_path;
  }
  const std::string rest = sandbox_path.substr(innermost->target == "/" ? 0 : innermost->target.size());
  if (rest.empty()) return innermost->source;
  return innermost->source == "/" ? rest : innermost->source + rest;
}

}  // namespace cocoon::backends

namespace cocoon::backends {

std::vector<std::string> HiddenNames(const ir::Filesystem& filesystem, const std::string& hidden, HostLookup lookup) {
  std::vector<std::string> names{hidden};
  // The binds, plus a `root rootfs` tree as a bind of the rootfs at /.
  std::vector<Bind> binds;
  if (filesystem.root == ir::RootKind::kRootfs && !filesystem.rootfs.empty()) binds.push_back({filesystem.rootfs, "/"});
  for (const ir::Mount& mount : filesystem.mounts) {
    if (mount.kind != ir::MountKind::kTmpfs && !mount.source.empty()) binds.push_back({mount.source, mount.target});
  }
  // Every mount point, the work dir's included: below one, what shows is that mount's.
  std::vector<std::string> mount_points{filesystem.work.path};
  for (const ir::Mount& mount : filesystem.mounts) mount_points.push_back(mount.target);
  // The innermost mount point holding `path`; "/" for the rootfs tree, ""
  // for the sandbox's own tree.
  auto innermost_holding = [&](const std::string& path) {
    const std::string* best = nullptr;
    for (const std::string& point : mount_points) {
      if (!point.empty() && AtOrUnder(path, point) && (best == nullptr || point.size() > best->size())) best = &point;
    }
    if (best != nullptr) return *best;
    return std::string(filesystem.root == ir::RootKind::kRootfs ? "/" : "");
  };
  // Only a path a bind shows hides a host object; a tmpfs, the work dir,
  // or the sandbox's own empty tree holds nothing of the host's.
  const std::string holder = innermost_holding(hidden);
  const auto holding_bind = std::find_if(binds.begin(), binds.end(), [&](const Bind& b) { return b.target == holder; });
  if (holder.empty() || holding_bind == binds.end()) return names;
  const std::string host = Join(holding_bind->source, SuffixBelow(hidden, holding_bind->target));
  const std::vector<std::string> hidden_spellings = HostSpellings(host, lookup);
  for (const Bind& bind : binds) {
    for (const std::string& source : HostSpellings(bind.source, lookup)) {
      std::string alias;
      for (const std::string& spelling : hidden_spellings) {
        if (AtOrUnder(spelling, source)) {
          alias = Join(bind.target, SuffixBelow(spelling, source));
        } else if (AtOrUnder(source, spelling)) {
          alias = bind.target;  // the bind shows part of the hidden directory
        } else {
          continue;
        }
        // A deeper mount at or above the alias shows something else there.
        if (innermost_holding(alias) != bind.target) continue;
        names.push_back(alias);
      }
    }
  }
  // Below another name: that name's mask covers it.
  std::sort(names.begin() + 1, names.end());
  names.erase(std::unique(names.begin() + 1, names.end()), names.end());
  std::vector<std::string> out;
  for (const std::string& name : names) {
    const bool covered = std::any_of(names.begin(), names.end(), [&](const std::string& other) {
      return other != name && AtOrUnder(name, other);
    });
    if (!covered && std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  }
  return out;
}

}  // namespace cocoon::backends
