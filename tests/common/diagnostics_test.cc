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

TEST(DiagnosticsTest, CapsErrorsAndSaysHowManyWereDropped) {
  auto source = std::make_shared<Source>("x", "abc");
  Diagnostics diagnostics(DiagnosticsOptions{.max_errors = 2});
  for (int i = 0; i < 5; ++i) diagnostics.Error(source, Span{0, 1}, "bad");
  EXPECT_EQ(diagnostics.error_count(), 2u);
  EXPECT_EQ(diagnostics.suppressed(), 3u);
  EXPECT_NE(diagnostics.Render().find("3 more error(s) not shown"), std::string::npos);
}

TEST(DiagnosticsTest, DidYouMeanFindsCloseWords) {
  std::vector<std::string> words{"memory", "processes", "wall_time"};
  EXPECT_EQ(DidYouMean("memroy", words), "memory");
  EXPECT_EQ(DidYouMean("zzzzzz", words), "");
}

}  // namespace
}  // namespace cocoon
