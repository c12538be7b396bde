#include "compiler/common/hidden_characters.h"

#include <algorithm>
#include <iterator>

namespace cocoon {
namespace {

struct Named {
  uint32_t code_point;
  std::string_view name;
};

// Unicode's bidirectional formatting characters (UAX #9) and the zero-width
// and invisible format characters (general category Cf) that fit inside a
// word. Sorted by code point.
constexpr Named kHidden[] = {
    {0x00AD, "SOFT HYPHEN"},
    {0x061C, "ARABIC LETTER MARK"},
    {0x180E, "MONGOLIAN VOWEL SEPARATOR"},
    {0x200B, "ZERO WIDTH SPACE"},
    {0x200C, "ZERO WIDTH NON-JOINER"},
    {0x200D, "ZERO WIDTH JOINER"},
    {0x200E, "LEFT-TO-RIGHT MARK"},
    {0x200F, "RIGHT-TO-LEFT MARK"},
    {0x202A, "LEFT-TO-RIGHT EMBEDDING"},
    {0x202B, "RIGHT-TO-LEFT EMBEDDING"},
    {0x202C, "POP DIRECTIONAL FORMATTING"},
    {0x202D, "LEFT-TO-RIGHT OVERRIDE"},
    {0x202E, "RIGHT-TO-LEFT OVERRIDE"},
    {0x2060, "WORD JOINER"},
    {0x2061, "FUNCTION APPLICATION"},
    {0x2062, "INVISIBLE TIMES"},
    {0x2063, "INVISIBLE SEPARATOR"},
    {0x2064, "INVISIBLE PLUS"},
    {0x2066, "LEFT-TO-RIGHT ISOLATE"},
    {0x2067, "RIGHT-TO-LEFT ISOLATE"},
    {0x2068, "FIRST STRONG ISOLATE"},
    {0x2069, "POP DIRECTIONAL ISOLATE"},
    {0xFEFF, "ZERO WIDTH NO-BREAK SPACE, the byte-order mark"},
};

const Named* FindNamed(uint32_t code_point) {
  auto it = std::lower_bound(std::begin(kHidden), std::end(kHidden), code_point,
                             [](const Named& n, uint32_t value) { return n.code_point < value; });
  return it != std::end(kHidden) && it->code_point == code_point ? it : nullptr;
}

}  // namespace

bool IsHiddenCharacter(uint32_t code_point) { return FindNamed(code_point) != nullptr; }

std::vector<HiddenCharacter> FindHiddenCharacters(std::string_view text) {
  std::vector<HiddenCharacter> found;
  size_t i = 0;
  while (i < text.size()) {
    unsigned char lead = static_cast<unsigned char>(text[i]);
    // Every hidden character is 2 or 3 bytes long; ASCII is the common case.
    size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : 4;
    if (length == 1 || length == 4 || i + length > text.size()) {
      i += std::min(length, text.size() - i);
      continue;
    }
    uint32_t cp = length == 2 ? (lead & 0x1Fu) : (lead & 0x0Fu);
    for (size_t k = 1; k < length; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3Fu);
    const Named* named = FindNamed(cp);
    if (named != nullptr && !(cp == 0xFEFF && i == 0)) found.push_back({i, length, cp, named->name});
    i += length;
  }
  return found;
}

}  // namespace cocoon
