#include "enforcer/cache_pruning.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <utility>
#include <vector>

namespace cocoon::enforcer {
namespace {

bool EndsWith(std::string_view name, std::string_view suffix) {
  return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
}

}  // namespace

size_t PruneCacheDir(const std::string& dir, std::string_view suffix, const PruneLimits& limits) {
  int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (dir_fd < 0) return 0;
  DIR* stream = fdopendir(dir_fd);
  if (stream == nullptr) {
    close(dir_fd);
    return 0;
  }
  const time_t cutoff = time(nullptr) - static_cast<time_t>(limits.min_age.count());
  std::vector<std::pair<time_t, std::string>> files;  // (mtime, name), prunable by age
  size_t total = 0;
  size_t removed = 0;
  while (struct dirent* entry = readdir(stream)) {
    std::string_view name = entry->d_name;
    if (name == "." || name == "..") continue;
    struct stat st {};
    if (fstatat(dir_fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    bool temporary = name.find(".tmp") != std::string_view::npos;
    if (temporary) {
      // Left by a store that died between create and rename.
      if (st.st_mtime < cutoff && unlinkat(dir_fd, entry->d_name, 0) == 0) ++removed;
      continue;
    }
    if (!EndsWith(name, suffix)) continue;
    ++total;
    if (st.st_mtime < cutoff) files.emplace_back(st.st_mtime, std::string(name));
  }
  if (total > limits.max_files) {
    size_t excess = total - limits.max_files * 3 / 4;
    std::sort(files.begin(), files.end());
    for (size_t i = 0; i < files.size() && excess > 0; ++i) {
      if (unlinkat(dir_fd, files[i].second.c_str(), 0) == 0) {
        ++removed;
        --excess;
      }
    }
  }
  closedir(stream);  // closes dir_fd
  return removed;
}

}  // namespace cocoon::enforcer
