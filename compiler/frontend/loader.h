// Loads a root policy file and, transitively, everything it includes or
// imports. Each file is parsed once (a diamond is fine; a cycle is an error),
// and every profile is indexed by name for the checker.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler/common/diagnostics.h"
#include "compiler/frontend/ast.h"
#include "compiler/frontend/parser.h"

namespace cocoon::frontend {

struct LoadOptions {
  // Searched by `import`, after the importing file's own directory.
  std::vector<std::string> search_paths;
  size_t max_include_depth = 16;
  size_t max_files = 256;
  ParseOptions parse;
};

struct LoadedFile {
  std::string path;       // canonical absolute path ("" for in-memory text)
  std::string directory;  // where its relative includes resolve
  SourcePtr source;
  ast::File ast;
  // Of the text, hashed once at load: each compiled profile's policy carries
  // a digest over its files, and `check` compiles every profile of a file
  // (hashing a 270 KB file per profile made 10,000 profiles take 9 s).
  std::string sha256;
};

struct ProfileRef {
  const ast::Profile* profile = nullptr;
  const LoadedFile* file = nullptr;
};

struct Program {
  std::vector<std::unique_ptr<LoadedFile>> files;  // load order; files[0] is the root
  std::map<std::string, ProfileRef> profiles;      // every profile of every file
  // Profiles whose name an earlier one already had (the loader reports each;
  // `profiles` keeps the first). `cocoon check` still checks their bodies.
  std::vector<ProfileRef> redefinitions;
  // Errors of slips the parser mended in files loaded anyway
  // (SlipRecovery::kAstForChecking): they do not stop `check`.
  size_t slip_errors = 0;
  // The paths an include or import tried, and found no regular file at,
  // before the one it resolved to (absolute, as tried; each once): a file
  // put at one of them later would be read instead. `import "strict"` in
  // /p/policy.cocoon tries /p/strict.cocoon and /p/strict before the
  // shipped policies/strict.cocoon.
  std::vector<std::string> shadowing_paths;
  // An include or import that found its file through a symlink: the path it
  // found (absolute, as tried) and the canonical path the file is loaded
  // under. The artifact cache hashes the file again through the found path,
  // so a repointed link is a miss, not the old plan.
  struct Alias {
    std::string found;
    std::string canonical;
  };
  std::vector<Alias> aliases;
  // Where each file other than the root was included or imported from (the
  // first time), for the "imported here" notes under its diagnostics. Kept
  // for files that failed to parse too.
  struct ReadFrom {
    SourcePtr file;       // the file read
    SourcePtr by;         // the file whose directive read it
    Span directive;       // that `include` or `import` statement
    bool is_import = false;
  };
  std::vector<ReadFrom> read_from;

  const LoadedFile* root() const { return files.empty() ? nullptr : files.front().get(); }
};

// Reads `path` and what it pulls in. Problems become diagnostics; the Program
// holds whatever loaded cleanly (the root is absent if it failed to parse).
Program LoadProgramFromFile(const std::string& path, const LoadOptions& options, Diagnostics& diagnostics);

// Same, for the file at `path` whose bytes the caller already read (`text`):
// it is not read again (a second read could see other bytes).
Program LoadProgramFromFileText(const std::string& path, const std::string& text, const LoadOptions& options,
                                Diagnostics& diagnostics);

// Same, for text that is not on disk (`cocoon run` with an inline policy):
// relative includes resolve against the current directory.
Program LoadProgramFromText(const std::string& display_name, const std::string& text,
                            const LoadOptions& options, Diagnostics& diagnostics);

// Adds, under each diagnostic from all()[first] on that is in a file the
// root read through `include` or `import`, a note at that directive (and at
// the one that read the file holding it, up to the root): why it was read.
void AddReadFromNotes(const Program& program, Diagnostics& diagnostics, size_t first);

// Reads a whole regular file of at most max_bytes; false with a message otherwise.
bool ReadPolicyFile(const std::string& path, size_t max_bytes, std::string& text, std::string& error);

}  // namespace cocoon::frontend
