#include "compiler/frontend/units.h"

#include <gtest/gtest.h>

namespace cocoon::frontend {
namespace {

TEST(Units, Times) {
  EXPECT_EQ(ParseUnitValue("5s", UnitKind::kTime).value, 5000u);
  EXPECT_EQ(ParseUnitValue("2m", UnitKind::kTime).value, 120000u);
  EXPECT_EQ(ParseUnitValue("250ms", UnitKind::kTime).value, 250u);
  EXPECT_EQ(ParseUnitValue("1.5h", UnitKind::kTime).value, 5400000u);
  EXPECT_FALSE(ParseUnitValue("5", UnitKind::kTime).ok);
  EXPECT_FALSE(ParseUnitValue("5GiB", UnitKind::kTime).ok);
  EXPECT_EQ(ParseUnitValue("0.1s", UnitKind::kTime).value, 100u);
  // Not silently rounded to 1 ms: the IR counts whole milliseconds.
  UnitValue half = ParseUnitValue("0.5ms", UnitKind::kTime);
  EXPECT_FALSE(half.ok);
  EXPECT_EQ(half.error, "'0.5ms' is not a whole number of milliseconds");
}

TEST(Units, Sizes) {
  EXPECT_EQ(ParseUnitValue("128MiB", UnitKind::kSize).value, 128ull << 20);
  EXPECT_EQ(ParseUnitValue("1GiB", UnitKind::kSize).value, 1ull << 30);
  EXPECT_EQ(ParseUnitValue("1GB", UnitKind::kSize).value, 1000000000u);
  EXPECT_EQ(ParseUnitValue("0", UnitKind::kSize).value, 0u);
  UnitValue bad = ParseUnitValue("1Gb", UnitKind::kSize);
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.hint, "did you mean '1GiB'?");
  EXPECT_FALSE(ParseUnitValue("99999999999TiB", UnitKind::kSize).ok);
  EXPECT_EQ(ParseUnitValue("1.5KiB", UnitKind::kSize).value, 1536u);
  EXPECT_FALSE(ParseUnitValue("0.3KiB", UnitKind::kSize).ok);
}

// Exact decimal arithmetic: a fraction of a millisecond or of a byte is an
// error however large the number (a relative tolerance let 1000000.4ms by).
TEST(Units, FractionsOfTheBaseUnitAreRefusedAtAnyMagnitude) {
  EXPECT_EQ(ParseUnitValue("1000000.4ms", UnitKind::kTime).error,
            "'1000000.4ms' is not a whole number of milliseconds");
  EXPECT_EQ(ParseUnitValue("1048576.4B", UnitKind::kSize).error, "'1048576.4B' is not a whole number of bytes");
  EXPECT_FALSE(ParseUnitValue("1.0000001KiB", UnitKind::kSize).ok);
  EXPECT_EQ(ParseUnitValue("1.000000000000000000001s", UnitKind::kTime).error,
            "'1.000000000000000000001s' has too many decimals");
  EXPECT_EQ(ParseUnitValue("1048576.0B", UnitKind::kSize).value, 1048576u);
  EXPECT_EQ(ParseUnitValue("0.001s", UnitKind::kTime).value, 1u);
  EXPECT_EQ(ParseUnitValue("17000000TiB", UnitKind::kSize).error, "'17000000TiB' is too large");
}

// 'B' is a hex digit, so 0x100000B is one hexadecimal number, not 0x100000
// bytes: said so, rather than "missing unit".
TEST(Units, AHexadecimalNumberTakesNoUnit) {
  UnitValue bytes = ParseUnitValue("0x100000B", UnitKind::kSize);
  EXPECT_EQ(bytes.error, "a hexadecimal number takes no unit; expected a size such as 64KiB, 128MiB or 1GiB");
  EXPECT_EQ(bytes.hint, "for 0x100000 bytes, write 1048576B");
  EXPECT_EQ(ParseUnitValue("0x10", UnitKind::kCount).value, 16u);
}

// With no unit at all, a hexadecimal number lacks one: it was told it
// "takes no unit", which it has none of.
TEST(Units, AHexadecimalNumberWithoutAUnitIsMissingOne) {
  UnitValue size = ParseUnitValue("0x40000000", UnitKind::kSize);
  EXPECT_EQ(size.error, "missing unit after '0x40000000'; expected a size such as 64KiB, 128MiB or 1GiB");
  EXPECT_EQ(size.hint, "for 0x40000000 bytes, write 1GiB");
  EXPECT_EQ(ParseUnitValue("0x180000", UnitKind::kSize).hint, "for 0x180000 bytes, write 1536KiB");
  EXPECT_EQ(ParseUnitValue("0x11", UnitKind::kSize).hint, "for 0x11 bytes, write 17B");
  UnitValue time = ParseUnitValue("0x10", UnitKind::kTime);
  EXPECT_EQ(time.error, "missing unit after '0x10'; expected a duration such as 500ms, 5s, 2m or 1h");
  EXPECT_EQ(time.hint, "write the value in decimal, with its unit: such as 16s");
  EXPECT_EQ(ParseUnitValue("0x40", UnitKind::kPercent).hint, "write 64%");
}

// A suggested unit keeps the magnitude the author wrote: 128M is 128MiB,
// not 128B; 5M of wall time is five minutes, not 5s; 8d is hours.
TEST(Units, ASuggestedUnitKeepsTheMagnitude) {
  const std::pair<const char*, const char*> sizes[] = {
      {"128M", "did you mean '128MiB'?"}, {"128m", "did you mean '128MiB'?"}, {"128MB", ""},
      {"128mb", "did you mean '128MiB'?"}, {"1G", "did you mean '1GiB'?"},    {"1g", "did you mean '1GiB'?"},
      {"4k", "did you mean '4KiB'?"},     {"2T", "did you mean '2TiB'?"},     {"2Mib", "did you mean '2MiB'?"},
      {"2gigabytes", "did you mean '2GiB'?"}, {"2MiBs", "did you mean '2MiB'?"}, {"64bytes", "did you mean '64B'?"},
      {"5x", ""},                          {"5Q", ""}};
  for (const auto& [text, hint] : sizes) {
    UnitValue v = ParseUnitValue(text, UnitKind::kSize);
    if (std::string(text) == "128MB") {
      EXPECT_TRUE(v.ok);  // 1000-based, and valid
      continue;
    }
    EXPECT_FALSE(v.ok) << text;
    EXPECT_EQ(v.hint, hint) << text;
  }
  const std::pair<const char*, const char*> times[] = {
      {"5M", "did you mean '5m'?"},    {"5sec", "did you mean '5s'?"},   {"5S", "did you mean '5s'?"},
      {"5mins", "did you mean '5m'?"}, {"5Min", "did you mean '5min'?"}, {"5MS", "did you mean '5ms'?"},
      {"2hrs", "did you mean '2h'?"},  {"2d", "did you mean '48h'? (there is no unit for days)"},
      {"1.5d", "did you mean '36h'? (there is no unit for days)"},
      {"1w", "did you mean '168h'? (there is no unit for weeks)"},
      {"0.01d", "did you mean '864s'? (there is no unit for days)"},
      {"5us", ""}, {"5mx", ""}, {"5x", ""}};
  for (const auto& [text, hint] : times) {
    UnitValue v = ParseUnitValue(text, UnitKind::kTime);
    EXPECT_FALSE(v.ok) << text;
    EXPECT_EQ(v.hint, hint) << text;
  }
  // The limit's maximum, when given, is said rather than a value above it.
  EXPECT_EQ(ParseUnitValue("8d", UnitKind::kTime, 7 * 24 * 3600 * 1000ull).hint,
            "there is no unit for days; 8d is more than the maximum, 168h");
  // A unit of the other kind, written for its letter's magnitude: 128m of memory.
  UnitValue memory = ParseUnitValue("128m", UnitKind::kSize);
  EXPECT_EQ(memory.error, "'128m' is not a size such as 64KiB, 128MiB or 1GiB");
  EXPECT_EQ(memory.hint, "did you mean '128MiB'?");
  EXPECT_EQ(ParseUnitValue("50pct", UnitKind::kPercent).hint, "did you mean '50%'?");
}

// 0x40MiB and 0x10s lex as one QUANTITY: the hint gives the decimal value
// with the unit, when the unit is one of the right kind.
TEST(Units, AHexadecimalNumberWithAUnitSaysWhatToWrite) {
  UnitValue size = ParseUnitValue("0x40MiB", UnitKind::kSize);
  EXPECT_EQ(size.error, "a hexadecimal number takes no unit; expected a size such as 64KiB, 128MiB or 1GiB");
  EXPECT_EQ(size.hint, "write 64MiB");
  EXPECT_EQ(ParseUnitValue("0X1fs", UnitKind::kTime).hint, "write 31s");
  EXPECT_EQ(ParseUnitValue("0x40%", UnitKind::kPercent).hint, "write 64%");
  EXPECT_EQ(ParseUnitValue("0x10s", UnitKind::kSize).hint, "write the value in decimal, with its unit");
  EXPECT_EQ(ParseUnitValue("0x40Mib", UnitKind::kSize).hint, "write the value in decimal, with its unit");
  EXPECT_EQ(ParseUnitValue("0x10000000000000000MiB", UnitKind::kSize).hint,
            "write the value in decimal, with its unit");
  UnitValue count = ParseUnitValue("0x10s", UnitKind::kCount);
  EXPECT_EQ(count.error, "'0x10s' has a unit; expected a plain number");
  EXPECT_EQ(count.hint, "write 0x10");
  EXPECT_EQ(HexWithUnitHint("0x40", "MiB"), "write 64MiB");
}

TEST(Units, AFractionWithoutAUnit) {
  EXPECT_EQ(ParseUnitValue("1.5", UnitKind::kSize).error,
            "missing unit after '1.5'; expected a size such as 64KiB, 128MiB or 1GiB");
  EXPECT_EQ(ParseUnitValue("0.5", UnitKind::kTime).error,
            "missing unit after '0.5'; expected a duration such as 500ms, 5s, 2m or 1h");
  UnitValue count = ParseUnitValue("1.5", UnitKind::kCount);
  EXPECT_EQ(count.error, "'1.5' is not a whole number; expected a plain number");
  EXPECT_EQ(count.hint, "write 1 or 2");
  EXPECT_EQ(ParseUnitValue("2.5", UnitKind::kPercent).hint, "write 2% or 3%");
  EXPECT_EQ(ParseUnitValue("1.2.3", UnitKind::kSize).error, "'1.2.3' is not a number");
}

TEST(Units, PercentAndCount) {
  EXPECT_EQ(ParseUnitValue("95%", UnitKind::kPercent).value, 95u);
  EXPECT_FALSE(ParseUnitValue("9.5%", UnitKind::kPercent).ok);
  EXPECT_EQ(ParseUnitValue("32", UnitKind::kCount).value, 32u);
  EXPECT_FALSE(ParseUnitValue("32s", UnitKind::kCount).ok);
  EXPECT_FALSE(ParseUnitValue("99999999999999999999999", UnitKind::kCount).ok);
}

TEST(Units, Formatting) {
  EXPECT_EQ(FormatDuration(5000), "5 s");
  EXPECT_EQ(FormatDuration(300000), "5 min");
  EXPECT_EQ(FormatBytes(128ull << 20), "128 MiB");
  EXPECT_EQ(FormatBytes(1ull << 30), "1 GiB");
}

}  // namespace
}  // namespace cocoon::frontend
