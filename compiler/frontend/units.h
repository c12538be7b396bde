// Human units in policies: 5s, 2m, 1.5h (times), 128MiB, 1GiB, 64MB (sizes),
// 95% (CPU share). Times become milliseconds and sizes bytes in the IR.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace cocoon::frontend {

enum class UnitKind { kTime, kSize, kPercent, kCount };

struct UnitValue {
  bool ok = false;
  uint64_t value = 0;   // ms, bytes, percent, or a plain count
  std::string error;    // when !ok: what is wrong, for a diagnostic
  std::string hint;     // when !ok: a suggestion ("did you mean 'MiB'?")
};

// Parses `text` (a QUANTITY or NUMBER token) as a value of `kind`. A plain
// number is accepted only for kCount (and 0 for any kind).
// `max` (in ms or bytes), when given, only shapes a hint: 8d, which has no
// unit, is suggested in hours, or as the maximum when it is more.
UnitValue ParseUnitValue(std::string_view text, UnitKind kind,
                         uint64_t max = std::numeric_limits<uint64_t>::max());

// True when `word` is a unit of any kind (s, MiB, %...), as written after a number.
bool IsUnitName(std::string_view word);

// `5 sec`, `128 M`: a word written apart from its number that stands for a
// unit of `kind` (of the same magnitude, as a suggestion keeps it), as the
// quantity to write ("5s", "128MiB"; days and weeks in hours), or empty.
std::string QuantityForUnitWord(std::string_view number, std::string_view word, UnitKind kind);

// True for a fraction written without a unit: digits, one '.', digits (1.5).
bool IsDecimalFraction(std::string_view text);

// True for digits and at least one '.', in any order (1.2.3, 1..5, 1.): a
// slip for a number.
bool IsDigitsAndPoints(std::string_view text);

// What to write for a hexadecimal number given a unit (0x40MiB, 0x40 MiB;
// hex takes none): "write 64MiB", or, when `unit` is no unit or the number
// does not fit, "write the value in decimal, with its unit".
std::string HexWithUnitHint(std::string_view hex, std::string_view unit);

// Parses a decimal or 0x-hex integer; false on overflow or junk.
bool ParseInteger(std::string_view text, uint64_t& out);

// "5 s", "5 min", "1.5 h", "300 ms"; "128 MiB", "1 GiB", "1000 B".
std::string FormatDuration(uint64_t ms);
std::string FormatBytes(uint64_t bytes);

}  // namespace cocoon::frontend
