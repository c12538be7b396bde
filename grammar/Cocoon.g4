// The .cocoon policy language. See docs/language.md for the reference.
//
// The grammar fixes the *shape* of every statement; the checker
// (compiler/frontend/checker.cc) gives them meaning, so that unknown keys get
// a positioned "did you mean" instead of a bare syntax error. Whitespace,
// including newlines, is insignificant: `limits { memory 1GiB processes 8 }`
// and one statement per line are the same program. Comments go to the hidden
// channel (not skipped) so that `cocoon fmt` can keep them.
grammar Cocoon;

file
  : topItem* EOF
  ;

topItem
  : directive
  | profile
  ;

directive
  : (INCLUDE | IMPORT) STRING
  ;

profile
  : PROFILE name (EXTENDS name)? LBRACE profileStmt* RBRACE
  ;

// Names of profiles and runtimes may be any word, keywords included.
name
  : IDENT
  | keyword
  ;

profileStmt
  : DESCRIPTION STRING                                   # descriptionStmt
  | NETWORK (OFF | ON | ALLOW LBRACE endpoint* RBRACE)    # networkStmt
  | FILESYSTEM LBRACE fsStmt* RBRACE                      # filesystemStmt
  | LIMITS LBRACE limitStmt* RBRACE                       # limitsStmt
  | SYSCALLS LBRACE syscallStmt* RBRACE                   # syscallsStmt
  | ENVIRONMENT LBRACE envStmt* RBRACE                    # environmentStmt
  | CWD pathArg                                          # cwdStmt
  | HOSTNAME (IDENT | STRING)                            # hostnameStmt
  | USER (HOSTPORT | NUMBER)                             # userStmt
  | RUNTIME name LBRACE runtimeStmt* RBRACE              # runtimeBlock
  | RELAXES relaxName+                                   # relaxesStmt
  | IDENT anyArg* (LBRACE anyStmt* RBRACE)?              # unknownStmt
  ;

endpoint
  : HOSTPORT
  | STRING
  ;

pathArg
  : PATH
  | STRING
  ;

fsStmt
  : ROOT (HOST | ROOTFS pathArg)                         # rootStmt
  | (READONLY | WRITABLE) OPTIONAL? bindSpec+           # bindStmt
  | WORK pathArg (QUOTA value)? (STAGED | DIRECT)?       # workStmt
  | COPY pathArg TO pathArg                              # copyStmt
  | TMPFS pathArg (SIZE value)?                          # tmpfsStmt
  | HIDE pathArg+                                        # hideStmt
  | DEVICES LBRACE deviceStmt* RBRACE                    # devicesStmt
  | IDENT anyArg* (LBRACE anyStmt* RBRACE)?              # unknownFsStmt
  ;

bindSpec
  : pathArg (AS pathArg)?
  ;

deviceStmt
  : IDENT (ON | OFF | IDENT)
  ;

limitStmt
  : IDENT value BEST_EFFORT?
  ;

value
  : QUANTITY
  | NUMBER
  | UNLIMITED
  | IDENT
  ;

syscallStmt
  : DEFAULT action                                       # defaultStmt
  | ruleVerb target+ (IF condition)? (ERRNO errnoValue)? # ruleStmt
  | ARCH IDENT+                                          # archStmt
  ;

action
  : ALLOW
  | ERRNO errnoValue
  | KILL
  | LOG
  | NOTIFY
  | TRAP
  ;

ruleVerb
  : ALLOW
  | DENY
  | KILL
  | LOG
  | NOTIFY
  | TRAP
  ;

errnoValue
  : IDENT
  | NUMBER
  ;

// A syscall whose name is a keyword (`kill`) is written as a string: "kill".
target
  : IDENT
  | GROUP
  | STRING
  ;

condition
  : conjunction (OR conjunction)*
  ;

conjunction
  : predicate (AND predicate)*
  ;

predicate
  : operand compareOp valueExpr                          # comparePredicate
  | operand IN LBRACE valueExpr (COMMA valueExpr)* COMMA? RBRACE   # inPredicate
  | LPAREN condition RPAREN                              # parenPredicate
  ;

operand
  : ARG                                                  # plainOperand
  | LPAREN ARG AMP valueExpr RPAREN                      # maskedOperand
  ;

compareOp
  : EQ | NE | LT | LE | GT | GE
  ;

// Constants may be or-ed: CLONE_NEWUSER | CLONE_NEWNS.
valueExpr
  : constant (PIPE constant)*
  ;

constant
  : NUMBER
  | IDENT
  ;

envStmt
  : CLEAR
  | INHERIT
  | SET IDENT STRING
  | PASS IDENT+
  | UNSET IDENT+
  ;

runtimeStmt
  : IDENT (STRING | PATH)+
  ;

// Recovery shapes for unknown statements: parsed loosely so the checker can
// say "unknown key 'memroy'; did you mean 'memory'?".
anyArg
  : STRING | PATH | NUMBER | QUANTITY | HOSTPORT | GROUP | IDENT
  | ON | OFF | HOST | OPTIONAL | UNLIMITED | BEST_EFFORT
  ;

anyStmt
  : (IDENT | keyword) anyArg* (LBRACE anyStmt* RBRACE)?
  ;

// Only setting names, so that `relaxes limits` followed by `runtime x {...}`
// on the next line does not read `runtime` as one more name.
relaxName
  : IDENT | NETWORK | FILESYSTEM | DEVICES | LIMITS | SYSCALLS | ENVIRONMENT | USER
  ;

keyword
  : INCLUDE | IMPORT | PROFILE | EXTENDS | DESCRIPTION | NETWORK | FILESYSTEM
  | LIMITS | SYSCALLS | ENVIRONMENT | CWD | HOSTNAME | USER | RUNTIME | RELAXES
  | OFF | ON | ALLOW | ROOT | HOST | ROOTFS | READONLY | WRITABLE | OPTIONAL | AS
  | WORK | QUOTA | STAGED | DIRECT | COPY | TO | TMPFS | SIZE | HIDE | DEVICES
  | BEST_EFFORT | UNLIMITED | DEFAULT | DENY | KILL | LOG | NOTIFY | TRAP | ERRNO
  | IF | AND | OR | IN | ARCH | CLEAR | INHERIT | SET | PASS | UNSET
  ;

// ------------------------------------------------------------------ lexer
INCLUDE : 'include';
IMPORT : 'import';
PROFILE : 'profile';
EXTENDS : 'extends';
DESCRIPTION : 'description';
NETWORK : 'network';
FILESYSTEM : 'filesystem';
LIMITS : 'limits';
SYSCALLS : 'syscalls';
ENVIRONMENT : 'environment';
CWD : 'cwd';
HOSTNAME : 'hostname';
USER : 'user';
RUNTIME : 'runtime';
RELAXES : 'relaxes';
OFF : 'off';
ON : 'on';
ALLOW : 'allow';
ROOT : 'root';
HOST : 'host';
ROOTFS : 'rootfs';
READONLY : 'readonly';
WRITABLE : 'writable';
OPTIONAL : 'optional';
AS : 'as';
WORK : 'work';
QUOTA : 'quota';
STAGED : 'staged';
DIRECT : 'direct';
COPY : 'copy';
TO : 'to';
TMPFS : 'tmpfs';
SIZE : 'size';
HIDE : 'hide';
DEVICES : 'devices';
BEST_EFFORT : 'best_effort';
UNLIMITED : 'unlimited';
DEFAULT : 'default';
DENY : 'deny';
KILL : 'kill';
LOG : 'log';
NOTIFY : 'notify';
TRAP : 'trap';
ERRNO : 'errno';
IF : 'if';
AND : 'and';
OR : 'or';
IN : 'in';
ARCH : 'arch';
CLEAR : 'clear';
INHERIT : 'inherit';
SET : 'set';
PASS : 'pass';
UNSET : 'unset';

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
// 5s, 2m, 128MiB, 1.5GiB, 95%: the checker validates the unit.
QUANTITY : [0-9]+ ('.' [0-9]+)? [a-zA-Z%]+;
// host:port, 10.0.0.1:53, [::1]:8080, and uid:gid for `user`.
HOSTPORT : (HOSTCHAR+ | '[' [0-9a-fA-F:.]+ ']') ':' [0-9a-zA-Z]+;
GROUP : '@' [a-zA-Z0-9_\-]+;
IDENT : [a-zA-Z_] [a-zA-Z0-9_\-.]*;
// Absolute (/usr/lib), dotted (./x, ../x, ~/x) or relative-with-slash (usr/lib)
// paths. Relative forms exist so the checker can reject them with a message.
// The relative form scans only name characters before its '/': a run that
// then fails to become a PATH is consumed whole by IDENT or BAD_NAME below
// (see the note at BAD_NAME).
PATH : '/' PATHCHAR*
     | ('.' | '~') PATHCHAR*
     | [a-zA-Z0-9_] HOSTCHAR* '/' PATHCHAR*
     ;
STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])* '"';

// Hostile input must lex in linear time. ANTLR's lexer, when a rule scans a
// long run and then fails (a HOSTPORT without its ':', a STRING without its
// closing quote), falls back to the longest rule that did match and restarts
// right after it: if that is one ERROR_CHAR, every position rescans the rest
// of the run, which is quadratic (a 160 KiB line of '-' took 7 minutes). So
// every such run also matches, whole, a token that no parser rule accepts:
// the parser then reports it as one clear error.
UNTERMINATED_STRING : '"' (~["\\\r\n] | '\\' ~[\r\n])*;
BAD_NAME : [0-9\-] HOSTCHAR*;

COMMENT : '#' ~[\r\n]* -> channel(HIDDEN);
WS : [ \t\r\n]+ -> skip;
// Anything else becomes one token the parser rejects with a clear message,
// rather than a lexer error per character.
ERROR_CHAR : .;

fragment HOSTCHAR : [a-zA-Z0-9_\-.];
fragment PATHCHAR : [a-zA-Z0-9_\-.+@%=,~:/];
