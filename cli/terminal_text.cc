#include "cli/terminal_text.h"

#include <cstdint>

#include "compiler/common/display_text.h"
#include "compiler/common/hidden_characters.h"

namespace cocoon::cli {
namespace {

// Length of the valid UTF-8 sequence at text[i] that encodes a printable
// character (not C0, DEL or C1, nor one a reader cannot see: a bidi
// override, a zero-width character; hidden_characters.h), or 0.
size_t PrintableSequence(std::string_view text, size_t i) {
  uint32_t code = 0;
  size_t length = DecodeUtf8(text, i, code);
  if (length == 0 || !IsDrawnAsItself(code)) return 0;
  return length;
}

}  // namespace

std::string EscapeForTerminal(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '\\') {
      out += "\\\\";
      ++i;
      continue;
    }
    if (size_t length = PrintableSequence(text, i)) {
      out.append(text.substr(i, length));
      i += length;
      continue;
    }
    // Every byte of the sequence (a hidden character's continuation bytes
    // are not valid UTF-8 on their own: each is escaped in turn).
    auto byte = static_cast<uint8_t>(text[i++]);
    out += "\\x";
    out += kHex[byte >> 4];
    out += kHex[byte & 0xF];
  }
  return out;
}

}  // namespace cocoon::cli
