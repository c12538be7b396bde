// A hand-written lexer for the .cocoon language: the parser's fast path.
//
// The ANTLR 4.9 C++ lexer takes a reader lock and a hash lookup per input
// character and first widens the whole file to UTF-32; on a 1 MiB policy it
// was a third of the check time. This lexer produces the same tokens as the
// generated CocoonLexer (grammar/Cocoon.g4: longest match, ties to the rule
// written first) straight from the UTF-8 bytes. parser.cc feeds its tokens to
// the generated parser for the fast SLL stage; whenever that stage fails, the
// file is lexed again by ANTLR's own lexer, so syntax diagnostics come from
// exactly the same path as before. `LexersAgree` (parser.h) checks the two
// lexers against each other; the parse fuzzer calls it on every input.
//
// When Cocoon.g4's lexer rules change, this file must change with them.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace cocoon::frontend {

// Token shapes. Keywords come out as kIdent: a keyword is an IDENT-shaped
// word whose text is in the grammar's vocabulary, and parser.cc, which owns
// the vocabulary, makes that call.
enum class LexKind : uint8_t {
  kLBrace, kRBrace, kLParen, kRParen, kComma, kAmp, kPipe,
  kEq, kNe, kLe, kGe, kLt, kGt,
  kArg, kNumber, kQuantity, kHostPort, kGroup, kIdent, kPath, kString,
  kComment,    // the hidden channel
  kErrorChar,  // one code point no rule matches
};

struct LexToken {
  LexKind kind;
  uint32_t begin;  // byte offsets into the lexed text, [begin, end)
  uint32_t end;
};

// Every token of `text` (which must be valid UTF-8), whitespace dropped, no
// EOF token. Linear in the size of `text`.
std::vector<LexToken> LexPolicy(std::string_view text);

}  // namespace cocoon::frontend
