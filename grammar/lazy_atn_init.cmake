# Run as `cmake -DGENERATED=<file.cpp> -DCLASS=<CocoonLexer|CocoonParser> -P`.
#
# Why: the 4.7.2 tool emits `CLASS::Initializer CLASS::_init;`, a static
# object that deserializes the whole ATN when the program starts. Every
# `cocoon` command paid for it (~0.5 ms of a 3 ms `cocoon --version`, and of
# every `cocoon enforce` that launches from cached artifacts and never parses).
# ANTLR 4.10 moved this to a lazy once-only initializer; this backports that
# behaviour: the namespace-scope definition goes, and the constructor runs the
# same Initializer once through a function-local static (thread-safe since
# C++11). Every use of the static ATN data goes through a constructed
# lexer/parser, so none can observe it uninitialized.
file(READ ${GENERATED} text)
set(static_definition "${CLASS}::Initializer ${CLASS}::_init;")
string(FIND "${text}" "${static_definition}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "lazy_atn_init: '${static_definition}' not found in ${GENERATED}; the antlr4 tool's output changed")
endif()
string(REPLACE "${static_definition}" "// ${static_definition} (made lazy: see grammar/lazy_atn_init.cmake)" text "${text}")
string(REGEX MATCH "${CLASS}::${CLASS}\\([A-Za-z]+ \\*input\\) : [A-Za-z]+\\(input\\) {\n" constructor "${text}")
if(constructor STREQUAL "")
  message(FATAL_ERROR "lazy_atn_init: the ${CLASS} constructor was not found in ${GENERATED}; the antlr4 tool's output changed")
endif()
string(REPLACE "${constructor}" "${constructor}  static const Initializer lazy_atn_init;\n  (void)lazy_atn_init;\n" text "${text}")
file(WRITE ${GENERATED} "${text}")
