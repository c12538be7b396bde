#include "compiler/common/status.h"

#include <gtest/gtest.h>

namespace cocoon {
namespace {

Result<int> Half(int x) {
  if (x % 2) return InvalidArgumentError("odd: " + std::to_string(x));
  return x / 2;
}

Result<int> Quarter(int x) {
  COCOON_ASSIGN_OR_RETURN(int half, Half(x));
  COCOON_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

TEST(StatusTest, PropagatesFirstErrorWithContext) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> bad = Quarter(6);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.status().WithContext("quartering").message(), "quartering: odd: 3");
}

TEST(StatusTest, ErrnoMapsToCodes) {
  EXPECT_EQ(ErrnoError("open /x", ENOENT).code(), ErrorCode::kNotFound);
  EXPECT_EQ(ErrnoError("open /x", EACCES).code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(ErrnoError("open /x", ENOENT).message(), "open /x: No such file or directory");
}

}  // namespace
}  // namespace cocoon
