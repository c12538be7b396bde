// The constant tables are written out (the IR must not depend on the host's
// headers); on a glibc host, check them against glibc's own names.
#include <gtest/gtest.h>

#include <cstring>

#include "compiler/frontend/constants.h"

namespace cocoon::frontend {
namespace {

TEST(Constants, NamesTheReviewerFoundMissing) {
  for (const char* name : {"EMSGSIZE", "ESTALE", "EHOSTDOWN", "ENOPROTOOPT", "EILSEQ", "EBADMSG", "ENOTBLK"}) {
    EXPECT_TRUE(LookupErrno(name).has_value()) << name;
  }
  EXPECT_EQ(LookupErrno("EMSGSIZE"), 90);
  EXPECT_EQ(LookupConstant("SIGSEGV"), 11u);
  EXPECT_EQ(LookupConstant("SIGALRM"), 14u);
  EXPECT_EQ(LookupConstant("SIGSYS"), 31u);
  EXPECT_EQ(ErrnoName(11), "EAGAIN");  // not the EWOULDBLOCK alias
  EXPECT_EQ(ErrnoName(35), "EDEADLK");
}

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32)) && \
    (defined(__x86_64__) || defined(__aarch64__))
// Every errno glibc names (1..4095) is in the table with glibc's value.
TEST(Constants, EveryGlibcErrnoNameIsKnown) {
  int named = 0;
  for (int value = 1; value < 4096; ++value) {
    const char* name = strerrorname_np(value);
    if (name == nullptr) continue;
    ++named;
    EXPECT_EQ(LookupErrno(name), value) << name;
  }
  EXPECT_GT(named, 130);
}

TEST(Constants, EveryStandardSignalNameIsKnown) {
  for (int value = 1; value < 32; ++value) {
    const char* abbrev = sigabbrev_np(value);
    ASSERT_NE(abbrev, nullptr) << value;
    EXPECT_EQ(LookupConstant(std::string("SIG") + abbrev), static_cast<uint64_t>(value)) << abbrev;
  }
}
#endif

}  // namespace
}  // namespace cocoon::frontend
