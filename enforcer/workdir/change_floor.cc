#include "enforcer/workdir/change_floor.h"

#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <optional>
#include <string>

namespace cocoon::enforcer {
namespace {

bool Before(const struct timespec& a, const struct timespec& b) {
  return a.tv_sec < b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec < b.tv_nsec);
}

// The filesystem's stamp of a new inode in `dir_fd`, or nullopt.
std::optional<struct timespec> ProbeStamp(int dir_fd) {
  // O_TMPFILE: an inode with no name, freed on close (open(2)).
  int fd = openat(dir_fd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
  std::string name;
  if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
    // No O_TMPFILE here (older NFS, vfat): a named file, unlinked at once.
    unsigned char random_bytes[8] = {};
    if (getrandom(random_bytes, sizeof random_bytes, 0) != sizeof random_bytes) return std::nullopt;
    char hex[2 * sizeof random_bytes + 1];
    for (size_t i = 0; i < sizeof random_bytes; ++i) snprintf(hex + 2 * i, 3, "%02x", random_bytes[i]);
    name = std::string(".cocoon-clock-") + hex;
    fd = openat(dir_fd, name.c_str(), O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return std::nullopt;
  }
  if (fd < 0) return std::nullopt;
  struct stat st {};
  const bool stamped = fstat(fd, &st) == 0;
  if (!name.empty()) (void)unlinkat(dir_fd, name.c_str(), 0);
  close(fd);
  if (!stamped) return std::nullopt;
  return st.st_ctim;
}

}  // namespace

struct timespec RunChangeFloor(int dir_fd) {
  struct timespec floor {};
  struct timespec tick {};
  clock_gettime(CLOCK_REALTIME_COARSE, &floor);
  if (clock_getres(CLOCK_REALTIME_COARSE, &tick) != 0) tick = {0, 10'000'000};  // 10 ms: longer than any HZ's tick
  floor.tv_sec -= tick.tv_sec;
  floor.tv_nsec -= tick.tv_nsec;
  while (floor.tv_nsec < 0) {
    floor.tv_nsec += 1'000'000'000;
    --floor.tv_sec;
  }
  std::optional<struct timespec> probe = ProbeStamp(dir_fd);
  if (!probe) {
    floor.tv_nsec = 0;  // whole seconds (see the header)
  } else if (Before(*probe, floor)) {
    floor = *probe;
  }
  return floor;
}

}  // namespace cocoon::enforcer
