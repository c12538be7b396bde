#include "compiler/common/hidden_characters.h"

#include <algorithm>
#include <iterator>

#include "compiler/common/display_text.h"

namespace cocoon {
namespace {

struct Named {
  uint32_t first;
  uint32_t last;
  std::string_view name;
};

// Characters a reader does not see, sorted by code point: Unicode's
// bidirectional formatting characters (UAX #9), the invisible format
// characters (general category Cf; the visible ones such as U+0600 ARABIC
// NUMBER SIGN are left out), the line and paragraph separators (Zl, Zp: a
// line break to some readers, nothing to others), the variation selectors,
// the tag characters (an emoji tag sequence hides ASCII text after a flag),
// the Hangul fillers (blank letters), and the other default-ignorable code
// points that draw nothing (U+034F, U+17B4, U+17B5, U+2065).
constexpr Named kHidden[] = {
    {0x00AD, 0x00AD, "SOFT HYPHEN"},
    {0x034F, 0x034F, "COMBINING GRAPHEME JOINER"},
    {0x061C, 0x061C, "ARABIC LETTER MARK"},
    {0x115F, 0x115F, "HANGUL CHOSEONG FILLER"},
    {0x1160, 0x1160, "HANGUL JUNGSEONG FILLER"},
    {0x17B4, 0x17B5, "KHMER INHERENT VOWEL"},
    {0x180B, 0x180D, "MONGOLIAN FREE VARIATION SELECTOR"},
    {0x180E, 0x180E, "MONGOLIAN VOWEL SEPARATOR"},
    {0x180F, 0x180F, "MONGOLIAN FREE VARIATION SELECTOR"},
    {0x200B, 0x200B, "ZERO WIDTH SPACE"},
    {0x200C, 0x200C, "ZERO WIDTH NON-JOINER"},
    {0x200D, 0x200D, "ZERO WIDTH JOINER"},
    {0x200E, 0x200E, "LEFT-TO-RIGHT MARK"},
    {0x200F, 0x200F, "RIGHT-TO-LEFT MARK"},
    {0x2028, 0x2028, "LINE SEPARATOR"},
    {0x2029, 0x2029, "PARAGRAPH SEPARATOR"},
    {0x202A, 0x202A, "LEFT-TO-RIGHT EMBEDDING"},
    {0x202B, 0x202B, "RIGHT-TO-LEFT EMBEDDING"},
    {0x202C, 0x202C, "POP DIRECTIONAL FORMATTING"},
    {0x202D, 0x202D, "LEFT-TO-RIGHT OVERRIDE"},
    {0x202E, 0x202E, "RIGHT-TO-LEFT OVERRIDE"},
    {0x2060, 0x2060, "WORD JOINER"},
    {0x2061, 0x2061, "FUNCTION APPLICATION"},
    {0x2062, 0x2062, "INVISIBLE TIMES"},
    {0x2063, 0x2063, "INVISIBLE SEPARATOR"},
    {0x2064, 0x2064, "INVISIBLE PLUS"},
    {0x2065, 0x2065, "an unassigned invisible format character"},
    {0x2066, 0x2066, "LEFT-TO-RIGHT ISOLATE"},
    {0x2067, 0x2067, "RIGHT-TO-LEFT ISOLATE"},
    {0x2068, 0x2068, "FIRST STRONG ISOLATE"},
    {0x2069, 0x2069, "POP DIRECTIONAL ISOLATE"},
    {0x206A, 0x206F, "a deprecated format character"},
    {0x3164, 0x3164, "HANGUL FILLER"},
    {0xFE00, 0xFE0F, "VARIATION SELECTOR"},
    {0xFEFF, 0xFEFF, "ZERO WIDTH NO-BREAK SPACE, the byte-order mark"},
    {0xFFA0, 0xFFA0, "HALFWIDTH HANGUL FILLER"},
    {0xFFF9, 0xFFFB, "an interlinear annotation character"},
    {0x13430, 0x1343F, "an Egyptian hieroglyph format control"},
    {0x1BCA0, 0x1BCA3, "a shorthand format control"},
    {0x1D173, 0x1D17A, "a musical symbol format character"},
    {0xE0000, 0xE007F, "a TAG character"},
    {0xE0100, 0xE01EF, "VARIATION SELECTOR"},
};

const Named* FindNamed(uint32_t code_point) {
  auto it = std::lower_bound(std::begin(kHidden), std::end(kHidden), code_point,
                             [](const Named& n, uint32_t value) { return n.last < value; });
  return it != std::end(kHidden) && it->first <= code_point ? it : nullptr;
}

// The control characters a terminal acts on instead of drawing: the C0 set
// (ESC starts a sequence that can erase a line, a backspace or a lone CR
// moves the cursor back so later text overprints earlier text), DEL, and the
// C1 set (U+009B is an ESC [ of its own, U+0085 a line break to some
// readers). TAB and LF are text; CR only as part of a CRLF line ending.
constexpr std::string_view kC0Names[0x20] = {
    "NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL", "BS (backspace)", "TAB", "LF",
    "VT (vertical tab)", "FF (form feed)", "CR", "SO", "SI", "DLE", "DC1", "DC2", "DC3", "DC4", "NAK",
    "SYN", "ETB", "CAN", "EM", "SUB", "ESC (escape)", "FS", "GS", "RS", "US",
};
constexpr Named kC1[] = {
    {0x0085, 0x0085, "NEL (next line)"},
    {0x009B, 0x009B, "CSI (control sequence introducer)"},
    {0x009D, 0x009D, "OSC (operating system command)"},
    {0x0080, 0x009F, "a C1 control character"},  // the rest; looked up last
};

std::string_view C1Name(uint32_t code_point) {
  for (const Named& n : kC1) {
    if (n.first <= code_point && code_point <= n.last) return n.name;
  }
  return {};
}

}  // namespace

std::vector<HiddenCharacter> FindControlCharacters(std::string_view text) {
  std::vector<HiddenCharacter> found;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte < 0x20) {
      if (byte == '\t' || byte == '\n') continue;
      if (byte == '\r' && i + 1 < text.size() && text[i + 1] == '\n') continue;  // CRLF
      found.push_back({i, 1, byte, byte == '\r' ? std::string_view("lone CR (carriage return)") : kC0Names[byte]});
    } else if (byte == 0x7F) {
      found.push_back({i, 1, byte, "DEL"});
    } else if (byte == 0xC2 && i + 1 < text.size()) {  // U+0080..U+00BF
      const auto next = static_cast<unsigned char>(text[i + 1]);
      if (next >= 0x80 && next <= 0x9F) {
        found.push_back({i, 2, next, C1Name(next)});
        ++i;
      }
    }
  }
  return found;
}

bool IsHiddenCharacter(uint32_t code_point) { return FindNamed(code_point) != nullptr; }

bool IsDrawnAsItself(uint32_t code_point) {
  return code_point >= 0x20 && !(code_point >= 0x7F && code_point <= 0x9F) && !IsHiddenCharacter(code_point);
}

std::vector<HiddenCharacter> FindHiddenCharacters(std::string_view text) {
  std::vector<HiddenCharacter> found;
  size_t i = 0;
  while (i < text.size()) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {  // ASCII: the common case
      ++i;
      continue;
    }
    uint32_t cp = 0;
    const size_t length = DecodeUtf8(text, i, cp);
    if (length == 0) {  // not valid UTF-8: not a character at all
      ++i;
      continue;
    }
    const Named* named = FindNamed(cp);
    if (named != nullptr && !(cp == 0xFEFF && i == 0)) found.push_back({i, length, cp, named->name});
    i += length;
  }
  return found;
}

}  // namespace cocoon
