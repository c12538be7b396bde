// RFC 8785 canonicalisation against the published JCS test vectors
// (cyberphone/json-canonicalization testdata/, copied under data/jcs), plus
// the strict canonical-line scanner the verifier relies on.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "audit/events.h"
#include "audit/jcs.h"

namespace cocoon::audit {
namespace {

std::string ReadData(const std::string& relative) {
  std::ifstream in(std::string(COCOON_AUDIT_TEST_DATA) + "/" + relative, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

class JcsVectorTest : public ::testing::TestWithParam<const char*> {};

TEST_P(JcsVectorTest, MatchesPublishedOutput) {
  std::string name = GetParam();
  std::string input = ReadData("jcs/input/" + name + ".json");
  std::string expected = ReadData("jcs/output/" + name + ".json");
  ASSERT_FALSE(input.empty());
  ASSERT_FALSE(expected.empty());
  auto parsed = nlohmann::json::parse(input);
  auto canonical = Canonicalize(parsed, NumberPolicy::kAny);
  ASSERT_TRUE(canonical.ok()) << canonical.status().ToString();
  EXPECT_EQ(*canonical, expected);
}

INSTANTIATE_TEST_SUITE_P(Published, JcsVectorTest,
                         ::testing::Values("arrays", "french", "structures", "unicode", "values", "weird"));

// Sample lines from the JCS testdata README (ES6 number serialisation).
TEST(JcsNumbers, EcmaScriptForm) {
  struct Row { uint64_t bits; const char* expected; };
  const Row rows[] = {
      {0x4340000000000001, "9007199254740994"}, {0x4340000000000002, "9007199254740996"},
      {0x444b1ae4d6e2ef50, "1e+21"},           {0x3eb0c6f7a0b5ed8d, "0.000001"},
      {0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"}, {0x8000000000000000, "0"},
      {0x0, "0"},
  };
  for (const auto& row : rows) {
    double value;
    std::memcpy(&value, &row.bits, sizeof value);
    EXPECT_EQ(FormatEcmaScriptNumber(value), row.expected) << std::hex << row.bits;
  }
}

TEST(JcsAudit, IntegersOnlyRejectsFloatsAndUnsafeIntegers) {
  EXPECT_FALSE(Canonicalize(nlohmann::json{{"a", 1.5}}).ok());
  EXPECT_FALSE(Canonicalize(nlohmann::json{{"a", 9007199254740992ULL}}).ok());
  EXPECT_TRUE(Canonicalize(nlohmann::json{{"a", 9007199254740991ULL}}).ok());
}

TEST(JcsAudit, InvalidUtf8IsReplacedNotThrown) {
  nlohmann::json value = {{"out", std::string("ok\xff\xfe bad \xc3")}};
  auto canonical = Canonicalize(value);
  ASSERT_TRUE(canonical.ok());
  EXPECT_EQ(*canonical, "{\"out\":\"ok\xEF\xBF\xBD\xEF\xBF\xBD bad \xEF\xBF\xBD\"}");
  EXPECT_TRUE(ScanCanonicalLine(*canonical).ok());
  EXPECT_EQ(SanitizeUtf8("a\xe2\x82\xac\x80", 4), "a\xe2\x82\xac");
  EXPECT_EQ(SanitizeUtf8("a\xe2\x82\xac", 3), "a");  // never cuts a sequence
}

TEST(JcsScanner, AcceptsWhatCanonicalizeWrites) {
  nlohmann::json value = {{"b", {1, -2, "x\ny\u0001\"\\"}}, {"a", {{"z", nullptr}, {"y", true}}},
                          {"cocoon", {{"integrity", {{"chain", "c"}, {"v", 1}}}}}};
  auto canonical = Canonicalize(value);
  ASSERT_TRUE(canonical.ok());
  auto scanned = ScanCanonicalLine(*canonical);
  ASSERT_TRUE(scanned.ok()) << scanned.status().ToString();
  ASSERT_TRUE(scanned->has_integrity);
  ASSERT_EQ(scanned->integrity.size(), 2u);
  EXPECT_EQ(scanned->integrity[0].key, "chain");
  EXPECT_EQ(scanned->integrity[0].raw_value, "\"c\"");
  EXPECT_TRUE(scanned->integrity[0].followed_by_comma);
}

TEST(JcsScanner, RejectsEveryNonCanonicalSpelling) {
  const char* rejected[] = {
      "{\"a\": 1}",              // whitespace
      "{\"b\":1,\"a\":2}",       // unsorted
      "{\"a\":1,\"a\":2}",       // duplicate
      "{\"a\":1.0}",             // float
      "{\"a\":1e3}",             // exponent
      "{\"a\":-0}",              // negative zero
      "{\"a\":01}",              // leading zero
      "{\"a\":9007199254740992}",  // beyond 2^53-1
      "{\"a\":\"\\u0041\"}",     // needless \u escape
      "{\"a\":\"\\u001F\"}",     // upper-case hex
      "{\"a\":\"\\u000a\"}",     // \n has a short form
      "{\"a\":\"\\/\"}",         // escaped solidus
      "{\"a\":\"\x01\"}",        // raw control
      "{\"a\":\"\xff\"}",        // invalid UTF-8
      "{\"a\":\"\xed\xa0\x80\"}",  // surrogate in UTF-8
      "{\"\xc3\xa9\":1}",        // non-ASCII key
      "{\"a\":1}x",              // trailing bytes
      "[1]",                     // not an object
      "{\"a\":tru}",
      "{\"cocoon\":{\"integrity\":{\"a\":{}}}}",  // integrity must be flat
  };
  for (const char* line : rejected) EXPECT_FALSE(ScanCanonicalLine(line).ok()) << line;
  EXPECT_TRUE(ScanCanonicalLine("{\"a\":\"\\u001f\\n\",\"b\":[]}").ok());
}

TEST(JcsScanner, DepthIsBounded) {
  std::string deep = "{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}";
  EXPECT_FALSE(ScanCanonicalLine(deep).ok());
}

// The scanner skips plain string and key bytes eight at a time. Put every
// byte value at every offset of a 40-byte string (so each lands in every lane
// of a word, in the word-wise and the byte-wise loop) and check the scanner's
// verdict against the DOM reference: accepted exactly when nlohmann parses the
// line and Canonicalize() gives back the same bytes.
bool ReferenceAccepts(const std::string& line) {
  auto parsed = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object()) return false;
  auto canonical = Canonicalize(parsed);
  return canonical.ok() && *canonical == line;
}

TEST(JcsScanner, WordSkipAgreesWithTheReferenceForEveryByteAndOffset) {
  const std::string plain = "abcdefghijklmnopqrstuvwxyz0123456789ABCD";
  for (size_t at = 0; at < plain.size(); ++at) {
    for (int byte = 0; byte < 256; ++byte) {
      std::string value = plain;
      value[at] = static_cast<char>(byte);
      std::string in_string = "{\"k\":\"" + value + "\"}";
      EXPECT_EQ(ScanCanonicalLine(in_string).ok(), ReferenceAccepts(in_string)) << "string, byte " << byte << " at " << at;
      std::string in_key = "{\"" + value + "\":1}";
      // Keys are stricter than JCS: printable ASCII only (no DEL, no escapes).
      bool key_ok = byte >= 0x20 && byte <= 0x7E && byte != '"' && byte != '\\';
      EXPECT_EQ(ScanCanonicalLine(in_key).ok(), key_ok) << "key, byte " << byte << " at " << at;
    }
  }
}

TEST(JcsScanner, MultiByteUtf8AndEscapesAtEveryOffset) {
  const std::string plain(24, 'x');
  for (std::string piece : {"\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\\n", "\\u001f", "\\\"",
                            "\xc3", "\xe2\x82", "\\u0041", "\\/"}) {
    for (size_t at = 0; at <= plain.size(); ++at) {
      std::string line = "{\"k\":\"" + plain.substr(0, at) + piece + plain.substr(at) + "\"}";
      EXPECT_EQ(ScanCanonicalLine(line).ok(), ReferenceAccepts(line)) << line;
    }
  }
}

TEST(JcsScanner, ReusedResultIsResetForEachLine) {
  ScannedLine scanned;
  ASSERT_TRUE(ScanCanonicalLine("{\"cocoon\":{\"integrity\":{\"a\":1,\"b\":\"x\"}}}", scanned).ok());
  EXPECT_TRUE(scanned.has_integrity);
  ASSERT_EQ(scanned.integrity.size(), 2u);
  EXPECT_EQ(scanned.integrity[1].raw_value, "\"x\"");
  ASSERT_TRUE(ScanCanonicalLine("{\"a\":1}", scanned).ok());
  EXPECT_FALSE(scanned.has_integrity);
  EXPECT_TRUE(scanned.integrity.empty());
  EXPECT_FALSE(ScanCanonicalLine("{\"cocoon\":{\"integrity\":{\"a\":1}}} ", scanned).ok());
  ASSERT_TRUE(ScanCanonicalLine("{\"cocoon\":{\"integrity\":{\"c\":2}}}", scanned).ok());
  ASSERT_EQ(scanned.integrity.size(), 1u);
  EXPECT_EQ(scanned.integrity[0].key, "c");
}

TEST(JcsScanner, KeyOrderIsByteOrder) {
  EXPECT_TRUE(ScanCanonicalLine("{\"a\":1,\"ab\":2,\"b\":3}").ok());
  EXPECT_FALSE(ScanCanonicalLine("{\"ab\":1,\"a\":2}").ok());   // prefix after the longer key
  EXPECT_FALSE(ScanCanonicalLine("{\"a\":1,\"a\":2}").ok());    // duplicate
  EXPECT_FALSE(ScanCanonicalLine("{\"b\":1,\"a\":2}").ok());
  EXPECT_FALSE(ScanCanonicalLine("{\"a~\":1,\"a \":2}").ok());  // 0x7E before 0x20
}

}  // namespace
}  // namespace cocoon::audit
