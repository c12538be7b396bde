// Cocoon's diagnostics log: one line per event on stderr (stdout carries
// only command output: JSON Outcomes, MCP protocol messages), at warn level
// and above unless set otherwise.
//
// A facade over spdlog, so that only log.cc includes it: spdlog here is
// header-only with a header-only fmt (cmake/static_deps.cmake, for the
// static launcher), and each file that includes it compiles fmt's and
// spdlog's implementation again, ~12 s of compiler time per file. Callers
// pass finished messages.
#pragma once

#include <string_view>

namespace cocoon::log {

// Sends the log to stderr, at warn level. Once, at start-up.
void InitStderr();

void Error(std::string_view message);
void Warn(std::string_view message);
void Info(std::string_view message);

// Writes out what is buffered (before a process leaves with _exit).
void Flush();

}  // namespace cocoon::log
