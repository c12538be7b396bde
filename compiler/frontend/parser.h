// Text -> AST. parser.cc is the only file in Cocoon that includes ANTLR or the
// generated parser; every ANTLR exception is turned into a Diagnostic there.
#pragma once

#include <cstddef>
#include <optional>

#include "compiler/common/diagnostics.h"
#include "compiler/common/source.h"
#include "compiler/frontend/ast.h"

namespace cocoon::frontend {

// Where a parse keeps the ANTLR DFAs it builds while lexing and predicting.
enum class DfaReuse {
  // Built afresh by every parse: each parse does the cold work a new
  // `cocoon check` process does. The default, and what the benchmarks time.
  kPerParse,
  // Shared by every parse in the process that asks for it (what the
  // generated recognizers do by default): for long-lived callers that parse
  // many inputs, such as the fuzzers, where the cold DFA would dominate.
  kProcessWide,
};

// Whether a file with errors still gets an AST: one whose errors are slips
// the parser mended (a unit written apart from its number), or lie inside
// profiles (each such profile marked has_syntax_errors, and not to be
// checked). Errors outside every profile, unbalanced braces, too deep a
// nesting, or too many syntax errors still give no AST.
enum class SlipRecovery {
  kNoAst,           // nullopt, as for any error: what fmt and the fuzzers expect
  kAstForChecking,  // the AST, for `check` to report the file's other mistakes too
};

struct ParseOptions {
  SlipRecovery slip_recovery = SlipRecovery::kNoAst;
  DfaReuse dfa_reuse = DfaReuse::kPerParse;
  size_t max_file_bytes = 4 << 20;
  // Deepest nesting of { } and ( ): bounds the parser's recursion.
  size_t max_nesting = 64;
  // Stop parsing after this many syntax errors: recovery on garbage is the
  // slow path, and later errors are mostly echoes of the first.
  size_t max_syntax_errors = 25;
};

// The AST, or nullopt when the file has syntax errors (each one reported to
// `diagnostics`). Never throws, never crashes, and finishes in time linear in
// the input for any input (hostile ones included).
std::optional<ast::File> ParsePolicy(const SourcePtr& source, const ParseOptions& options,
                                     Diagnostics& diagnostics);

}  // namespace cocoon::frontend
