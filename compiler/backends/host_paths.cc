#include "compiler/backends/host_paths.h"

namespace cocoon::backends {
namespace {

// `path` is `dir` or lies below it (both canonical, no trailing '/').
bool AtOrUnder(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path.compare(0, dir.size(), dir) == 0 && (path.size() == dir.size() || path[dir.size()] == '/');
}

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
