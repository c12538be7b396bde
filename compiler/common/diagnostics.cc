#include "compiler/common/diagnostics.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "compiler/common/display_text.h"

namespace cocoon {
namespace {

std::string_view SeverityLabel(Severity severity) {
  switch (severity) {
    case Severity::kError: return "ERROR";
    case Severity::kWarning: return "WARNING";
    case Severity::kNote: return "NOTE";
  }
  return "ERROR";
}

std::string_view SeverityJson(Severity severity) {
  switch (severity) {
    case Severity::kError: return "error";
    case Severity::kWarning: return "warning";
    case Severity::kNote: return "note";
  }
  return "error";
}

// The caret line under `shown` (the echoed line) for a span starting at byte
// `column` - 1 of it: the caret is padded, and the span underlined, by the
// columns the terminal draws (display_text.h), not by bytes, so it stays
// under its text after "héllo" or "日本".
std::string CaretLine(std::string_view shown, uint32_t column, uint32_t span_bytes) {
  const size_t begin = std::min<size_t>(column - 1, shown.size());
  // Underline the rest of the span, but never past the end of this line.
  const size_t end = std::min<size_t>(begin + span_bytes, shown.size());
  const size_t pad = DisplayWidth(shown.substr(0, begin)) + (column - 1 - begin);
  const size_t width = DisplayWidth(shown.substr(begin, end - begin));
  return std::string(pad, ' ') + '^' + std::string(width > 1 ? width - 1 : 0, '~');
}

// A source line echoed under a diagnostic shows at most this many columns
// around the caret, as clang and rustc do: a minified or generated policy can
// be one line of megabytes, and echoing it whole under each of its errors
// printed 120 MB for 50 errors.
constexpr size_t kMaxEchoedColumns = 120;
// How much of the line before the caret a cut window keeps, in bytes (so at
// most as many columns: no character is drawn wider than it is long).
constexpr size_t kBytesBeforeCaret = 40;
// Bounds the walk over characters that take no column (combining marks).
constexpr size_t kMaxEchoedBytes = 8 * kMaxEchoedColumns;
constexpr std::string_view kCutMark = "...";

bool IsUtf8Continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// The part of `line` echoed, as byte offsets [begin, end) on character
// boundaries, for a caret at byte `caret`; the caret falls inside it.
struct LineWindow {
  size_t begin = 0;
  size_t end = 0;
};

LineWindow WindowAround(std::string_view line, size_t caret) {
  // No line is wider than it is long; a short one is measured.
  if (line.size() <= kMaxEchoedColumns ||
      (line.size() <= kMaxEchoedBytes && DisplayWidth(MaskForTerminal(line)) <= kMaxEchoedColumns)) {
    return {0, line.size()};
  }
  LineWindow window;
  if (caret > kMaxEchoedColumns / 2) {
    window.begin = std::min(caret, line.size()) - kBytesBeforeCaret;
    while (window.begin < caret && IsUtf8Continuation(line[window.begin])) ++window.begin;
  }
  // Characters are measured as they will be drawn (masked): an invisible one
  // shows as one '?' per byte.
  const size_t budget = kMaxEchoedColumns - (window.begin > 0 ? kCutMark.size() : 0);
  size_t end = window.begin, columns = 0, end_before_cut_mark = window.begin;
  while (end < line.size() && end - window.begin < kMaxEchoedBytes) {
    uint32_t code_point = 0;
    const size_t length = std::max<size_t>(1, DecodeUtf8(line, end, code_point));
    const size_t width = DisplayWidth(MaskForTerminal(line.substr(end, length)));
    if (columns + width > budget) break;
    columns += width;
    end += length;
    if (columns + kCutMark.size() <= budget) end_before_cut_mark = end;
  }
  window.end = end == line.size() ? end : end_before_cut_mark;
  return window;
}

std::string RenderOne(const Diagnostic& d) {
  std::string out(SeverityLabel(d.severity));
  out += ": ";
  if (d.source) {
    LineCol at = d.source->Locate(d.span.begin);
    out += EscapeControlCharacters(d.source->name()) + ":" + std::to_string(at.line) + ":" +
           std::to_string(at.column) + ": ";
    out += EscapeControlCharacters(d.message);
    std::string_view line = d.source->Line(at.line);
    uint32_t column = at.column;
    // The file's byte-order mark marks its encoding and has no width: it is
    // not echoed (it would show as "???"), and the caret does not count it.
    constexpr std::string_view kByteOrderMark = "\xEF\xBB\xBF";
    if (at.line == 1 && line.starts_with(kByteOrderMark) && column > kByteOrderMark.size()) {
      line.remove_prefix(kByteOrderMark.size());
      column -= kByteOrderMark.size();
    }
    const LineWindow window = WindowAround(line, column - 1);
    const bool cut_before = window.begin > 0, cut_after = window.end < line.size();
    std::string shown = MaskForTerminal(line.substr(window.begin, window.end - window.begin));
    out += "\n | ";
    if (cut_before) out += kCutMark;
    out += shown;
    if (cut_after) out += kCutMark;
    out += "\n | ";
    if (cut_before) out += std::string(kCutMark.size(), ' ');
    out += CaretLine(shown, column - static_cast<uint32_t>(window.begin), d.span.size());
  } else {
    out += EscapeControlCharacters(d.message);
  }
  // The message and hint quote what the policy wrote (a name, a string, a
  // path): escaped, so that it cannot act on the terminal or forge a line.
  if (!d.hint.empty()) {
    out += "\n = help: ";
    out += EscapeControlCharacters(d.hint);
  }
  return out;
}

}  // namespace

std::string RenderDiagnostic(const Diagnostic& d) {
  std::string out = RenderOne(d);
  for (const Diagnostic& note : d.notes) {
    out += '\n';
    out += RenderDiagnostic(note);
  }
  return out;
}

void Diagnostics::Add(Diagnostic diagnostic) {
  if (diagnostic.severity == Severity::kError) {
    if (error_count_ >= options_.max_errors) {
      ++suppressed_;
      return;
    }
    ++error_count_;
  } else if (diagnostic.severity == Severity::kWarning) {
    ++warning_count_;
  }
  items_.push_back(std::move(diagnostic));
}

void Diagnostics::Error(SourcePtr source, Span span, std::string message, std::string hint) {
  Add({Severity::kError, std::move(source), span, std::move(message), std::move(hint), {}});
}

void Diagnostics::Warning(SourcePtr source, Span span, std::string message, std::string hint) {
  Add({Severity::kWarning, std::move(source), span, std::move(message), std::move(hint), {}});
}

void Diagnostics::Note(SourcePtr source, Span span, std::string message) {
  Add({Severity::kNote, std::move(source), span, std::move(message), {}, {}});
}

void Diagnostics::AttachNote(size_t index, SourcePtr source, Span span, std::string message) {
  if (index >= items_.size()) return;
  items_[index].notes.push_back({Severity::kNote, std::move(source), span, std::move(message), {}, {}});
}

void Diagnostics::Append(const Diagnostics& other) {
  for (const Diagnostic& d : other.items_) Add(d);
  suppressed_ += other.suppressed_;
}

std::string Diagnostics::Render() const {
  std::string out;
  for (const Diagnostic& d : items_) {
    out += RenderDiagnostic(d);
    out += '\n';
  }
  if (suppressed_ > 0) {
    out += "NOTE: " + std::to_string(suppressed_) + " more error(s) not shown (limit " +
           std::to_string(options_.max_errors) + ")\n";
  }
  return out;
}

namespace {

// A diagnostic, then its notes, as items of the flat list.
void AddJsonItems(const Diagnostic& d, nlohmann::json& list) {
  {
    nlohmann::json item;
    item["severity"] = SeverityJson(d.severity);
    item["message"] = d.message;
    if (!d.hint.empty()) item["hint"] = d.hint;
    if (d.source) {
      LineCol begin = d.source->Locate(d.span.begin);
      LineCol end = d.source->Locate(d.span.end);
      item["file"] = d.source->name();
      item["line"] = begin.line;
      item["column"] = begin.column;
      item["end_line"] = end.line;
      item["end_column"] = end.column;
    }
    list.push_back(std::move(item));
  }
  for (const Diagnostic& note : d.notes) AddJsonItems(note, list);
}

}  // namespace

std::string Diagnostics::RenderJson() const {
  nlohmann::json list = nlohmann::json::array();
  for (const Diagnostic& d : items_) AddJsonItems(d, list);
  nlohmann::json doc;
  doc["diagnostics"] = std::move(list);
  doc["errors"] = error_count_;
  doc["warnings"] = warning_count_;
  doc["suppressed"] = suppressed_;
  // Replace invalid UTF-8 from hostile input rather than throwing.
  return doc.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  // Optimal string alignment: Levenshtein plus a swap of two adjacent
  // letters as one edit, the commonest slip ('dney' for 'deny').
  auto distance = [](std::string_view a, std::string_view b) {
    std::vector<size_t> before(b.size() + 1), row(b.size() + 1), next(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      next[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        next[j] = std::min({row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
          next[j] = std::min(next[j], before[j - 2] + 1);
        }
      }
      before.swap(row);
      row.swap(next);
    }
    return row[b.size()];
  };
  if (word.size() > 64) return {};
  size_t best_distance = std::max<size_t>(1, word.size() / 3) + 1;
  std::string best;
  for (const std::string& candidate : candidates) {
    size_t d = distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

}  // namespace cocoon
