#include "compiler/common/diagnostics.h"

#include <gtest/gtest.h>

namespace cocoon {
namespace {

TEST(DiagnosticsTest, RendersLineAndCaret) {
  auto source = std::make_shared<Source>("policy.cocoon", "profile p {\n  limits { memroy 128MiB }\n}\n");
  Diagnostics diagnostics;
  diagnostics.Error(source, Span{23, 29}, "unknown limit 'memroy'; did you mean 'memory'?");
  EXPECT_EQ(diagnostics.Render(),
            "ERROR: policy.cocoon:2:12: unknown limit 'memroy'; did you mean 'memory'?\n"
            " |   limits { memroy 128MiB }\n"
            " |            ^~~~~~\n");
}

// A long line is echoed as a window of at most 120 columns around the caret,
// "..." marking each cut, the caret still under its text.
TEST(DiagnosticsTest, EchoesAWindowOfALongLineAroundTheCaret) {
  const std::string line = std::string(1000, 'a') + "memroy" + std::string(1000, 'b');
  auto source = std::make_shared<Source>("p.cocoon", line + "\n");
  EXPECT_EQ(RenderDiagnostic({Severity::kError, source, Span{1000, 1006}, "unknown limit 'memroy'", {}, {}}),
            "ERROR: p.cocoon:1:1001: unknown limit 'memroy'\n"
            " | ..." + std::string(40, 'a') + "memroy" + std::string(68, 'b') + "...\n"
            " |    " + std::string(40, ' ') + "^~~~~~");
  // At the start, only the end is cut; at the end, only the start.
  EXPECT_EQ(RenderDiagnostic({Severity::kError, source, Span{0, 1}, "here", {}, {}}),
            "ERROR: p.cocoon:1:1: here\n | " + std::string(117, 'a') + "...\n | ^");
  EXPECT_EQ(RenderDiagnostic({Severity::kError, source, Span{2005, 2006}, "here", {}, {}}),
            "ERROR: p.cocoon:1:2006: here\n | ..." + std::string(41, 'b') + "\n |    " + std::string(40, ' ') + "^");
  // A span running past the window is underlined up to the cut.
  EXPECT_EQ(RenderDiagnostic({Severity::kError, source, Span{0, 2006}, "all", {}, {}}),
            "ERROR: p.cocoon:1:1: all\n | " + std::string(117, 'a') + "...\n | ^" + std::string(116, '~'));
}

// The cut never splits a multi-byte character, and the width counted is what
// the terminal draws (2 columns for each CJK character).
TEST(DiagnosticsTest, WindowOfALongLineKeepsWholeCharacters) {
  const std::string wide = "\u65e5";    // 3 bytes, 2 columns
  const std::string accent = "\u00e9";  // 2 bytes, 1 column
  std::string line = "a";
  for (int i = 0; i < 500; ++i) line += accent;  // starts at odd offsets
  line += "aX";                                   // X at byte 1002: the window would start mid-character
  for (int i = 0; i < 500; ++i) line += wide;
  auto source = std::make_shared<Source>("p.cocoon", line);
  std::string echoed_before_caret;
  for (int i = 0; i < 19; ++i) echoed_before_caret += accent;  // bytes 963..1000
  std::string echoed_after_caret;
  // "..." + 19 + "aX" + 2 * 46 + "..." = 119 columns: a 47th would make 121.
  for (int i = 0; i < 46; ++i) echoed_after_caret += wide;
  EXPECT_EQ(RenderDiagnostic({Severity::kError, source, Span{1002, 1003}, "x", {}, {}}),
            "ERROR: p.cocoon:1:1003: x\n"
            " | ..." + echoed_before_caret + "aX" + echoed_after_caret + "...\n"
            " |    " + std::string(20, ' ') + "^");
}

TEST(DiagnosticsTest, CapsErrorsAndSaysHowManyWereDropped) {
  auto source = std::make_shared<Source>("x", "abc");
  Diagnostics diagnostics(DiagnosticsOptions{.max_errors = 2});
  for (int i = 0; i < 5; ++i) diagnostics.Error(source, Span{0, 1}, "bad");
  EXPECT_EQ(diagnostics.error_count(), 2u);
  EXPECT_EQ(diagnostics.suppressed(), 3u);
  EXPECT_NE(diagnostics.Render().find("3 more error(s) not shown"), std::string::npos);
}

// A note attached to a diagnostic prints right after it, with its own
// position and caret; in JSON it is the next item of the flat list.
TEST(DiagnosticsTest, AttachedNotesFollowTheirDiagnostic) {
  auto source = std::make_shared<Source>("p.cocoon", "profile p {\n}\n}\n");
  Diagnostics diagnostics;
  diagnostics.Error(source, Span{14, 15}, "unmatched '}'");
  diagnostics.AttachNote(0, source, Span{10, 11}, "opened here");
  diagnostics.AttachNote(7, source, Span{0, 1}, "no such diagnostic: dropped");
  EXPECT_EQ(diagnostics.Render(),
            "ERROR: p.cocoon:3:1: unmatched '}'\n"
            " | }\n"
            " | ^\n"
            "NOTE: p.cocoon:1:11: opened here\n"
            " | profile p {\n"
            " |           ^\n");
  const std::string json = diagnostics.RenderJson();
  const size_t error = json.find("\"unmatched '}'\"");
  const size_t note = json.find("\"opened here\"");
  ASSERT_NE(error, std::string::npos) << json;
  ASSERT_NE(note, std::string::npos) << json;
  EXPECT_LT(error, note);
  EXPECT_NE(json.find("\"severity\": \"note\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"errors\": 1"), std::string::npos) << json;
}

TEST(DiagnosticsTest, DidYouMeanFindsCloseWords) {
  std::vector<std::string> words{"memory", "processes", "wall_time"};
  EXPECT_EQ(DidYouMean("memroy", words), "memory");
  EXPECT_EQ(DidYouMean("zzzzzz", words), "");
}

}  // namespace
}  // namespace cocoon
