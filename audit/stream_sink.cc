// stdout and syslog (RFC 5424 over /dev/log, TCP or UDP) sinks.
#include <netdb.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include "audit/sink.h"

namespace cocoon::audit {
namespace {

Status SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("sending audit events to syslog");
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Result<int> ConnectInet(std::string_view host_port, int type) {
  size_t colon = host_port.rfind(':');
  if (colon == std::string_view::npos) return InvalidArgumentError("syslog address needs HOST:PORT");
  std::string host(host_port.substr(0, colon)), port(host_port.substr(colon + 1));
  if (host.size() > 1 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  struct addrinfo hints{};
  hints.ai_socktype = type;
  hints.ai_flags = AI_NUMERICSERV;
  struct addrinfo* found = nullptr;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found);
  if (rc != 0) return InvalidArgumentError("syslog address " + std::string(host_port) + ": " + gai_strerror(rc));
  int fd = -1;
  int err = 0;
  for (auto* ai = found; ai != nullptr; ai = ai->ai_next) {
    fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) { err = errno; continue; }
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
    err = errno;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(found);
  if (fd < 0) return ErrnoError("connecting to syslog at " + std::string(host_port), err);
  return fd;
}

Result<int> ConnectUnix(std::string_view path) {
  struct sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return InvalidArgumentError("syslog socket path too long");
  std::memcpy(addr.sun_path, path.data(), path.size());
  // /dev/log is a datagram socket on Debian (rsyslog imuxsock, journald).
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoError("socket(AF_UNIX)");
  if (connect(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof addr) != 0) {
    int err = errno;
    close(fd);
    return ErrnoError("connecting to syslog socket " + std::string(path), err);
  }
  return fd;
}

}  // namespace

Result<std::unique_ptr<StreamSink>> StreamSink::Open(std::string_view address, std::string app_name,
                                                     std::string host_name) {
  auto sink = std::unique_ptr<StreamSink>(new StreamSink());
  sink->app_name_ = std::move(app_name);
  sink->host_name_ = std::move(host_name);
  if (address == "-") {
    sink->kind_ = StreamKind::kStdout;
    sink->fd_ = STDOUT_FILENO;
  } else if (address.rfind("unix:", 0) == 0) {
    sink->kind_ = StreamKind::kSyslogUnix;
    COCOON_ASSIGN_OR_RETURN(sink->fd_, ConnectUnix(address.substr(5)));
  } else if (address.rfind("tcp:", 0) == 0) {
    sink->kind_ = StreamKind::kSyslogTcp;
    COCOON_ASSIGN_OR_RETURN(sink->fd_, ConnectInet(address.substr(4), SOCK_STREAM));
  } else if (address.rfind("udp:", 0) == 0) {
    sink->kind_ = StreamKind::kSyslogUdp;
    COCOON_ASSIGN_OR_RETURN(sink->fd_, ConnectInet(address.substr(4), SOCK_DGRAM));
  } else {
    return InvalidArgumentError("unknown audit sink address '" + std::string(address) +
                                "' (want -, unix:PATH, tcp:HOST:PORT or udp:HOST:PORT)");
  }
  return sink;
}

StreamSink::~StreamSink() {
  if (fd_ >= 0 && kind_ != StreamKind::kStdout) close(fd_);
}

Status StreamSink::Write(const std::vector<std::string>& lines, const std::vector<int>& severity_ids) {
  if (kind_ == StreamKind::kStdout) {
    std::string all;
    for (const auto& line : lines) all += line;
    std::string_view bytes(all);
    while (!bytes.empty()) {  // one write per batch, like the file sink
      ssize_t n = write(fd_, bytes.data(), bytes.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoError("writing audit events to stdout");
      bytes.remove_prefix(static_cast<size_t>(n));
    }
    return Status::Ok();
  }
  std::string framed;
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string_view line(lines[i]);
    if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
    std::string message = Rfc5424Message(line, severity_ids[i], host_name_, app_name_, getpid());
    if (kind_ == StreamKind::kSyslogTcp) {
      // RFC 6587 3.4.1 octet counting: the JSON may never contain a raw LF,
      // but counting frames is what RFC 5425-style receivers expect.
      framed += std::to_string(message.size()) + " " + message;
    } else {
      COCOON_RETURN_IF_ERROR(SendAll(fd_, message));  // one datagram per event
    }
  }
  if (!framed.empty()) COCOON_RETURN_IF_ERROR(SendAll(fd_, framed));
  return Status::Ok();
}

}  // namespace cocoon::audit
