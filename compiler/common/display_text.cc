#include "compiler/common/display_text.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iterator>

#include "compiler/common/hidden_characters.h"

namespace cocoon {
namespace {

struct Range {
  uint32_t first;
  uint32_t last;
};

// Characters drawn on no column of their own: combining marks (Unicode
// general category Mn/Me in the common blocks), variation selectors and
// emoji skin-tone modifiers (they join the character before them). Sorted.
constexpr Range kZeroWidth[] = {
    {0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x05BF, 0x05BF}, {0x05C1, 0x05C2},
    {0x05C4, 0x05C5}, {0x05C7, 0x05C7}, {0x0610, 0x061A}, {0x064B, 0x065F}, {0x0670, 0x0670},
    {0x06D6, 0x06DC}, {0x06DF, 0x06E4}, {0x06E7, 0x06E8}, {0x06EA, 0x06ED}, {0x0900, 0x0902},
    {0x093A, 0x093A}, {0x093C, 0x093C}, {0x0941, 0x0948}, {0x094D, 0x094D}, {0x0951, 0x0957},
    {0x0E31, 0x0E31}, {0x0E34, 0x0E3A}, {0x0E47, 0x0E4E}, {0x1160, 0x11FF}, {0x1AB0, 0x1AFF},
    {0x1DC0, 0x1DFF}, {0x20D0, 0x20FF}, {0x302A, 0x302D}, {0x3099, 0x309A}, {0xFE00, 0xFE0F},
    {0xFE20, 0xFE2F}, {0xFEFF, 0xFEFF}, {0x1F3FB, 0x1F3FF}, {0xE0100, 0xE01EF},
};

// East Asian Wide (W) and Fullwidth (F) characters, and the emoji blocks
// terminals draw two columns wide. Sorted.
constexpr Range kDoubleWidth[] = {
    {0x1100, 0x115F},   {0x231A, 0x231B},   {0x2329, 0x232A},   {0x23E9, 0x23EC},   {0x23F0, 0x23F0},
    {0x23F3, 0x23F3},   {0x25FD, 0x25FE},   {0x2614, 0x2615},   {0x2648, 0x2653},   {0x267F, 0x267F},
    {0x2693, 0x2693},   {0x26A1, 0x26A1},   {0x26AA, 0x26AB},   {0x26BD, 0x26BE},   {0x26C4, 0x26C5},
    {0x26CE, 0x26CE},   {0x26D4, 0x26D4},   {0x26EA, 0x26EA},   {0x26F2, 0x26F3},   {0x26F5, 0x26F5},
    {0x26FA, 0x26FA},   {0x26FD, 0x26FD},   {0x2705, 0x2705},   {0x270A, 0x270B},   {0x2728, 0x2728},
    {0x274C, 0x274C},   {0x274E, 0x274E},   {0x2753, 0x2755},   {0x2757, 0x2757},   {0x2795, 0x2797},
    {0x27B0, 0x27B0},   {0x27BF, 0x27BF},   {0x2B1B, 0x2B1C},   {0x2B50, 0x2B50},   {0x2B55, 0x2B55},
    {0x2E80, 0x3029},   {0x302E, 0x303E},   {0x3041, 0x3098},   {0x309B, 0x33FF},   {0x3400, 0x4DBF},
    {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},   {0xA960, 0xA97F},   {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},
    {0xFE10, 0xFE19},   {0xFE30, 0xFE6F},   {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},   {0x16FE0, 0x16FE4},
    {0x17000, 0x18CFF}, {0x1B000, 0x1B2FF}, {0x1F004, 0x1F004}, {0x1F0CF, 0x1F0CF}, {0x1F18E, 0x1F18E},
    {0x1F191, 0x1F19A}, {0x1F200, 0x1F251}, {0x1F300, 0x1F3FA}, {0x1F400, 0x1F64F}, {0x1F680, 0x1F6FF},
    {0x1F7E0, 0x1F7EB}, {0x1F900, 0x1F9FF}, {0x1FA70, 0x1FAFF}, {0x20000, 0x2FFFD}, {0x30000, 0x3FFFD},
};

template <size_t N>
bool InRanges(const Range (&ranges)[N], uint32_t code_point) {
  auto it = std::lower_bound(std::begin(ranges), std::end(ranges), code_point,
                             [](const Range& r, uint32_t value) { return r.last < value; });
  return it != std::end(ranges) && it->first <= code_point;
}

}  // namespace

size_t DecodeUtf8(std::string_view text, size_t i, uint32_t& code_point) {
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
  if (code < kSmallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
  code_point = code;
  return length;
}


std::string EscapeControlCharacters(std::string_view text, Backslash backslash) {
  std::string out;
  out.reserve(text.size());
  char escaped[16];
  for (size_t i = 0; i < text.size();) {
    uint32_t code_point = 0;
    size_t length = DecodeUtf8(text, i, code_point);
    if (length == 0) {
      snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<uint8_t>(text[i++]));
      out += escaped;
      continue;
    }
    if (code_point == '\\' && backslash == Backslash::kEscaped) {
      out += "\\\\";
    } else if (code_point == '\n') {
      out += "\\n";
    } else if (code_point == '\t') {
      out += "\\t";
    } else if (code_point == '\r') {
      out += "\\r";
    } else if (code_point < 0x20 || code_point == 0x7F) {
      snprintf(escaped, sizeof escaped, "\\x%02x", code_point);
      out += escaped;
    } else if ((code_point >= 0x80 && code_point <= 0x9F) || IsHiddenCharacter(code_point)) {
      // C1 (a terminal may read U+009B as CSI), or invisible in the message.
      snprintf(escaped, sizeof escaped, code_point > 0xFFFF ? "\\U%08x" : "\\u%04x", code_point);
      out += escaped;
    } else {
      out.append(text.substr(i, length));
    }
    i += length;
  }
  return out;
}

std::string MaskForTerminal(std::string_view line) {
  std::string out(line);
  for (size_t i = 0; i < line.size();) {
    uint32_t code_point = 0;
    size_t length = DecodeUtf8(line, i, code_point);
    if (length == 0) {
      out[i++] = '?';
    } else if (code_point < 0x20 || code_point == 0x7F) {
      out[i++] = ' ';
    } else if ((code_point >= 0x80 && code_point <= 0x9F) || IsHiddenCharacter(code_point)) {
      out.replace(i, length, length, '?');
      i += length;
    } else {
      i += length;
    }
  }
  return out;
}

size_t DisplayWidth(std::string_view text) {
  size_t width = 0;
  for (size_t i = 0; i < text.size();) {
    uint32_t code_point = 0;
    size_t length = DecodeUtf8(text, i, code_point);
    if (length == 0) {
      ++width;
      ++i;
      continue;
    }
    i += length;
    if (code_point < 0x300) {
      ++width;  // ASCII and Latin-1: the common case
    } else if (InRanges(kZeroWidth, code_point)) {
      continue;
    } else {
      width += InRanges(kDoubleWidth, code_point) ? 2 : 1;
    }
  }
  return width;
}

}  // namespace cocoon
