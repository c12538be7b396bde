// Status and Result<T>: how Cocoon reports failures of the tool or the host
// (I/O, kernel refusals, internal invariants). Mistakes in a *policy* are not
// Statuses; they are positioned Diagnostics (see diagnostics.h).
//
// No exceptions cross a module boundary: every fallible API returns one of
// these, and the message is produced once, where the failure is understood.
#pragma once

#include <cerrno>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace cocoon {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,    // the caller passed something malformed
  kNotFound,           // a file, profile, runtime... does not exist
  kAlreadyExists,
  kPermissionDenied,   // the host refused (EPERM/EACCES)
  kFailedPrecondition, // the host cannot do what was asked (no userns, ...)
  kResourceExhausted,  // a cap was reached (size, depth, disk full)
  kUnavailable,        // transient: try again
  kDataLoss,           // integrity failure (hash mismatch, tampered log)
  kUnimplemented,
  kInternal,           // a bug in Cocoon
};

std::string_view ErrorCodeName(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == ErrorCode::kOk; }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // Prefixes the message with what the caller was doing: "staging work dir: ...".
  Status WithContext(std::string_view context) const;

  // "<code name>: <message>", for logs.
  std::string ToString() const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

Status InvalidArgumentError(std::string message);
Status NotFoundError(std::string message);
Status PermissionDeniedError(std::string message);
Status FailedPreconditionError(std::string message);
Status ResourceExhaustedError(std::string message);
Status DataLossError(std::string message);
Status UnimplementedError(std::string message);
Status InternalError(std::string message);
// Maps an errno to the closest ErrorCode and appends strerror(err).
Status ErrnoError(std::string what, int err = errno);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}                 // NOLINT: implicit by design
  Result(Status status) : value_(std::move(status)) {           // NOLINT
    if (std::get<Status>(value_).ok()) value_ = Status(ErrorCode::kInternal, "Result from OK status");
  }

  bool ok() const { return std::holds_alternative<T>(value_); }
  Status status() const { return ok() ? Status::Ok() : std::get<Status>(value_); }

  T& value() & { return std::get<T>(value_); }
  const T& value() const& { return std::get<T>(value_); }
  T&& value() && { return std::get<T>(std::move(value_)); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> value_;
};

}  // namespace cocoon

#define COCOON_CONCAT_INNER_(a, b) a##b
#define COCOON_CONCAT_(a, b) COCOON_CONCAT_INNER_(a, b)

#define COCOON_RETURN_IF_ERROR(expr)                  \
  do {                                                \
    ::cocoon::Status cocoon_status_ = (expr);         \
    if (!cocoon_status_.ok()) return cocoon_status_;  \
  } while (0)

#define COCOON_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                  \
  if (!tmp.ok()) return tmp.status();                 \
  lhs = std::move(tmp).value()

#define COCOON_ASSIGN_OR_RETURN(lhs, expr) \
  COCOON_ASSIGN_OR_RETURN_IMPL_(COCOON_CONCAT_(cocoon_result_, __LINE__), lhs, expr)
