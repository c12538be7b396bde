// The keywords of the .cocoon language: their token types (the first ones,
// in this order) and their spellings. Only the .tokens file the antlr4 tool
// writes for this grammar is used: CocoonLexer.g4 imports it (tokenVocab),
// and lexes the keywords themselves as names (see the note there). A new
// keyword is a rule here, used by the rules of CocoonParser.g4 (and listed
// in its `keyword` rule, so that it can still name a profile).
lexer grammar CocoonKeywords;

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
