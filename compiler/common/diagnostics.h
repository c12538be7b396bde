// Diagnostics: positioned mistakes in a policy. The checker collects all of
// them (up to a cap) instead of stopping at the first, and they print the way
// a compiler's do:
//
//   ERROR: policy.cocoon:3:7: unknown limit 'memroy'; did you mean 'memory'?
//    | limits { memroy 128MiB }
//    |          ^~~~~~
//
// A failed Status means the tool broke; Diagnostics mean the input was wrong.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "compiler/common/source.h"

namespace cocoon {

enum class Severity { kError, kWarning, kNote };

struct Diagnostic {
  Severity severity = Severity::kError;
  SourcePtr source;  // may be null for diagnostics about the command line
  Span span;
  std::string message;
  std::string hint;  // "what to do", printed as a trailing "help:" line when set
  // Context printed right after it, each with its own position and caret:
  // where the block it is in was opened, the import or `extends` that made
  // its file be read. They travel with it (sorting, de-duplication, replay).
  std::vector<Diagnostic> notes;
};

struct DiagnosticsOptions {
  // Hostile inputs can produce an error per byte; stop collecting after this
  // many errors and say that more were suppressed.
  size_t max_errors = 50;
};

class Diagnostics {
 public:
  explicit Diagnostics(DiagnosticsOptions options = {}) : options_(options) {}

  void Error(SourcePtr source, Span span, std::string message, std::string hint = {});
  void Warning(SourcePtr source, Span span, std::string message, std::string hint = {});
  void Note(SourcePtr source, Span span, std::string message);
  // Attaches a note to all()[index] (printed right after it).
  void AttachNote(size_t index, SourcePtr source, Span span, std::string message);
  void Add(Diagnostic diagnostic);
  void Append(const Diagnostics& other);

  bool has_errors() const { return error_count_ > 0; }
  size_t error_count() const { return error_count_; }
  size_t warning_count() const { return warning_count_; }
  // True once max_errors was reached: later errors were dropped.
  bool saturated() const { return suppressed_ > 0; }
  size_t suppressed() const { return suppressed_; }
  const std::vector<Diagnostic>& all() const { return items_; }

  // Human rendering, with the source line and a caret (^~~~) under the span.
  std::string Render() const;
  // Machine rendering for editors and CI: a JSON array of
  // {severity, file, line, column, end_line, end_column, message, hint}.
  std::string RenderJson() const;

 private:
  DiagnosticsOptions options_;
  std::vector<Diagnostic> items_;
  size_t error_count_ = 0;
  size_t warning_count_ = 0;
  size_t suppressed_ = 0;
};

// Renders one diagnostic and its attached notes (without a trailing newline).
std::string RenderDiagnostic(const Diagnostic& diagnostic);

// Levenshtein-based suggestion: the closest candidate within a distance that
// scales with the word's length, or "" when none is close enough.
std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace cocoon
