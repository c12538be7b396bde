// The .cocoon policy language, parser rules. See docs/language.md for the
// reference, and CocoonLexer.g4 for the tokens.
//
// The grammar fixes the *shape* of every statement; the checker
// (compiler/frontend/checker.cc) gives them meaning, so that unknown keys get
// a positioned "did you mean" instead of a bare syntax error. Whitespace,
// including newlines, is insignificant: `limits { memory 1GiB processes 8 }`
// and one statement per line are the same program. Comments go to the hidden
// channel (not skipped) so that `cocoon fmt` can keep them.
//
// Speed (issue 2): the parser builds no parse tree; compiler/frontend/
// parser.cc builds the AST from its rule entry and exit events. Every rule
// the parser enters still costs a context object made, entered, exited and
// freed, so the hot statements use token sets rather than one-token rules,
// and alternatives are named in comments, not with `# label`s (a labelled
// alternative makes a second context object on every use).
parser grammar CocoonParser;

options { tokenVocab = CocoonLexer; }

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
  : DESCRIPTION STRING                                   // descriptionStmt
  | NETWORK (OFF | ON | ALLOW LBRACE endpoint* RBRACE)    // networkStmt
  | FILESYSTEM LBRACE fsStmt* RBRACE                      // filesystemStmt
  | LIMITS LBRACE limitStmt* RBRACE                       // limitsStmt
  | SYSCALLS LBRACE syscallStmt* RBRACE                   // syscallsStmt
  | ENVIRONMENT LBRACE envStmt* RBRACE                    // environmentStmt
  | CWD pathArg                                          // cwdStmt
  | HOSTNAME (IDENT | STRING)                            // hostnameStmt
  | USER (HOSTPORT | NUMBER)                             // userStmt
  | RUNTIME name LBRACE runtimeStmt* RBRACE              // runtimeBlock
  | RELAXES relaxName+                                   // relaxesStmt
  | IDENT anyArg* (LBRACE anyStmt* RBRACE)?              // unknownStmt
  ;

// A name, number or address without its port is read as an endpoint too, so
// that the checker says "has no port; write host:port" at it and the block's
// other endpoints are still read.
endpoint
  : HOSTPORT
  | STRING
  | IDENT | NUMBER | QUANTITY                           // no port: the checker's error
  ;

pathArg
  : PATH
  | STRING
  ;

fsStmt
  : ROOT (HOST | ROOTFS pathArg)                         // rootStmt
  | (READONLY | WRITABLE) OPTIONAL? bindSpec+           // bindStmt
  | WORK pathArg (QUOTA value)? (STAGED | DIRECT)?       // workStmt
  | COPY pathArg TO pathArg                              // copyStmt
  | TMPFS pathArg (SIZE value)?                          // tmpfsStmt
  | HIDE pathArg+                                        // hideStmt
  | DEVICES LBRACE deviceStmt* RBRACE                    // devicesStmt
  | IDENT anyArg* (LBRACE anyStmt* RBRACE)?              // unknownFsStmt
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

// The words of a rule are written out rather than as rules of their own
// (verb, target, errno value): every rule the parser enters is a context
// object made, entered, exited and freed per use, and syscall rules are most
// of a large policy. A syscall whose name is a keyword (`kill`) is written
// as a string: "kill".
syscallStmt
  : DEFAULT action                                       // defaultStmt
  | (ALLOW | DENY | KILL | LOG | NOTIFY | TRAP)          // the verb
    (IDENT | GROUP | STRING)+                            // syscalls and @groups
    (IF condition)? (ERRNO (IDENT | NUMBER))?            // ruleStmt
  | ARCH IDENT+                                          // archStmt
  | IDENT anyArg* (LBRACE anyStmt* RBRACE)?              // unknownSyscallStmt (alow read)
  ;

action
  : ALLOW
  | ERRNO (IDENT | NUMBER)
  | KILL
  | LOG
  | NOTIFY
  | TRAP
  ;

// `and` binds tighter than `or`: a condition is an `or` of `and` groups.
// The AST builder (compiler/frontend/parser.cc) makes the groups, rather
// than a rule of its own per group entered for every condition.
condition
  : predicate ((AND | OR) predicate)*
  ;

predicate
  : operand (EQ | NE | LT | LE | GT | GE) valueExpr      // comparePredicate
  | operand IN LBRACE valueExpr (COMMA valueExpr)* COMMA? RBRACE   // inPredicate
  | LPAREN condition RPAREN                              // parenPredicate
  ;

operand
  : ARG                                                  // plainOperand
  | LPAREN ARG AMP valueExpr RPAREN                      // maskedOperand
  ;

// Constants (numbers or names) may be or-ed: CLONE_NEWUSER | CLONE_NEWNS.
valueExpr
  : (NUMBER | IDENT) (PIPE (NUMBER | IDENT))*
  ;

envStmt
  : CLEAR
  | INHERIT
  | SET IDENT STRING
  | PASS IDENT+
  | UNSET IDENT+
  | IDENT anyArg* (LBRACE anyStmt* RBRACE)?              // unknownEnvStmt (sett FOO "x")
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
