#include "compiler/backends/seccomp/child_deadline.h"

#include <gtest/gtest.h>

#include <csignal>
#include <stdexcept>

namespace cocoon::backends {
namespace {

using namespace std::chrono_literals;

TEST(ChildDeadline, WorkThatFinishesIsOk) {
  std::string stuck_at = "unchanged";
  const Status s = RunInChildWithDeadline(
      [](const auto& progress) {
        progress("first");
        progress("second");
      },
      2000ms, &stuck_at);
  EXPECT_TRUE(s.ok()) << s.ToString();
}

TEST(ChildDeadline, WorkThatNeverReturnsIsKilledAtTheDeadlineNamingItsStep) {
  std::string stuck_at;
  const auto start = std::chrono::steady_clock::now();
  const Status s = RunInChildWithDeadline(
      [](const auto& progress) {
        progress("fine");
        progress("looping");
        for (volatile bool forever = true; forever;) {
        }
      },
      300ms, &stuck_at);
  EXPECT_EQ(s.code(), ErrorCode::kResourceExhausted) << s.ToString();
  EXPECT_EQ(stuck_at, "looping");
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

// A crash is not a loop: the caller must not blame libseccomp's loop for it.
TEST(ChildDeadline, ACrashOrAnExceptionIsAFailureNotATimeout) {
  std::string stuck_at;
  Status s = RunInChildWithDeadline(
      [](const auto& progress) {
        progress("crashing");
        std::raise(SIGKILL);  // no core dump
      },
      2000ms, &stuck_at);
  EXPECT_EQ(s.code(), ErrorCode::kInternal) << s.ToString();
  EXPECT_NE(s.message().find("signal"), std::string::npos) << s.ToString();
  EXPECT_EQ(stuck_at, "crashing");
  // An exception never unwinds out of the child into the caller's code.
  s = RunInChildWithDeadline(
      [](const auto& progress) {
        progress("throwing");
        throw std::runtime_error("no");
      },
      2000ms, &stuck_at);
  EXPECT_EQ(s.code(), ErrorCode::kInternal) << s.ToString();
  EXPECT_EQ(stuck_at, "throwing");
}

}  // namespace
}  // namespace cocoon::backends
