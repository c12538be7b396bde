// Characters a policy review cannot see: bidirectional controls (the
// "Trojan Source" attack, CVE-2021-42574) reorder what an editor or a diff
// shows, and zero-width characters, variation selectors, tag characters,
// Hangul fillers and line separators hide inside a path or a name, so the
// policy that was approved is not the policy that runs. No policy needs
// them; the parser refuses them wherever they appear, comments included (a
// reordered comment can swallow code on screen), except an emoji's
// presentation selector in a comment or a description (parser.cc,
// IsAllowedPresentationSelector).
#ifndef COCOON_COMPILER_COMMON_HIDDEN_CHARACTERS_H_
#define COCOON_COMPILER_COMMON_HIDDEN_CHARACTERS_H_

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace cocoon {

struct HiddenCharacter {
  size_t offset = 0;  // byte offset of its UTF-8 sequence in the text
  size_t length = 0;  // bytes
  uint32_t code_point = 0;
  std::string_view name;  // "RIGHT-TO-LEFT OVERRIDE"
};

// Every hidden character in valid UTF-8 `text`, in order; a byte-order mark
// at offset 0 is the file's encoding mark, not content, and is skipped.
std::vector<HiddenCharacter> FindHiddenCharacters(std::string_view text);

// Every control character a terminal acts on instead of drawing, in order:
// C0 except TAB and LF, a CR not followed by LF (a lone CR returns the
// cursor, so the rest of the line overprints what came before it), DEL, and
// the C1 controls U+0080..U+009F (CSI, NEL...). `name` says which. The
// parser refuses them like the invisible characters: a comment ending in
// "\x1b[2K\r" erases itself and the line it sits on from a terminal.
std::vector<HiddenCharacter> FindControlCharacters(std::string_view text);

// True when `code_point` is one of the characters FindHiddenCharacters finds.
bool IsHiddenCharacter(uint32_t code_point);

// True when a terminal draws `code_point` as itself: not a C0 control, DEL,
// a C1 control, nor a hidden character. What text for people shows as is;
// everything else is escaped (audit fields, cocoon's own stderr).
bool IsDrawnAsItself(uint32_t code_point);

}  // namespace cocoon

#endif  // COCOON_COMPILER_COMMON_HIDDEN_CHARACTERS_H_
