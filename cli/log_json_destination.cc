#include "cli/log_json_destination.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <optional>
#include <string_view>

#include "compiler/common/json_fd_writer.h"
#include "compiler/common/temp_name.h"

namespace cocoon::cli {
namespace {

// The descriptor that /dev/stdout, /dev/stderr, /dev/fd/N or /proc/self/fd/N
// names, checked to be open; nullopt for any other path.
std::optional<int> OwnDescriptorNamed(std::string_view path) {
  int fd = -1;
  if (path == "/dev/stdout") {
    fd = STDOUT_FILENO;
  } else if (path == "/dev/stderr") {
    fd = STDERR_FILENO;
  } else {
    for (std::string_view prefix : {std::string_view("/dev/fd/"), std::string_view("/proc/self/fd/")}) {
      if (path.substr(0, prefix.size()) != prefix) continue;
      std::string_view digits = path.substr(prefix.size());
      auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), fd);
      if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
    }
  }
  if (fd < 0 || fcntl(fd, F_GETFD) < 0) return std::nullopt;
  return fd;
}

enum class DestinationKind { kReplaceFile, kDevice, kOwnDescriptor };

Result<DestinationKind> Classify(const std::string& path) {
  if (OwnDescriptorNamed(path)) return DestinationKind::kOwnDescriptor;
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return DestinationKind::kReplaceFile;
    return ErrnoError("--log-json " + path);
  }
  if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) return DestinationKind::kReplaceFile;
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
    // Another user's FIFO (planted in /tmp under the name the caller will
    // use) would hand them the Outcome, captured output included.
    if (st.st_uid != geteuid() && st.st_uid != 0) {
      return PermissionDeniedError("--log-json " + path + " is a " + (S_ISFIFO(st.st_mode) ? "FIFO" : "device") +
                                   " of another user; give a file name of your own");
    }
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

// O_NONBLOCK for the open only: a FIFO nobody reads fails with ENXIO
// instead of blocking cocoon; writes then block as usual. O_NOFOLLOW and
// the fstat: what was a device or FIFO at lstat must still be one.
Result<int> OpenDevice(const std::string& path) {
  int fd = open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENXIO) return ErrnoError("--log-json " + path + ": nobody reads that FIFO; start its reader first");
    return ErrnoError("--log-json " + path);
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) ||
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0) {
    close(fd);
    return FailedPreconditionError("--log-json " + path + " changed while cocoon was opening it");
  }
  return fd;
}

}  // namespace

Result<std::shared_ptr<const LogJsonDestination>> LogJsonDestination::Open(const std::string& path) {
  COCOON_ASSIGN_OR_RETURN(DestinationKind kind, Classify(path));
  switch (kind) {
    case DestinationKind::kOwnDescriptor:
      return std::shared_ptr<const LogJsonDestination>(
          new LogJsonDestination(path, Kind::kOwnDescriptor, *OwnDescriptorNamed(path)));
    case DestinationKind::kDevice: {
      COCOON_ASSIGN_OR_RETURN(int fd, OpenDevice(path));
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
  if (kind_ == Kind::kReplaceFile) return ReplaceFile(path_, j);
  if (!WriteJsonLine(fd_, j, 2)) return ErrnoError("cannot write " + path_);
  return Status::Ok();
}

Status WriteLogJsonTo(const std::string& path, const nlohmann::json& j) {
  COCOON_ASSIGN_OR_RETURN(std::shared_ptr<const LogJsonDestination> destination, LogJsonDestination::Open(path));
  return destination->Write(j);
}

}  // namespace cocoon::cli
