#include "compiler/common/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace cocoon::log {

void InitStderr() {
  // spdlog's default logger writes to stdout, which carries command output.
  spdlog::set_default_logger(spdlog::stderr_color_mt("cocoon"));
  spdlog::set_level(spdlog::level::warn);
}

// "{}" with the message as its argument: a message is never a format string.
void Error(std::string_view message) { spdlog::error("{}", message); }
void Warn(std::string_view message) { spdlog::warn("{}", message); }
void Info(std::string_view message) { spdlog::info("{}", message); }

void Flush() { spdlog::default_logger()->flush(); }

}  // namespace cocoon::log
