// Policy text on a terminal. A diagnostic quotes what the policy wrote (a
// syscall name, a string, a path), and a policy under review is hostile
// input: an ESC sequence in it could clear the screen, retitle the terminal
// or forge lines of cocoon's own output. And a caret under non-ASCII text
// must be padded by the columns the terminal draws, not by bytes.
#ifndef COCOON_COMPILER_COMMON_DISPLAY_TEXT_H_
#define COCOON_COMPILER_COMMON_DISPLAY_TEXT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace cocoon {

// Whether EscapeControlCharacters writes a backslash of the text as \\.
// Escaped: the result reads back unambiguously (a literal "\x1b" in the
// text is not an ESC), as the audit log's human-readable fields need.
// Compiler diagnostics quote policy text as written and keep it as it is.
enum class Backslash { kAsIs, kEscaped };

// `text` with nothing a terminal would act on or hide: control characters
// (C0, DEL, C1) come out as \n, \t, \r, \xNN or \uNNNN, invisible and
// direction-changing characters (hidden_characters.h) as \uNNNN (\UNNNNNNNN
// past U+FFFF, as bash and C write them), and bytes that are not valid
// UTF-8 as \xNN. One line of text stays one line.
std::string EscapeControlCharacters(std::string_view text, Backslash backslash = Backslash::kAsIs);

// A policy line echoed under a diagnostic, byte for byte (so a span's byte
// offsets still index it): C0 controls and DEL show as spaces; C1 controls,
// invisible or direction-changing characters and bytes that are not valid
// UTF-8 show as one '?' per byte, so the caret lands under them.
std::string MaskForTerminal(std::string_view line);

// The columns a terminal gives UTF-8 `text`: 2 for East Asian wide and
// fullwidth characters and emoji, 0 for combining marks and variation
// selectors, 1 for anything else (a byte that is not valid UTF-8 included:
// it shows as one replacement character). A small table, not all of
// Unicode's EastAsianWidth.txt: it errs by a column on rare scripts only.
size_t DisplayWidth(std::string_view text);

// Decodes the UTF-8 sequence at text[i] into `code_point`: its length, or 0
// when it is not valid UTF-8 (truncated, overlong, a surrogate, past
// U+10FFFF). `i` must be below text.size().
size_t DecodeUtf8(std::string_view text, size_t i, uint32_t& code_point);

}  // namespace cocoon

#endif  // COCOON_COMPILER_COMMON_DISPLAY_TEXT_H_
