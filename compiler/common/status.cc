#include "compiler/common/status.h"

#include <cstring>

namespace cocoon {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kOk: return "ok";
    case ErrorCode::kInvalidArgument: return "invalid argument";
    case ErrorCode::kNotFound: return "not found";
    case ErrorCode::kAlreadyExists: return "already exists";
    case ErrorCode::kPermissionDenied: return "permission denied";
    case ErrorCode::kFailedPrecondition: return "failed precondition";
    case ErrorCode::kResourceExhausted: return "resource exhausted";
    case ErrorCode::kUnavailable: return "unavailable";
    case ErrorCode::kDataLoss: return "data loss";
    case ErrorCode::kUnimplemented: return "unimplemented";
    case ErrorCode::kInternal: return "internal error";
  }
  return "unknown";
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  std::string message(context);
  message += ": ";
  message += message_;
  return Status(code_, std::move(message));
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  std::string out(ErrorCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status InvalidArgumentError(std::string m) { return Status(ErrorCode::kInvalidArgument, std::move(m)); }
Status NotFoundError(std::string m) { return Status(ErrorCode::kNotFound, std::move(m)); }
Status PermissionDeniedError(std::string m) { return Status(ErrorCode::kPermissionDenied, std::move(m)); }
Status FailedPreconditionError(std::string m) { return Status(ErrorCode::kFailedPrecondition, std::move(m)); }
Status ResourceExhaustedError(std::string m) { return Status(ErrorCode::kResourceExhausted, std::move(m)); }
Status DataLossError(std::string m) { return Status(ErrorCode::kDataLoss, std::move(m)); }
Status UnimplementedError(std::string m) { return Status(ErrorCode::kUnimplemented, std::move(m)); }
Status InternalError(std::string m) { return Status(ErrorCode::kInternal, std::move(m)); }

Status ErrnoError(std::string what, int err) {
  ErrorCode code = ErrorCode::kInternal;
  switch (err) {
    case ENOENT: case ENOTDIR: code = ErrorCode::kNotFound; break;
    case EEXIST: code = ErrorCode::kAlreadyExists; break;
    case EPERM: case EACCES: case EROFS: code = ErrorCode::kPermissionDenied; break;
    case ENOSPC: case EMFILE: case ENFILE: case ENOMEM: code = ErrorCode::kResourceExhausted; break;
#ifdef EDQUOT  // POSIX, but not in the Windows CRT (the Windows applier builds this file too)
    case EDQUOT: code = ErrorCode::kResourceExhausted; break;
#endif
    case EINVAL: code = ErrorCode::kInvalidArgument; break;
    case ENOSYS: case EOPNOTSUPP: code = ErrorCode::kFailedPrecondition; break;
    case EAGAIN: case EINTR: code = ErrorCode::kUnavailable; break;
    default: break;
  }
  what += ": ";
  what += std::strerror(err);
  return Status(code, std::move(what));
}

}  // namespace cocoon
