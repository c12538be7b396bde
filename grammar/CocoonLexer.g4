// The .cocoon policy language, tokens. See CocoonParser.g4 for the rules.
//
// Keywords are lexed as IDENT and then given their keyword type by the
// lexer (compiler/frontend/parser.cc, PolicyLexer::emit): the standard
// ANTLR idiom for languages with many keywords. Written as ~55 rules of
// their own here, every keyword prefix (`r`, `re`, `rea`...) was a separate
// lexer DFA state whose ATN configurations ran every keyword, IDENT, PATH
// and HOSTPORT in parallel; each parse builds its DFA cold, so that
// construction was two thirds of checking build.cocoon. The result is the
// same token stream: IDENT already matches every keyword (and, being
// longest-match, every longer word such as `rootfs2`), and an IDENT whose
// whole text is a keyword becomes that keyword.
//
// The keywords' token types and spellings come from CocoonKeywords.g4
// (through its generated .tokens file), so they keep their types, the
// parser's messages still print them ("expected 'readonly'"), and
// PolicyLexer builds its keyword table from them.
lexer grammar CocoonLexer;

options { tokenVocab = CocoonKeywords; }

LBRACE : '{';
RBRACE : '}';
LPAREN : '(';
RPAREN : ')';
COMMA : ',';
AMP : '&';
PIPE : '|';
EQ : '==';
NE : '!=';
LE : '<=';
GE : '>=';
LT : '<';
GT : '>';

ARG : 'arg' [0-9]+;
NUMBER : [0-9]+ | '0' [xX] [0-9a-fA-F]+;
// 5s, 2m, 128MiB, 1.5GiB, 95%: the checker validates the unit. Any word
// that starts with a digit and is not a NUMBER (which comes first: 42 and
// 0x40B are NUMBERs, 'B' being a hex digit) is a QUANTITY, so that a slip in
// a value's place is one error from the checker, saying what to write
// (compiler/frontend/units.cc): a hex number given a unit (0x40MiB, 0x10s),
// a fraction with none (1.5), 1e3MiB. As BAD_NAMEs they were syntax errors
// that the parser's recovery carried onto the next, valid, line. Elsewhere
// the parser refuses a QUANTITY as it did a BAD_NAME.
QUANTITY : [0-9] [a-zA-Z0-9_\-.%]*;
// Name characters are [a-zA-Z0-9_\-.]; path characters add [+@%=,~:/]. The
// sets are written out in each rule rather than as fragment rules: a
// fragment reference is a rule call in the lexer's ATN, a context pushed and
// popped in every closure that builds the (per-parse, cold) lexer DFA.
// host:port, 10.0.0.1:53, [::1]:8080, and uid:gid for `user`.
HOSTPORT : ([a-zA-Z0-9_\-.]+ | '[' [0-9a-fA-F:.]+ ']') ':' [0-9a-zA-Z]+;
GROUP : '@' [a-zA-Z0-9_\-]+;
IDENT : [a-zA-Z_] [a-zA-Z0-9_\-.]*;
// Absolute (/usr/lib), dotted (./x, ../x, ~/x) or relative-with-slash (usr/lib)
// paths. Relative forms exist so the checker can reject them with a message.
// The relative form scans only name characters before its '/': a run that
// then fails to become a PATH is consumed whole by IDENT, QUANTITY or BAD_NAME
// (see the note at BAD_NAME).
PATH : '/' [a-zA-Z0-9_\-.+@%=,~:/]*
     | ('.' | '~') [a-zA-Z0-9_\-.+@%=,~:/]*
     | [a-zA-Z0-9_] [a-zA-Z0-9_\-.]* '/' [a-zA-Z0-9_\-.+@%=,~:/]*
     ;
STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* '"';

// Hostile input must lex in linear time. ANTLR's lexer, when a rule scans a
// long run and then fails (a HOSTPORT without its ':', a STRING without its
// closing quote), falls back to the longest rule that did match and restarts
// right after it: if that is one ERROR_CHAR, every position rescans the rest
// of the run, which is quadratic (a 160 KiB line of '-' took 7 minutes). So
// every such run also matches, whole, a token that no parser rule accepts
// (or, for a run that starts with a digit, a QUANTITY, above): the parser
// then reports it as one clear error.
UNTERMINATED_STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])*;
BAD_NAME : '-' [a-zA-Z0-9_\-.]*;

COMMENT : '#' ~[\r\n]* -> channel(HIDDEN);
// Whitespace is dropped by the lexer itself (PolicyLexer::nextToken in
// compiler/frontend/parser.cc), not by a `-> skip` action: ANTLR 4.9 runs a
// lexer action per token through a std::function and dynamic_casts, and
// whitespace is every other token.
WS : [ \t\r\n]+;
// Anything else becomes one token the parser rejects with a clear message,
// rather than a lexer error per character.
ERROR_CHAR : .;
