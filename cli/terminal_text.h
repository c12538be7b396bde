// Text chosen by the sandbox (file names in the work dir, messages that quote
// them) printed on cocoon's own stderr: an escape sequence could clear the
// screen or retitle the terminal, and a newline could forge a line of
// cocoon's; a bidi override could reorder the line. Control characters
// (C0, DEL, C1), the characters a reader cannot see (hidden_characters.h),
// invalid UTF-8 and the backslash itself come out as \xNN (one per byte)
// and \\, in the manner of `ls -b`.
#pragma once

#include <string>
#include <string_view>

namespace cocoon::cli {

std::string EscapeForTerminal(std::string_view text);

}  // namespace cocoon::cli
