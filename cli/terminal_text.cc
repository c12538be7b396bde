#include "cli/terminal_text.h"

#include <cstdint>

namespace cocoon::cli {
namespace {

// Length of the valid UTF-8 sequence at text[i] that encodes a printable
// character (not C1), or 0.
size_t PrintableSequence(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  uint8_t lead = byte(i);
  size_t length = lead < 0x80 ? 1 : (lead & 0xE0) == 0xC0 ? 2 : (lead & 0xF0) == 0xE0 ? 3 : (lead & 0xF8) == 0xF0 ? 4 : 0;
  if (length == 0 || i + length > text.size()) return 0;
  uint32_t code = length == 1 ? lead : lead & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kSmallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;  // overlong, surrogate
  if (code < 0x20 || (code >= 0x7F && code <= 0x9F)) return 0;  // C0, DEL, C1
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
    auto byte = static_cast<uint8_t>(text[i++]);
    out += "\\x";
    out += kHex[byte >> 4];
    out += kHex[byte & 0xF];
  }
  return out;
}

}  // namespace cocoon::cli
