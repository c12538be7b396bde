#include "cli/log_json_destination.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <optional>
#include <string_view>

#include "compiler/common/json_fd_writer.h"
#include "compiler/common/temp_name.h"

namespace cocoon::cli {
namespace {

// The descriptor that /dev/stdout, /dev/stderr, /dev/stdin, /dev/fd/N or
// /proc/self/fd/N names, spelt any way that normalises to one of them
// (/dev//stdout, /dev/./stderr); nullopt for any other path.
std::optional<int> OwnDescriptorNamed(const std::string& path) {
  const std::string normal = std::filesystem::path(path).lexically_normal().string();
  if (normal == "/dev/stdin") return STDIN_FILENO;
  if (normal == "/dev/stdout") return STDOUT_FILENO;
  if (normal == "/dev/stderr") return STDERR_FILENO;
  for (std::string_view prefix : {std::string_view("/dev/fd/"), std::string_view("/proc/self/fd/")}) {
    if (std::string_view(normal).substr(0, prefix.size()) != prefix) continue;
    std::string_view digits = std::string_view(normal).substr(prefix.size());
    int fd = -1;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), fd);
    if (ec != std::errc() || end != digits.data() + digits.size() || fd < 0) return std::nullopt;
    return fd;
  }
  return std::nullopt;
}

Status CheckOwnDescriptor(const std::string& path, int fd, bool stdout_has_outcome) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0) return ErrnoError("--log-json " + path + ": descriptor " + std::to_string(fd) + " is not open");
  if ((flags & O_ACCMODE) == O_RDONLY) {
    return InvalidArgumentError("--log-json " + path + ": descriptor " + std::to_string(fd) +
                                " is open for reading only; give a file name");
  }
  if (fd == STDOUT_FILENO && stdout_has_outcome) {
    return InvalidArgumentError("--log-json " + path + ": stdout carries the Outcome already (--json, --stream); "
                                "give a file name");
  }
  return Status::Ok();
}

using Kind = LogJsonDestination::Kind;

struct Destination {
  Kind kind;
  std::string device_path;  // kDevice: the device or FIFO itself (a link's target)
  int own_fd = -1;          // kOwnDescriptor
};

// What a destination that is none of a file, a device or a FIFO is.
const char* Refused(mode_t mode) {
  return S_ISDIR(mode) ? "a directory" : S_ISBLK(mode) ? "a block device" : "a socket";
}

Status RefuseOtherUsers(const std::string& path, const struct stat& st, const char* what) {
  // Another user's FIFO or link (planted in /tmp under the name the caller
  // will use) would hand them the Outcome, captured output included.
  if (st.st_uid != geteuid() && st.st_uid != 0) {
    return PermissionDeniedError("--log-json " + path + " is a " + what + " of another user; give a file name of your own");
  }
  return Status::Ok();
}

// openat2 with RESOLVE_NO_SYMLINKS: no symlink anywhere on the way, so what
// was checked is what is opened (a link in the middle of a chain, another
// user's, could be re-pointed between the check and the open).
int OpenNoSymlinks(const std::string& path, int flags) {
  struct open_how how {};
  how.flags = static_cast<uint64_t>(flags);
  how.resolve = RESOLVE_NO_SYMLINKS;
  return static_cast<int>(syscall(SYS_openat2, AT_FDCWD, path.c_str(), &how, sizeof how));
}

Status MoreThanOneLink(const std::string& path, const std::string& target) {
  return FailedPreconditionError("--log-json " + path + " leads through more than one symlink (to " + target +
                                 "); give the file, device or FIFO itself");
}

// A symlink at `path` (root's or the caller's): the link itself is replaced,
// as a file, unless it leads straight to a device or a FIFO (/dev/stdin is
// handled before, as a descriptor): replacing those broke /dev as root. One
// link only: a target that is a link again, or has one on its way, is
// refused, since each link would need its owner checked.
Result<Destination> ClassifyLink(const std::string& path, const struct stat& link) {
  char text[PATH_MAX];
  const ssize_t length = readlink(path.c_str(), text, sizeof text - 1);
  if (length < 0) return ErrnoError("--log-json " + path);
  std::string target(text, static_cast<size_t>(length));
  if (target.empty() || target[0] != '/') {
    const size_t slash = path.rfind('/');
    target = (slash == std::string::npos ? std::string(".") : path.substr(0, slash == 0 ? 1 : slash)) + "/" + target;
  }
  const int fd = OpenNoSymlinks(target, O_PATH | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Destination{Kind::kReplaceFile, {}, -1};
    if (errno == ELOOP) return MoreThanOneLink(path, target);
    return ErrnoError("--log-json " + path + " (its target " + target + ")");
  }
  struct stat st {};
  const int stat_result = fstat(fd, &st);
  close(fd);
  if (stat_result != 0) return ErrnoError("--log-json " + path);
  // O_PATH | O_NOFOLLOW opens a last component that is a link as the link.
  if (S_ISLNK(st.st_mode)) return MoreThanOneLink(path, target);
  if (S_ISREG(st.st_mode)) return Destination{Kind::kReplaceFile, {}, -1};
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
    COCOON_RETURN_IF_ERROR(RefuseOtherUsers(path, link, "symlink"));
    COCOON_RETURN_IF_ERROR(RefuseOtherUsers(path, st, S_ISFIFO(st.st_mode) ? "FIFO" : "device"));
    return Destination{Kind::kDevice, target, -1};
  }
  return InvalidArgumentError("--log-json " + path + " leads to " + Refused(st.st_mode) + "; give a file name");
}

Result<Destination> Classify(const std::string& path) {
  if (auto fd = OwnDescriptorNamed(path)) return Destination{Kind::kOwnDescriptor, {}, *fd};
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Destination{Kind::kReplaceFile, {}, -1};
    return ErrnoError("--log-json " + path);
  }
  if (S_ISLNK(st.st_mode)) return ClassifyLink(path, st);
  if (S_ISREG(st.st_mode)) return Destination{Kind::kReplaceFile, {}, -1};
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
    COCOON_RETURN_IF_ERROR(RefuseOtherUsers(path, st, S_ISFIFO(st.st_mode) ? "FIFO" : "device"));
    return Destination{Kind::kDevice, path, -1};
  }
  return InvalidArgumentError("--log-json " + path + " is " + Refused(st.st_mode) +
                              "; give a file name (or a character device or FIFO, such as /dev/stderr)");
}

Status ReplaceFile(const std::string& path, const nlohmann::json& j) {
  const std::string temp = path + UniqueTempSuffix();
  int fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
  if (fd < 0) return ErrnoError("cannot write " + path + " (creating " + temp + ")");
  bool written = WriteJsonLine(fd, j, 2);
  int write_errno = errno;
  close(fd);
  if (!written) {
    unlink(temp.c_str());
    return ErrnoError("cannot write " + temp, write_errno);
  }
  if (rename(temp.c_str(), path.c_str()) != 0) {
    int rename_errno = errno;
    unlink(temp.c_str());
    return ErrnoError("cannot replace " + path, rename_errno);
  }
  return Status::Ok();
}

// O_NONBLOCK: a FIFO nobody reads fails the open with ENXIO instead of
// blocking cocoon, and the write waits for room only until its deadline.
// No symlink on the way (OpenNoSymlinks), and the fstat: what was a device
// or FIFO when classified must still be one. Not close-on-exec: when the
// launcher hands the run to cocoon-full (a cache miss, docs/cli.md) this
// writer must outlive the exec, or the FIFO's reader sees its end and is
// gone before cocoon-full opens the FIFO again.
Result<int> OpenDevice(const std::string& path, const std::string& device) {
  int fd = OpenNoSymlinks(device, O_WRONLY | O_NOCTTY | O_NONBLOCK);
  if (fd < 0) {
    if (errno == ENXIO) return ErrnoError("--log-json " + path + ": nobody reads that FIFO; start its reader first");
    if (errno == ELOOP) {
      return FailedPreconditionError("--log-json " + path + " goes through a symlink (" + device +
                                     "); give the device or FIFO's own path");
    }
    return ErrnoError("--log-json " + path);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
    close(fd);
    return FailedPreconditionError("--log-json " + path + " changed while cocoon was opening it");
  }
  return fd;
}

// With SIGPIPE ignored for the write: a reader that went away is an error
// to report (EPIPE), not the end of cocoon before its exit status.
bool WriteIgnoringSigpipe(int fd, const nlohmann::json& j, int timeout_ms) {
  struct sigaction ignore {}, saved {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(SIGPIPE, &ignore, &saved);
  const bool written = WriteJsonLine(fd, j, 2, timeout_ms);
  const int write_errno = errno;
  sigaction(SIGPIPE, &saved, nullptr);
  errno = write_errno;
  return written;
}

}  // namespace

Result<std::shared_ptr<const LogJsonDestination>> LogJsonDestination::Open(const std::string& path,
                                                                           bool stdout_has_outcome) {
  COCOON_ASSIGN_OR_RETURN(Destination destination, Classify(path));
  std::shared_ptr<LogJsonDestination> opened(new LogJsonDestination(path, destination.kind));
  switch (destination.kind) {
    case Kind::kOwnDescriptor:
      COCOON_RETURN_IF_ERROR(CheckOwnDescriptor(path, destination.own_fd, stdout_has_outcome));
      opened->own_fd_ = destination.own_fd;
      return std::shared_ptr<const LogJsonDestination>(std::move(opened));
    case Kind::kDevice: {
      COCOON_ASSIGN_OR_RETURN(int fd, OpenDevice(path, destination.device_path));
      opened->device_.Reset(fd);
      return std::shared_ptr<const LogJsonDestination>(std::move(opened));
    }
    case Kind::kReplaceFile: break;
  }
  // The directory must take the temporary the Outcome goes through.
  const std::string probe = path + UniqueTempSuffix();
  int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError("--log-json " + path + ": cannot create a file in its directory");
  close(fd);
  unlink(probe.c_str());
  return std::shared_ptr<const LogJsonDestination>(std::move(opened));
}

Status LogJsonDestination::Write(const nlohmann::json& j) const {
  switch (kind_) {
    case Kind::kReplaceFile: return ReplaceFile(path_, j);
    case Kind::kDevice:
      if (!WriteIgnoringSigpipe(device_.get(), j, kDeviceWriteTimeoutMs)) {
        if (errno == ETIMEDOUT) {
          return FailedPreconditionError("cannot write " + path_ + ": its reader took nothing for " +
                                         std::to_string(kDeviceWriteTimeoutMs / 1000) + " s; the Outcome is not there");
        }
        return ErrnoError("cannot write " + path_);
      }
      return Status::Ok();
    case Kind::kOwnDescriptor:
      if (!WriteIgnoringSigpipe(own_fd_, j, -1)) return ErrnoError("cannot write " + path_);
      return Status::Ok();
  }
  return InternalError("unreachable");
}

Status WriteLogJsonTo(const std::string& path, bool stdout_has_outcome, const nlohmann::json& j) {
  COCOON_ASSIGN_OR_RETURN(std::shared_ptr<const LogJsonDestination> destination,
                          LogJsonDestination::Open(path, stdout_has_outcome));
  return destination->Write(j);
}

}  // namespace cocoon::cli
