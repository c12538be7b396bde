// Writing a JSON document to a file descriptor without building its text in
// memory first.
//
// An Outcome carries up to the policy's output cap of captured bytes, and
// escaping can multiply them: a NUL byte becomes the six characters "\u0000".
// nlohmann's dump() returns the whole text as one std::string, so a 1 MiB
// capture of NULs cost ~6 MiB for the text plus ~6 MiB more for the
// `text + "\n"` copy: the supervisor's memory grew ~10x the cap (issue 4:
// "a 1 GiB flood must not grow the supervisor's memory beyond the cap").
// This writer runs nlohmann's own serializer over a fixed 64 KiB buffer that
// is flushed to the fd as it fills, so the text never exists in full.
#pragma once

#include <nlohmann/json.hpp>

namespace cocoon {

// Serialises `value` (indent < 0: one line; else pretty-printed with that
// many spaces), then a newline, to `fd`. Invalid UTF-8 in strings is
// replaced with U+FFFD, as dump(..., error_handler_t::replace) does. Retries
// EINTR and short writes. Returns false if a write failed (errno is set);
// the caller reports it. Not async-signal-safe (it allocates its buffer).
// `timeout_ms` >= 0, for a non-blocking fd: waits at most that long in all
// for it to take the text, then fails with ETIMEDOUT (a FIFO whose reader
// stopped reading cannot hold the writer forever).
bool WriteJsonLine(int fd, const nlohmann::json& value, int indent = -1, int timeout_ms = -1);

}  // namespace cocoon
