#include "compiler/common/json_fd_writer.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string_view>
#include <vector>

namespace cocoon {
namespace {

// nlohmann's serializer writes through this interface (the same one its
// dump() uses with a string adapter, and that to_cbor() and friends take
// publicly). It escapes strings in 512-byte pieces, so memory stays at the
// buffer below whatever the size of the document.
class FdOutputAdapter final : public nlohmann::detail::output_adapter_protocol<char> {
 public:
  FdOutputAdapter(int fd, int timeout_ms) : fd_(fd), timeout_ms_(timeout_ms) {
    buffer_.reserve(kBufferBytes);
    if (timeout_ms_ >= 0) deadline_ = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  }

  void write_character(char c) override {
    buffer_.push_back(c);
    if (buffer_.size() >= kBufferBytes) Flush();
  }

  void write_characters(const char* s, std::size_t length) override {
    if (buffer_.size() + length > kBufferBytes) Flush();
    if (length >= kBufferBytes) {
      WriteAll(std::string_view(s, length));
      return;
    }
    buffer_.insert(buffer_.end(), s, s + length);
  }

  // True if every byte so far reached the fd.
  bool Flush() {
    WriteAll(std::string_view(buffer_.data(), buffer_.size()));
    buffer_.clear();
    return ok_;
  }

  int saved_errno() const { return saved_errno_; }

 private:
  static constexpr std::size_t kBufferBytes = 64 * 1024;

  void WriteAll(std::string_view data) {
    while (ok_ && !data.empty()) {
      ssize_t n = write(fd_, data.data(), data.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN && timeout_ms_ >= 0 && WaitWritable()) continue;
      if (n <= 0) {
        if (n == 0) errno = EIO;
        saved_errno_ = errno;
        ok_ = false;
        return;
      }
      data.remove_prefix(static_cast<std::size_t>(n));
    }
  }

  // A non-blocking fd that is full: waits for room until the deadline
  // (false, errno ETIMEDOUT, when it passes).
  bool WaitWritable() {
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        errno = ETIMEDOUT;
        return false;
      }
      struct pollfd p {fd_, POLLOUT, 0};
      const int ready = poll(&p, 1, static_cast<int>(left.count()));
      if (ready > 0) return true;  // writable, or an error the write reports
      if (ready < 0 && errno != EINTR) return false;
    }
  }

  int fd_;
  int timeout_ms_;
  std::chrono::steady_clock::time_point deadline_;
  std::vector<char> buffer_;
  bool ok_ = true;
  int saved_errno_ = 0;
};

}  // namespace

bool WriteJsonLine(int fd, const nlohmann::json& value, int indent, int timeout_ms) {
  auto adapter = std::make_shared<FdOutputAdapter>(fd, timeout_ms);
  {
    nlohmann::detail::serializer<nlohmann::json> serializer(adapter, ' ', nlohmann::json::error_handler_t::replace);
    serializer.dump(value, indent >= 0, /*ensure_ascii=*/false, static_cast<unsigned int>(indent >= 0 ? indent : 0));
  }
  adapter->write_character('\n');
  if (adapter->Flush()) return true;
  errno = adapter->saved_errno();
  return false;
}

}  // namespace cocoon
