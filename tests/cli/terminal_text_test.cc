// Sandbox-chosen text on cocoon's own stderr (cli/terminal_text.h). A bidi
// override or a zero-width character in a work-dir file name used to pass
// through as it was and reorder or hide part of cocoon's line.
#include <gtest/gtest.h>

#include "cli/terminal_text.h"

namespace cocoon::cli {
namespace {

TEST(TerminalText, ControlHiddenAndInvalidBytesAreEscaped) {
  EXPECT_EQ(EscapeForTerminal("out/\xe2\x80\xaegpj.exe"), "out/\\xe2\\x80\\xaegpj.exe");
  EXPECT_EQ(EscapeForTerminal("a\xf3\xa0\x81\x81" "b"), "a\\xf3\\xa0\\x81\\x81b");  // U+E0041 TAG
  EXPECT_EQ(EscapeForTerminal("x\x1b[2J\\y\xff"), "x\\x1b[2J\\\\y\\xff");
  EXPECT_EQ(EscapeForTerminal("caf\xc3\xa9 \xe6\x97\xa5"), "caf\xc3\xa9 \xe6\x97\xa5") << "visible text stays";
}

}  // namespace
}  // namespace cocoon::cli
