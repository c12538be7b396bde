#include "enforcer/limits/cgroup_names.h"

#include <dirent.h>
#include <signal.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <ctime>

namespace cocoon::enforcer {
namespace {

constexpr std::string_view kPrefix = "cocoon-";

// Parses one decimal field of `name` at `pos`, followed by `end`.
template <typename Number>
bool ParseField(std::string_view name, size_t& pos, char end, Number& value) {
  const char* first = name.data() + pos;
  const char* last = name.data() + name.size();
  auto [ptr, ec] = std::from_chars(first, last, value);
  if (ec != std::errc() || ptr == first) return false;
  pos = static_cast<size_t>(ptr - name.data());
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
  // Not cached: a child forked after unshare(CLONE_NEWPID) would inherit a
  // cached value and judge pids of the wrong namespace. One stat, ~1 us.
  struct stat st {};
  return stat("/proc/self/ns/pid", &st) == 0 ? static_cast<uint64_t>(st.st_ino) : 0;
}

std::string SandboxCgroupName() {
  uint64_t nonce = 0;
  // GRND_NONBLOCK: never wait for the entropy pool at early boot; the clock
  // is enough there, since uniqueness, not secrecy, is what counts.
  if (getrandom(&nonce, sizeof nonce, GRND_NONBLOCK) != static_cast<ssize_t>(sizeof nonce)) {
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    nonce = static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
  }
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(nonce));
  return std::string(kPrefix) + std::to_string(OwnPidNamespace()) + "-" + std::to_string(getpid()) + "-" + hex;
}

SandboxCgroupOwner ParseSandboxCgroupName(std::string_view name) {
  SandboxCgroupOwner owner;
  if (name.substr(0, kPrefix.size()) != kPrefix) return owner;
  size_t pos = kPrefix.size();
  if (!ParseField(name, pos, '-', owner.pid_namespace) || !ParseField(name, pos, '-', owner.pid)) {
    return SandboxCgroupOwner{};
  }
  std::string_view nonce = name.substr(pos);
  owner.valid = owner.pid > 0 && nonce.size() == 16 &&
                nonce.find_first_not_of("0123456789abcdef") == std::string_view::npos;
  return owner;
}

std::vector<std::string> AllSandboxCgroupParents(const HostCapabilities& host) {
  std::vector<std::string> dirs;
  for (const CgroupHierarchy* h : {&host.v1_memory, &host.v1_pids, &host.v1_cpu, &host.v1_freezer, &host.v2}) {
    if (h->mounted) dirs.push_back(h->Dir());
  }
  return dirs;
}

std::vector<std::string> FindAbandonedCgroups(const std::vector<std::string>& parent_dirs) {
  std::vector<std::string> abandoned;
  const uint64_t own_namespace = OwnPidNamespace();
  if (own_namespace == 0) return abandoned;  // cannot tell whose a group is
  for (const std::string& parent : parent_dirs) {
    DIR* dir = opendir(parent.c_str());
    if (dir == nullptr) continue;
    while (dirent* entry = readdir(dir)) {
      if (entry->d_type != DT_DIR) continue;
      SandboxCgroupOwner owner = ParseSandboxCgroupName(entry->d_name);
      if (!owner.valid || owner.pid_namespace != own_namespace || !SupervisorIsGone(owner.pid)) continue;
      abandoned.push_back(parent + "/" + entry->d_name);
    }
    closedir(dir);
  }
  return abandoned;
}

size_t SweepAbandonedCgroups(const std::vector<std::string>& parent_dirs) {
  size_t removed = 0;
  for (const std::string& group : FindAbandonedCgroups(parent_dirs)) {
    // rmdir of a cgroup directory is refused (EBUSY) while it holds a
    // process or (ENOTEMPTY/EBUSY) a child group: a group in use stays.
    if (rmdir(group.c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace cocoon::enforcer
