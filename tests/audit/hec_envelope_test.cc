// UnwrapLine (audit/sink.h): the Splunk HEC envelope around a signed line is
// not covered by the line's hash, so it must be exactly what WrapHec writes;
// anything else is a clean DataLoss error, never an exception.
#include <gtest/gtest.h>

#include <string>

#include "audit/sink.h"

namespace cocoon::audit {
namespace {

constexpr char kEvent[] = R"({"a":1})";

std::string Envelope(const std::string& members) { return std::string(R"({"event":)") + kEvent + "," + members + "}"; }

TEST(HecEnvelope, WhatWrapHecWritesUnwrapsToTheSignedLine) {
  std::string wrapped = WrapHec(kEvent, 1764500000000, "host-1");
  auto inner = UnwrapLine(wrapped);
  ASSERT_TRUE(inner.ok()) << inner.status().ToString();
  EXPECT_EQ(*inner, kEvent);
}

TEST(HecEnvelope, PlainLinesPassThrough) {
  auto inner = UnwrapLine(kEvent);
  ASSERT_TRUE(inner.ok());
  EXPECT_EQ(*inner, kEvent);
}

// Found by audit_verify_fuzzer: "source": 0 made json::value() throw
// type_error.302 out of the verifier. Every member of the wrong type is now
// a DataLoss error.
TEST(HecEnvelope, MembersOfTheWrongTypeAreDataLossNotExceptions) {
  const char* cases[] = {
      R"("host":"h","source":0,"sourcetype":"cocoon:audit","time":"1")",
      R"("host":"h","source":"cocoon","sourcetype":[1],"time":"1")",
      R"("host":7,"source":"cocoon","sourcetype":"cocoon:audit","time":"1")",
      R"("host":"h","source":"cocoon","sourcetype":"cocoon:audit","time":1)",
      R"("host":"h","source":null,"sourcetype":{},"time":"1")",
      R"("host":"h","source":"cocoon","sourcetype":"cocoon:audit","other":"1")",
      R"("host":"h","source":"other","sourcetype":"cocoon:audit","time":"1")",
  };
  for (const char* members : cases) {
    Result<std::string_view> inner = InternalError("not run");
    EXPECT_NO_THROW(inner = UnwrapLine(Envelope(members))) << members;
    ASSERT_FALSE(inner.ok()) << members;
    EXPECT_EQ(inner.status().code(), ErrorCode::kDataLoss) << members;
  }
}

}  // namespace
}  // namespace cocoon::audit
