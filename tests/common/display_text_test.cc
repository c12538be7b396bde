// The characters a reader cannot see (hidden_characters.h) and how text for
// a terminal or a log shows them. The list used to stop at the bidi
// controls and a few zero-width characters: U+2028, the tag characters,
// the variation selectors, the Hangul fillers and others passed as they
// were (reviewer finding), and a code point past U+FFFF was never looked at.
#include <gtest/gtest.h>

#include <string>

#include "compiler/common/display_text.h"
#include "compiler/common/hidden_characters.h"

namespace cocoon {
namespace {

std::string Utf8(uint32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return out;
}

constexpr uint32_t kNewlyHidden[] = {
    0x034F, 0x115F, 0x1160, 0x180B, 0x180C, 0x180D, 0x180F, 0x2028, 0x2029, 0x206A, 0x206F, 0x3164,
    0xFE00, 0xFE0F, 0xFFA0, 0xFFF9, 0xFFFB, 0x1D173, 0x1D17A, 0xE0000, 0xE0001, 0xE0041, 0xE007F,
    0xE0100, 0xE01EF,
};

TEST(HiddenCharacters, InvisibleCharactersAreFoundWhateverTheirLength) {
  for (uint32_t cp : kNewlyHidden) {
    const std::string text = "a" + Utf8(cp) + "b";
    EXPECT_TRUE(IsHiddenCharacter(cp)) << std::hex << cp;
    const auto found = FindHiddenCharacters(text);
    ASSERT_EQ(found.size(), 1u) << std::hex << cp;
    EXPECT_EQ(found[0].code_point, cp);
    EXPECT_EQ(found[0].offset, 1u);
    EXPECT_EQ(found[0].length, Utf8(cp).size());
    EXPECT_FALSE(found[0].name.empty());
  }
  // Their visible neighbours are not.
  for (uint32_t cp : {0x00E9u, 0x1100u, 0x2027u, 0x202Fu, 0x3163u, 0xFE10u, 0x1D172u, 0x1F600u, 0xE0080u, 0xE01F0u}) {
    EXPECT_FALSE(IsHiddenCharacter(cp)) << std::hex << cp;
    EXPECT_TRUE(FindHiddenCharacters("a" + Utf8(cp) + "b").empty()) << std::hex << cp;
  }
  // Invalid UTF-8 around them does not hide them.
  const auto found = FindHiddenCharacters("\xF0\x80" + Utf8(0x202E) + "\xFF" + Utf8(0xE0041));
  ASSERT_EQ(found.size(), 2u);
  EXPECT_EQ(found[0].code_point, 0x202Eu);
  EXPECT_EQ(found[1].code_point, 0xE0041u);
  EXPECT_EQ(found[1].offset, 6u);
}

TEST(HiddenCharacters, ControlCharactersAreFoundButTabLfAndCrlfAreText) {
  const auto found = FindControlCharacters(std::string_view("a\tb\r\nc\rd\x1b\x7f\xC2\x85\xC2\x9B\xC2\xA0\x00" "e\r", 19));
  ASSERT_EQ(found.size(), 7u);
  EXPECT_EQ(found[0].offset, 6u);  // the lone CR, not the CRLF's
  EXPECT_EQ(found[0].code_point, 0x0Du);
  EXPECT_EQ(found[1].code_point, 0x1Bu);
  EXPECT_EQ(found[1].name, "ESC (escape)");
  EXPECT_EQ(found[2].code_point, 0x7Fu);
  EXPECT_EQ(found[3].code_point, 0x85u);
  EXPECT_EQ(found[3].length, 2u);
  EXPECT_EQ(found[3].name, "NEL (next line)");
  EXPECT_EQ(found[4].code_point, 0x9Bu);
  EXPECT_EQ(found[4].offset, 12u);
  EXPECT_EQ(found[5].code_point, 0x00u);  // U+00A0 NO-BREAK SPACE between them is visible text
  EXPECT_EQ(found[6].code_point, 0x0Du);  // a CR at the very end is lone
}

TEST(HiddenCharacters, EscapesUseFourOrEightHexDigits) {
  EXPECT_EQ(EscapeControlCharacters("a" + Utf8(0x2028) + "b"), "a\\u2028b");
  EXPECT_EQ(EscapeControlCharacters("a" + Utf8(0xFE0F) + "b"), "a\\ufe0fb");
  EXPECT_EQ(EscapeControlCharacters("flag" + Utf8(0xE0067) + Utf8(0xE007F)), "flag\\U000e0067\\U000e007f");
  EXPECT_EQ(MaskForTerminal("x" + Utf8(0xE0041) + "y"), "x????y");
  EXPECT_EQ(MaskForTerminal("x" + Utf8(0x3164) + "y"), "x???y");
}

// Backslashes stay as they are for diagnostics; escaped, a literal "\x1b"
// and a real ESC no longer read the same.
TEST(HiddenCharacters, BackslashesAreEscapedOnlyWhenAsked) {
  EXPECT_EQ(EscapeControlCharacters("a\\x1b \x1b"), "a\\x1b \\x1b");
  EXPECT_EQ(EscapeControlCharacters("a\\x1b \x1b", Backslash::kEscaped), "a\\\\x1b \\x1b");
}

}  // namespace
}  // namespace cocoon
