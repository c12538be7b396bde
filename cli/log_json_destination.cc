#include "cli/log_json_destination.h"

#include <fcntl.h>
#include <signal.h>
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

enum class DestinationKind { kReplaceFile, kDevice, kDeviceThroughLink, kOwnDescriptor };

Status RefuseOtherUsers(const std::string& path, const struct stat& st, const char* what) {
  // Another user's FIFO or link (planted in /tmp under the name the caller
  // will use) would hand them the Outcome, captured output included.
  if (st.st_uid != geteuid() && st.st_uid != 0) {
    return PermissionDeniedError("--log-json " + path + " is a " + what + " of another user; give a file name of your own");
  }
  return Status::Ok();
}

Result<DestinationKind> Classify(const std::string& path) {
  if (OwnDescriptorNamed(path)) return DestinationKind::kOwnDescriptor;
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return DestinationKind::kReplaceFile;
    return ErrnoError("--log-json " + path);
  }
  if (S_ISLNK(st.st_mode)) {
    // The link itself is replaced, as a file, unless it leads to a device,
    // a FIFO or a directory (/dev/stdin, /dev/fd): replacing those broke
    // /dev as root.
    struct stat target {};
    if (stat(path.c_str(), &target) != 0 || S_ISREG(target.st_mode)) return DestinationKind::kReplaceFile;
    if (S_ISCHR(target.st_mode) || S_ISFIFO(target.st_mode)) {
      COCOON_RETURN_IF_ERROR(RefuseOtherUsers(path, st, "symlink"));
      COCOON_RETURN_IF_ERROR(RefuseOtherUsers(path, target, S_ISFIFO(target.st_mode) ? "FIFO" : "device"));
      return DestinationKind::kDeviceThroughLink;
    }
    st = target;  // refused below, by what it leads to
  } else if (S_ISREG(st.st_mode)) {
    return DestinationKind::kReplaceFile;
  } else if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
    COCOON_RETURN_IF_ERROR(RefuseOtherUsers(path, st, S_ISFIFO(st.st_mode) ? "FIFO" : "device"));
    return DestinationKind::kDevice;
  }
  const char* what = S_ISDIR(st.st_mode) ? "a directory" : S_ISBLK(st.st_mode) ? "a block device" : "a socket";
  return InvalidArgumentError("--log-json " + path + " is " + what +
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
// O_NOFOLLOW unless the path was a link to it, and the fstat: what was a
// device or FIFO at lstat must still be one. Not
// close-on-exec: when the launcher hands the run to cocoon-full (a cache
// miss, docs/cli.md) this writer must outlive the exec, or the FIFO's reader
// sees its end and is gone before cocoon-full opens the FIFO again.
Result<int> OpenDevice(const std::string& path, bool through_link) {
  int fd = open(path.c_str(), O_WRONLY | O_NOCTTY | O_NONBLOCK | (through_link ? 0 : O_NOFOLLOW));
  if (fd < 0) {
    if (errno == ENXIO) return ErrnoError("--log-json " + path + ": nobody reads that FIFO; start its reader first");
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
  COCOON_ASSIGN_OR_RETURN(DestinationKind kind, Classify(path));
  switch (kind) {
    case DestinationKind::kOwnDescriptor: {
      const int fd = *OwnDescriptorNamed(path);
      COCOON_RETURN_IF_ERROR(CheckOwnDescriptor(path, fd, stdout_has_outcome));
      return std::shared_ptr<const LogJsonDestination>(new LogJsonDestination(path, Kind::kOwnDescriptor, fd));
    }
    case DestinationKind::kDevice:
    case DestinationKind::kDeviceThroughLink: {
      COCOON_ASSIGN_OR_RETURN(int fd, OpenDevice(path, kind == DestinationKind::kDeviceThroughLink));
      auto destination = std::shared_ptr<LogJsonDestination>(new LogJsonDestination(path, Kind::kDevice, fd));
      destination->device_.Reset(fd);
      return std::shared_ptr<const LogJsonDestination>(std::move(destination));
    }
    case DestinationKind::kReplaceFile: break;
  }
  // The directory must take the temporary the Outcome goes through.
  const std::string probe = path + UniqueTempSuffix();
  int fd = open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoError("--log-json " + path + ": cannot create a file in its directory");
  close(fd);
  unlink(probe.c_str());
  return std::shared_ptr<const LogJsonDestination>(new LogJsonDestination(path, Kind::kReplaceFile, -1));
}

Status LogJsonDestination::Write(const nlohmann::json& j) const {
  switch (kind_) {
    case Kind::kReplaceFile: return ReplaceFile(path_, j);
    case Kind::kDevice:
      if (!WriteIgnoringSigpipe(fd_, j, kDeviceWriteTimeoutMs)) {
        if (errno == ETIMEDOUT) {
          return FailedPreconditionError("cannot write " + path_ + ": its reader took nothing for " +
                                         std::to_string(kDeviceWriteTimeoutMs / 1000) + " s; the Outcome is not there");
        }
        return ErrnoError("cannot write " + path_);
      }
      return Status::Ok();
    case Kind::kOwnDescriptor:
      if (!WriteIgnoringSigpipe(fd_, j, -1)) return ErrnoError("cannot write " + path_);
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
