// RFC 8785 JSON Canonicalization Scheme (JCS), in two directions:
//
//  * Canonicalize(): serialise a JSON value canonically (keys sorted by their
//    UTF-16 code units, no whitespace, ECMAScript number form, minimal string
//    escapes). Audit lines use it with NumberPolicy::kIntegersOnly.
//  * ScanCanonicalLine(): a single-pass, allocation-light validator for an
//    audit line: it accepts only bytes that are already exactly the canonical
//    form of a JSON object with ASCII keys and integer numbers, and reports
//    where the `cocoon.integrity` members are, so the verifier never has to
//    build a DOM (it must check thousands of lines per second per core).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler/common/status.h"

namespace cocoon::audit {

enum class NumberPolicy {
  kIntegersOnly,  // floats are an error; integers must fit in +-(2^53-1)
  kAny,           // ECMAScript Number.prototype.toString for doubles (full RFC 8785)
};

// Invalid UTF-8 in strings and keys is replaced with U+FFFD, never thrown.
Result<std::string> Canonicalize(const nlohmann::json& value,
                                 NumberPolicy numbers = NumberPolicy::kIntegersOnly);

// Appends the canonical form of `value` to `out`. When `mark` is non-null and
// points at a node inside `value`, *mark_begin/*mark_end receive the byte
// offsets in `out` where that node's serialisation starts and ends.
Status CanonicalizeTo(const nlohmann::json& value, NumberPolicy numbers, std::string& out,
                      const nlohmann::json* mark = nullptr, size_t* mark_begin = nullptr,
                      size_t* mark_end = nullptr);

// Extra members merged into an object while it is serialised, as already
// canonical text, so the event's DOM is never copied or edited. A member whose
// key the object already has replaces it. When `splice` >= 0, the output
// offset of byte `splice_offset` of `text` is recorded as a splice point with
// that id: the audit writer renders an event once, with the per-line values
// (sequence, time, integrity...) cut out, and later copies bytes around them.
struct OverlayMember {
  std::string_view key;
  std::string_view text;
  int splice = -1;
  size_t splice_offset = 0;
};
struct Overlay {
  const nlohmann::json* node = nullptr;
  std::vector<OverlayMember> members;  // sorted by key (ASCII)
};
struct SplicePoint {
  size_t offset = 0;
  int id = 0;
};

// Integers-only canonical form of `value` with `overlays` merged in; splice
// points are appended to `splices` in ascending offset order. Objects
// carrying an overlay must have ASCII keys.
Status CanonicalizeWithOverlays(const nlohmann::json& value, const std::vector<Overlay>& overlays,
                                std::string& out, std::vector<SplicePoint>* splices);

// Appends the JCS form of a string (quotes included; invalid UTF-8 becomes
// U+FFFD), for code that writes canonical text directly.
void AppendJcsString(std::string_view text, std::string& out);

// The ECMAScript (ES2019 7.1.12.1) string form of a finite double.
std::string FormatEcmaScriptNumber(double value);

// One member of the cocoon.integrity object found by the scanner.
struct IntegrityMember {
  std::string_view key;
  std::string_view raw_value;   // exactly as written ("..." for strings, digits for integers)
  size_t member_begin = 0;      // offset of the opening quote of the key
  size_t member_end = 0;        // offset just past the value's trailing ',' (or the value when last)
  bool followed_by_comma = false;
};

struct ScannedLine {
  std::vector<IntegrityMember> integrity;   // in key order; empty if absent
  bool has_integrity = false;
};

struct ScanLimits {
  size_t max_depth = 32;
};

// Validates that `line` (without its '\n') is a canonical JCS object with
// ASCII keys and integer numbers only. The error message names the byte offset
// and the rule that failed ("keys not sorted", "float number", ...).
Result<ScannedLine> ScanCanonicalLine(std::string_view line, ScanLimits limits = {});
// The same into a caller-owned `result` whose capacity is reused, so a
// worker scanning many lines allocates nothing per line.
Status ScanCanonicalLine(std::string_view line, ScannedLine& result, ScanLimits limits = {});

// Offset just past the first complete JSON value that starts at `text[pos]`
// (syntax only, no canonical checks); used to unwrap Splunk HEC envelopes.
Result<size_t> SkipJsonValue(std::string_view text, size_t pos);

}  // namespace cocoon::audit
