#include "compiler/frontend/units.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <initializer_list>
#include <limits>
#include <vector>

#include "compiler/common/diagnostics.h"

namespace cocoon::frontend {
namespace {

struct Unit {
  std::string_view name;
  UnitKind kind;
  uint64_t scale;  // in ms, bytes or percent
};

constexpr uint64_t kKi = 1024;
const Unit kUnits[] = {
    {"ms", UnitKind::kTime, 1},
    {"s", UnitKind::kTime, 1000},
    {"m", UnitKind::kTime, 60 * 1000},
    {"min", UnitKind::kTime, 60 * 1000},
    {"h", UnitKind::kTime, 3600 * 1000},
    {"B", UnitKind::kSize, 1},
    {"KiB", UnitKind::kSize, kKi},
    {"MiB", UnitKind::kSize, kKi * kKi},
    {"GiB", UnitKind::kSize, kKi * kKi * kKi},
    {"TiB", UnitKind::kSize, kKi * kKi * kKi * kKi},
    {"KB", UnitKind::kSize, 1000},
    {"MB", UnitKind::kSize, 1000 * 1000},
    {"GB", UnitKind::kSize, 1000 * 1000 * 1000},
    {"TB", UnitKind::kSize, 1000ull * 1000 * 1000 * 1000},
    {"%", UnitKind::kPercent, 1},
};

std::string_view KindWord(UnitKind kind) {
  switch (kind) {
    case UnitKind::kTime: return "a duration such as 500ms, 5s, 2m or 1h";
    case UnitKind::kSize: return "a size such as 64KiB, 128MiB or 1GiB";
    case UnitKind::kPercent: return "a percentage such as 50% or 200%";
    case UnitKind::kCount: return "a plain number";
  }
  return "";
}

UnitValue Fail(std::string error, std::string hint = {}) {
  UnitValue v;
  v.error = std::move(error);
  v.hint = std::move(hint);
  return v;
}

}  // namespace

namespace {

// Decimal or 0x-hex digits, whatever their value: what ParseInteger refuses
// only because it overflows 64 bits.
bool IsIntegerSyntax(std::string_view text) {
  const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  if (hex) text.remove_prefix(2);
  return !text.empty() && std::all_of(text.begin(), text.end(), [hex](char c) {
    return hex ? std::isxdigit(static_cast<unsigned char>(c)) != 0 : (c >= '0' && c <= '9');
  });
}

// `processes 1.5`, `memory 1.5`: a duration or a size needs its unit, as
// `memory 128` does; a count or a percentage is a whole number.
UnitValue FractionWithoutUnit(std::string_view text, UnitKind kind) {
  const std::string written(text);
  if (kind == UnitKind::kTime || kind == UnitKind::kSize) {
    return Fail("missing unit after '" + written + "'; expected " + std::string(KindWord(kind)));
  }
  uint64_t whole = 0;
  std::string hint;
  if (ParseInteger(text.substr(0, text.find('.')), whole) && whole < std::numeric_limits<uint64_t>::max()) {
    const std::string unit = kind == UnitKind::kPercent ? "%" : "";
    hint = "write " + std::to_string(whole) + unit + " or " + std::to_string(whole + 1) + unit;
  }
  return Fail("'" + written + "' is not a whole number; expected " + std::string(KindWord(kind)), hint);
}

std::string LowerCase(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool OneOf(std::string_view word, std::initializer_list<std::string_view> words) {
  return std::find(words.begin(), words.end(), word) != words.end();
}

// `ms` as the largest unit it is a whole number of: 192h, 90m, 1500ms.
std::string ExactDuration(uint64_t ms) {
  if (ms % (3600 * 1000) == 0) return std::to_string(ms / (3600 * 1000)) + "h";
  if (ms % (60 * 1000) == 0) return std::to_string(ms / (60 * 1000)) + "m";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

// `bytes` as the largest binary unit it is a whole number of: 1GiB, 1536KiB.
std::string ExactSize(uint64_t bytes) {
  static constexpr std::string_view kNames[] = {"TiB", "GiB", "MiB", "KiB"};
  for (size_t i = 0; i < 4; ++i) {
    const uint64_t scale = kKi << (10 * (3 - i));
    if (bytes != 0 && bytes % scale == 0) return std::to_string(bytes / scale) + std::string(kNames[i]);
  }
  return std::to_string(bytes) + "B";
}

// The unit a misspelt one stands for, of the same magnitude: M, mb, Mib and
// megabytes are MiB; sec is s; M for a duration is minutes. Empty when no
// unit of that magnitude is clear: a suggestion never changes the value by
// orders of magnitude (128M once got "did you mean '128B'?").
std::string_view SameMagnitudeUnit(std::string_view unit, UnitKind kind) {
  const std::string u = LowerCase(unit);
  if (kind == UnitKind::kSize) {
    if (OneOf(u, {"b", "byte", "bytes"})) return "B";
    if (OneOf(u, {"k", "kb", "ki", "kib", "kilobyte", "kilobytes", "kibibyte", "kibibytes"})) return "KiB";
    if (OneOf(u, {"m", "mb", "mi", "mib", "meg", "megs", "megabyte", "megabytes", "mebibyte", "mebibytes"})) {
      return "MiB";
    }
    if (OneOf(u, {"g", "gb", "gi", "gib", "gig", "gigs", "gigabyte", "gigabytes", "gibibyte", "gibibytes"})) {
      return "GiB";
    }
    if (OneOf(u, {"t", "tb", "ti", "tib", "terabyte", "terabytes", "tebibyte", "tebibytes"})) return "TiB";
  } else if (kind == UnitKind::kTime) {
    if (OneOf(u, {"ms", "msec", "msecs", "millisecond", "milliseconds"})) return "ms";
    if (OneOf(u, {"s", "sec", "secs", "second", "seconds"})) return "s";
    if (OneOf(u, {"m", "mn", "mins", "minute", "minutes"})) return "m";
    if (u == "min") return "min";
    if (OneOf(u, {"h", "hr", "hrs", "hour", "hours"})) return "h";
  } else if (kind == UnitKind::kPercent) {
    if (OneOf(u, {"pc", "pct", "percent", "per-cent"})) return "%";
  }
  return {};
}

// "did you mean '128MiB'?" for a unit that is not one, or empty. Days and
// weeks, which have no unit, are given in hours (8d: '192h').
std::string UnitSuggestion(std::string_view number, std::string_view unit, UnitKind kind,
                           const std::vector<std::string>& candidates, uint64_t max) {
  std::string fixed(SameMagnitudeUnit(unit, kind));
  if (fixed.empty() && kind == UnitKind::kTime) {
    const std::string u = LowerCase(unit);
    const uint64_t hours = OneOf(u, {"d", "day", "days"})        ? 24
                           : OneOf(u, {"w", "wk", "week", "weeks"}) ? 7 * 24
                                                                    : 0;
    const UnitValue in_hours = hours == 0 ? UnitValue{} : ParseUnitValue(std::string(number) + "h", kind);
    const std::string_view what = hours == 24 ? "days" : "weeks";
    if (in_hours.ok && in_hours.value <= max / hours) {
      return "did you mean '" + ExactDuration(in_hours.value * hours) + "'? (there is no unit for " +
             std::string(what) + ")";
    }
    if (in_hours.ok) {
      return "there is no unit for " + std::string(what) + "; " + std::string(number) + std::string(unit) +
             " is more than the maximum, " + ExactDuration(max);
    }
  }
  if (fixed.empty()) {
    // A near spelling (MiBs, sx), kept only when it starts with the same
    // letter, the letter that gives the magnitude; 'm' is ms or minutes.
    const std::string near = DidYouMean(unit, candidates);
    const char first = static_cast<char>(std::tolower(static_cast<unsigned char>(unit.front())));
    if (!near.empty() && std::tolower(static_cast<unsigned char>(near.front())) == first &&
        !(kind == UnitKind::kTime && first == 'm')) {
      fixed = near;
    }
  }
  return fixed.empty() ? std::string() : "did you mean '" + std::string(number) + fixed + "'?";
}

// `memory 0x40000000`: a hexadecimal number with no unit (not one with a
// unit: 0x40MiB). The hint gives the value in decimal with its unit; a size
// is taken as bytes.
UnitValue HexWithoutUnit(std::string_view text, uint64_t n, UnitKind kind) {
  std::string hint;
  switch (kind) {
    case UnitKind::kSize: hint = "for " + std::string(text) + " bytes, write " + ExactSize(n); break;
    case UnitKind::kTime: hint = "write the value in decimal, with its unit: such as " + std::to_string(n) + "s"; break;
    case UnitKind::kPercent: hint = "write " + std::to_string(n) + "%"; break;
    case UnitKind::kCount: break;
  }
  return Fail("missing unit after '" + std::string(text) + "'; expected " + std::string(KindWord(kind)), hint);
}

}  // namespace

bool IsDecimalFraction(std::string_view text) {
  const size_t point = text.find('.');
  auto all_digits = [](std::string_view part) {
    return !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  return point != std::string_view::npos && all_digits(text.substr(0, point)) && all_digits(text.substr(point + 1));
}

bool IsDigitsAndPoints(std::string_view text) {
  return text.find('.') != std::string_view::npos &&
         std::all_of(text.begin(), text.end(), [](char c) { return c == '.' || (c >= '0' && c <= '9'); });
}

std::string QuantityForUnitWord(std::string_view number, std::string_view word, UnitKind kind) {
  const bool digits = !number.empty() && std::all_of(number.begin(), number.end(), [](char c) {
    return c >= '0' && c <= '9';
  });
  if (word.empty() || !(digits || IsDecimalFraction(number))) return {};
  if (const std::string_view unit = SameMagnitudeUnit(word, kind); !unit.empty()) {
    return std::string(number) + std::string(unit);
  }
  const std::string u = LowerCase(word);
  const uint64_t hours = kind != UnitKind::kTime                   ? 0
                         : OneOf(u, {"d", "day", "days"})          ? 24
                         : OneOf(u, {"w", "wk", "week", "weeks"}) ? 7 * 24
                                                                  : 0;
  const UnitValue in_hours = hours == 0 ? UnitValue{} : ParseUnitValue(std::string(number) + "h", kind);
  if (!in_hours.ok || in_hours.value > std::numeric_limits<uint64_t>::max() / hours) return {};
  return ExactDuration(in_hours.value * hours);
}

bool IsUnitName(std::string_view word) {
  return std::any_of(std::begin(kUnits), std::end(kUnits), [word](const Unit& unit) { return unit.name == word; });
}

bool ParseInteger(std::string_view text, uint64_t& out) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
    base = 16;
  }
  if (text.empty()) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out, base);
  return ec == std::errc() && end == text.data() + text.size();
}

std::string HexWithUnitHint(std::string_view hex, std::string_view unit) {
  uint64_t value = 0;
  if (!IsUnitName(unit) || !ParseInteger(hex, value)) return "write the value in decimal, with its unit";
  return "write " + std::to_string(value) + std::string(unit);
}

UnitValue ParseUnitValue(std::string_view text, UnitKind kind, uint64_t max) {
  size_t digits = 0;
  while (digits < text.size() && ((text[digits] >= '0' && text[digits] <= '9') || text[digits] == '.')) ++digits;
  std::string_view number = text.substr(0, digits);
  std::string_view unit = text.substr(digits);
  const bool hex = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  if (hex) {
    // 0x40MiB: the hex digits, then what follows them (the lexer makes one
    // QUANTITY of both, grammar/CocoonLexer.g4).
    const size_t end = std::find_if(text.begin() + 2, text.end(),
                                    [](char c) { return std::isxdigit(static_cast<unsigned char>(c)) == 0; }) -
                       text.begin();
    const std::string_view hex_number = text.substr(0, end);
    const std::string_view suffix = text.substr(end);
    if (!suffix.empty() && end > 2) {
      if (kind == UnitKind::kCount) {
        return Fail("'" + std::string(text) + "' has a unit; expected " + std::string(KindWord(kind)),
                    "write " + std::string(hex_number));
      }
      const Unit* found = std::find_if(std::begin(kUnits), std::end(kUnits),
                                       [suffix](const Unit& u) { return u.name == suffix; });
      return Fail("a hexadecimal number takes no unit; expected " + std::string(KindWord(kind)),
                  found != std::end(kUnits) && found->kind == kind ? HexWithUnitHint(hex_number, suffix)
                                                                   : "write the value in decimal, with its unit");
    }
  }
  if (unit.empty() || hex) {
    uint64_t n = 0;
    if (!ParseInteger(text, n)) {
      // 1.5 with no unit: a fraction is never a count, and a duration or
      // size needs its unit whatever the number.
      if (!hex && IsDecimalFraction(text)) return FractionWithoutUnit(text, kind);
      return Fail("'" + std::string(text) + "' is " + (IsIntegerSyntax(text) ? "too large" : "not a number"));
    }
    if (kind == UnitKind::kCount || n == 0) return UnitValue{true, n, {}, {}};
    if (hex) {  // 'B' is a hex digit: 0x100000B is one number
      uint64_t bytes = 0;
      const bool ends_in_b = kind == UnitKind::kSize && (text.back() == 'B' || text.back() == 'b') &&
                             ParseInteger(text.substr(0, text.size() - 1), bytes);
      if (!ends_in_b) return HexWithoutUnit(text, n, kind);
      return Fail("a hexadecimal number takes no unit; expected " + std::string(KindWord(kind)),
                  "for " + std::string(text.substr(0, text.size() - 1)) + " bytes, write " +
                      std::to_string(bytes) + "B");
    }
    return Fail("missing unit after '" + std::string(text) + "'; expected " + std::string(KindWord(kind)));
  }
  std::vector<std::string> candidates;
  const Unit* found = nullptr;
  for (const Unit& u : kUnits) {
    if (u.kind == kind) candidates.emplace_back(u.name);
    if (u.name == unit) found = &u;
  }
  if (kind == UnitKind::kCount) {
    return Fail("'" + std::string(text) + "' has a unit; expected " + std::string(KindWord(kind)));
  }
  if (found == nullptr) {
    return Fail("unknown unit '" + std::string(unit) + "'; expected " + std::string(KindWord(kind)),
                UnitSuggestion(number, unit, kind, candidates, max));
  }
  if (found->kind != kind) {
    // `memory 128m`: m is minutes, and 128m of memory is 128MiB.
    const std::string_view fixed = SameMagnitudeUnit(unit, kind);
    return Fail("'" + std::string(text) + "' is not " + std::string(KindWord(kind)),
                fixed.empty() ? "" : "did you mean '" + std::string(number) + std::string(fixed) + "'?");
  }
  // In exact decimal: 1000000.4ms is not 1000000 ms within a tolerance,
  // it is not a whole number of milliseconds (the IR counts whole ms and
  // bytes), and is refused rather than rounded.
  const size_t point = number.find('.');
  const std::string_view whole = number.substr(0, point);
  const std::string_view fraction = point == std::string_view::npos ? std::string_view() : number.substr(point + 1);
  uint64_t whole_value = 0, fraction_value = 0;
  if (whole.empty() || !ParseInteger(whole, whole_value) || number.find('.', point + 1) != std::string_view::npos ||
      (point != std::string_view::npos && (fraction.empty() || !ParseInteger(fraction, fraction_value)))) {
    return Fail("'" + std::string(number) + "' is not a number");
  }
  if (kind == UnitKind::kPercent && fraction_value != 0) {
    return Fail("percentages are whole numbers", "write " + std::string(whole) + "%");
  }
  // Bounds the products below to 128 bits.
  if (fraction.size() > 19) return Fail("'" + std::string(text) + "' has too many decimals");
  if (whole_value > std::numeric_limits<uint64_t>::max() / found->scale) {
    return Fail("'" + std::string(text) + "' is too large");
  }
  unsigned __int128 denominator = 1;
  for (size_t i = 0; i < fraction.size(); ++i) denominator *= 10;
  const unsigned __int128 numerator =
      (static_cast<unsigned __int128>(whole_value) * denominator + fraction_value) * found->scale;
  const unsigned __int128 value = numerator / denominator;
  if (value > std::numeric_limits<uint64_t>::max()) return Fail("'" + std::string(text) + "' is too large");
  if (numerator % denominator != 0) {
    return Fail("'" + std::string(text) + "' is not a whole number of " +
                std::string(kind == UnitKind::kTime ? "milliseconds" : "bytes"));
  }
  return UnitValue{true, static_cast<uint64_t>(value), {}, {}};
}

namespace {
std::string Trim(double v) {
  char buf[32];
  snprintf(buf, sizeof buf, "%.2f", v);
  std::string s(buf);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}
}  // namespace

std::string FormatDuration(uint64_t ms) {
  if (ms < 1000) return std::to_string(ms) + " ms";
  if (ms < 60 * 1000) return Trim(ms / 1000.0) + " s";
  if (ms < 3600 * 1000) return Trim(ms / 60000.0) + " min";
  return Trim(ms / 3600000.0) + " h";
}

std::string FormatBytes(uint64_t bytes) {
  const char* names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int i = 0;
  while (v >= 1024 && i < 4) {
    v /= 1024;
    ++i;
  }
  return Trim(v) + " " + names[i];
}

}  // namespace cocoon::frontend
