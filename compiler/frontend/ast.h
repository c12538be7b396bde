// The .cocoon abstract syntax tree. The parser (parser.cc, the only file that
// sees ANTLR) builds it; the checker and the formatter read it. Nodes carry
// byte Spans into their Source; there are no ANTLR types here.
//
// Statements are deliberately uniform: a keyword, its argument words in source
// order, an optional `if` condition and an optional nested block. The grammar
// has already fixed each statement's shape, so the checker interprets the
// words by keyword, and the formatter prints any statement the same way.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compiler/common/source.h"

namespace cocoon::frontend::ast {

enum class WordKind {
  kKeyword,   // include, readonly, best_effort, errno, ...
  kIdent,     // memory, ptrace, PATH, AF_UNIX, sandbox
  kString,    // "text": `text` holds the unescaped contents
  kPath,      // /usr/lib (unquoted)
  kNumber,    // 42, 0x7E020000
  kQuantity,  // 5s, 128MiB, 95%
  kHostPort,  // api.example.com:443, [::1]:8080, 65534:65534
  kGroup,     // @system-service
  kArg,       // arg0..arg5
};

struct Word {
  WordKind kind = WordKind::kIdent;
  std::string text;  // as written, except strings: unescaped, without quotes
  Span span;

  bool Is(WordKind k, std::string_view t) const { return kind == k && text == t; }
  bool IsKeyword(std::string_view t) const { return Is(WordKind::kKeyword, t); }
};

// `a | b | c` in a condition: constants or-ed together.
struct ValueExpr {
  std::vector<Word> terms;
  Span span;
};

// A syscall-argument condition, before lowering.
struct Condition {
  enum class Kind { kOr, kAnd, kCompare, kIn };
  Kind kind = Kind::kCompare;
  Span span;
  bool parenthesized = false;      // written inside ( ) in the source
  std::vector<Condition> children; // kOr, kAnd
  // kCompare / kIn:
  Word arg;                        // arg0..arg5
  bool masked = false;             // (argN & mask)
  ValueExpr mask;
  std::string op;                  // "==", "!=", "<", "<=", ">", ">=" (kCompare)
  std::vector<ValueExpr> values;   // one for kCompare, the set for kIn
};

struct Statement {
  Word keyword;                          // first word of the statement
  std::vector<Word> args;                // the other words, in source order
  std::shared_ptr<Condition> condition;  // `if ...` (syscall rules only)
  size_t condition_index = 0;            // number of args written before `if`
  bool has_block = false;                // { ... } present (even if empty)
  std::vector<Statement> block;
  Span span;
  Span block_open;                       // the `{`, when has_block
};

struct Profile {
  Word name;
  bool has_parent = false;
  Word parent;
  std::vector<Statement> body;
  Span span;
  // A syntax error (or a mistake found before parsing) is inside it, when
  // the parser returns an AST despite errors (SlipRecovery::kAstForChecking).
  // The statement each error is in or right after was dropped from `body`
  // (PruneDamagedStatements): what is left was parsed as written, and is
  // checked, but a profile that extends this one is not.
  bool has_syntax_errors = false;
  std::vector<uint32_t> syntax_errors;  // byte offset of each such error
};

struct Directive {
  Word keyword;  // include | import
  Word target;   // the string
  Span span;
};

struct Comment {
  Span span;     // from '#' to the end of the line (exclusive)
};

struct File {
  SourcePtr source;
  std::vector<Directive> directives;
  std::vector<Profile> profiles;
  std::vector<Comment> comments;  // every comment, in order (for the formatter)
  // Values the parser already reported as a slip it mended (`wall_time 5
  // sec`: the number), when it returns an AST despite them
  // (SlipRecovery::kAstForChecking); the checker says nothing more of them.
  std::vector<Span> reported;
  size_t slip_errors = 0;  // how many errors those slips were, and the syntax errors in its profiles
};

}  // namespace cocoon::frontend::ast
