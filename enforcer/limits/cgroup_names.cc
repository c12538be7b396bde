#include "enforcer/limits/cgroup_names.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

namespace cocoon::enforcer {
namespace {

constexpr std::string_view kPrefix = "cocoon-";

// Parses one decimal field of `name` at `pos`, followed by `end` (or the end
// of the name when `end` is 0).
template <typename Number>
bool ParseField(std::string_view name, size_t& pos, char end, Number& value) {
  const char* first = name.data() + pos;
  const char* last = name.data() + name.size();
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || ptr == first) return false;
  pos = static_cast<size_t>(ptr - name.data());
  if (end == 0) return pos == name.size();
  if (pos >= name.size() || name[pos] != end) return false;
  ++pos;
  return true;
}

bool SupervisorIsGone(pid_t pid) {
  // EPERM means the pid exists (someone else's): only ESRCH says it is gone.
  return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
}

}  // namespace

uint64_t OwnPidNamespace() {
  // Computed once: a process cannot change its own pid namespace
  // (setns(CLONE_NEWPID) only affects children).
  static const uint64_t inode = [] {
    struct stat st {};
    return stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
  }();
  return inode;
}

std::string SandboxCgroupName(uint64_t run) {
  return std::string(kPrefix) + std::to_string(OwnPidNamespace()) + "-" + std::to_string(getpid()) + "-" +
         std::to_string(run);
}

SandboxCgroupOwner ParseSandboxCgroupName(std::string_view name) {
  SandboxCgroupOwner owner;
  if (name.substr(0, kPrefix.size()) != kPrefix) return owner;
  size_t pos = kPrefix.size();
  uint64_t run = 0;
  if (!ParseField(name, pos, '-', owner.pid_namespace) || !ParseField(name, pos, '-', owner.pid) ||
      !ParseField(name, pos, 0, run)) {
    return SandboxCgroupOwner{};
  }
  owner.valid = owner.pid > 0 && run > 0;
  return owner;
}

bool ShouldSweepAbandonedCgroups(uint64_t run) {
  return (static_cast<uint64_t>(getpid()) + run) % 16 == 0;
}

size_t SweepAbandonedCgroups(const std::vector<std::string>& parent_dirs) {
  const uint64_t own_namespace = OwnPidNamespace();
  if (own_namespace == 0) return 0;  // cannot tell whose a group is
  size_t removed = 0;
  for (const std::string& parent : parent_dirs) {
    DIR* dir = opendir(parent.c_str());
    if (dir == nullptr) continue;
    const int parent_fd = dirfd(dir);
    while (dirent* entry = readdir(dir)) {
      if (entry->d_type != DT_DIR) continue;
      SandboxCgroupOwner owner = ParseSandboxCgroupName(entry->d_name);
      if (!owner.valid || owner.pid_namespace != own_namespace || !SupervisorIsGone(owner.pid)) continue;
      // rmdir of a cgroup directory is refused (EBUSY) while it holds a
      // process or (ENOTEMPTY/EBUSY) a child group: a group in use stays.
      if (unlinkat(parent_fd, entry->d_name, AT_REMOVEDIR) == 0) ++removed;
    }
    closedir(dir);
  }
  return removed;
}

}  // namespace cocoon::enforcer
