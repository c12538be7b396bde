#include "compiler/frontend/loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <set>

#include "compiler/common/digest.h"

namespace cocoon::frontend {
namespace {

namespace fs = std::filesystem;

std::string Canonical(const std::string& path) {
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(fs::absolute(path, ec), ec);
  return ec ? path : canonical.string();
}

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

class Loader {
 public:
  Loader(const LoadOptions& options, Diagnostics& diagnostics) : options_(options), diagnostics_(diagnostics) {}

  // Loads one file (already read) and recurses into its directives.
  void Load(std::string path, std::string directory, SourcePtr source) {
    std::optional<ast::File> parsed = ParsePolicy(source, options_.parse, diagnostics_);
    if (!parsed) return;
    auto file = std::make_unique<LoadedFile>();
    file->path = std::move(path);
    file->directory = std::move(directory);
    file->source = source;
    file->ast = std::move(*parsed);
    file->sha256 = Sha256Hex(source->text());
    program_.slip_errors += file->ast.slip_errors;
    LoadedFile* raw = file.get();
    program_.files.push_back(std::move(file));
    if (!raw->path.empty()) loaded_.insert(raw->path);
    stack_.push_back(raw->path);
    for (const ast::Directive& directive : raw->ast.directives) Follow(*raw, directive);
    stack_.pop_back();
    IndexProfiles(*raw);
  }

  Program Take() { return std::move(program_); }

 private:
  void Follow(const LoadedFile& from, const ast::Directive& directive) {
    const std::string& target = directive.target.text;
    bool is_import = directive.keyword.text == "import";
    std::vector<std::string> missed;
    std::string found;
    std::string resolved = Resolve(from, target, is_import, missed, found);
    if (!resolved.empty()) {
      RecordShadowingPaths(missed);
      RecordAlias(found, resolved);
    }
    if (resolved.empty()) {
      if (std::string found = NonRegularCandidate(from, target, is_import); !found.empty()) {
        diagnostics_.Error(from.source, directive.target.span,
                           "\"" + target + "\" is " + found + ", which is not a regular file",
                           "include and import read policy files (*.cocoon)");
        return;
      }
      std::string where = is_import ? "in " + SearchList(from) : "relative to " + from.directory;
      if (fs::path(target).is_absolute()) where = "(no regular file " + target + " or " + target + ".cocoon)";
      diagnostics_.Error(from.source, directive.target.span,
                         "cannot find \"" + target + "\" " + where,
                         is_import ? "add a search path with -I DIR or COCOON_POLICY_PATH" : "");
      return;
    }
    // Only policy files are read. A policy under review (a pull request's,
    // checked in CI) could otherwise name /proc/self/environ, a key file or
    // a symlink to one, and the parse error would print its first line in
    // the log. The name checked is the resolved one, symlinks followed.
    if (fs::path(resolved).extension() != ".cocoon") {
      diagnostics_.Error(from.source, directive.target.span,
                         "\"" + target + "\" resolves to " + resolved + ", which is not a policy file",
                         "include and import read only files named *.cocoon; rename the file or fix the path");
      return;
    }
    if (std::find(stack_.begin(), stack_.end(), resolved) != stack_.end()) {
      std::string chain;
      for (auto it = std::find(stack_.begin(), stack_.end(), resolved); it != stack_.end(); ++it) {
        chain += fs::path(*it).filename().string() + " -> ";
      }
      diagnostics_.Error(from.source, directive.span,
                         "include cycle: " + chain + fs::path(resolved).filename().string());
      return;
    }
    if (loaded_.count(resolved)) return;  // already loaded through another path: fine
    if (stack_.size() >= options_.max_include_depth) {
      diagnostics_.Error(from.source, directive.span,
                         "includes nest deeper than the limit of " + std::to_string(options_.max_include_depth));
      return;
    }
    if (program_.files.size() >= options_.max_files) {
      diagnostics_.Error(from.source, directive.span,
                         "more than " + std::to_string(options_.max_files) + " policy files");
      return;
    }
    std::string text, error;
    if (!ReadPolicyFile(resolved, options_.parse.max_file_bytes, text, error)) {
      diagnostics_.Error(from.source, directive.target.span, error);
      return;
    }
    auto source = std::make_shared<const Source>(DisplayName(resolved), std::move(text));
    program_.read_from.push_back({source, from.source, directive.span, is_import});
    Load(resolved, fs::path(resolved).parent_path().string(), std::move(source));
  }

  // The paths `target` may name, in the order they are tried.
  std::vector<std::string> Candidates(const LoadedFile& from, const std::string& target, bool is_import) const {
    std::vector<std::string> dirs{from.directory};
    if (is_import) dirs.insert(dirs.end(), options_.search_paths.begin(), options_.search_paths.end());
    std::vector<std::string> candidates;
    for (const std::string& dir : dirs) {
      fs::path base = fs::path(target).is_absolute() ? fs::path(target) : fs::path(dir) / target;
      // NAME.cocoon before NAME: a policy beside a same-named other file
      // (a directory, a script) is the one meant.
      candidates.push_back(base.string() + ".cocoon");
      candidates.push_back(base.string());
    }
    return candidates;
  }

  // The first candidate that is a regular file, canonical; `missed` gets
  // the candidates tried before it.
  std::string Resolve(const LoadedFile& from, const std::string& target, bool is_import,
                      std::vector<std::string>& missed, std::string& found) const {
    for (const std::string& candidate : Candidates(from, target, is_import)) {
      if (IsRegularFile(candidate)) {
        found = candidate;
        return Canonical(candidate);
      }
      missed.push_back(candidate);
    }
    return {};
  }

  // The path a directive found its file at, when symlinks make it another
  // than the canonical one the file is loaded under: repointing that link
  // (or a linked directory on the way) changes what the directive reads
  // while the canonical file stays the same.
  void RecordAlias(const std::string& found, const std::string& canonical) {
    std::error_code ec;
    std::string absolute = fs::absolute(found, ec).lexically_normal().string();
    if (ec || absolute == canonical) return;
    if (alias_seen_.insert(absolute).second) program_.aliases.push_back({absolute, canonical});
  }

  void RecordShadowingPaths(const std::vector<std::string>& missed) {
    for (const std::string& candidate : missed) {
      std::error_code ec;
      std::string absolute = fs::absolute(candidate, ec).string();  // a relative -I DIR
      if (ec) absolute = candidate;
      if (shadowing_seen_.insert(absolute).second) program_.shadowing_paths.push_back(absolute);
    }
  }

  // The first candidate that exists but is not a regular file (a directory,
  // a device), or "": "cannot find" would be wrong about it.
  std::string NonRegularCandidate(const LoadedFile& from, const std::string& target, bool is_import) const {
    for (const std::string& candidate : Candidates(from, target, is_import)) {
      struct stat st;
      if (::stat(candidate.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return candidate;
    }
    return {};
  }

  std::string SearchList(const LoadedFile& from) const {
    std::string out = from.directory;
    for (const std::string& dir : options_.search_paths) out += ", " + dir;
    return out;
  }

  // Shows a file under the current directory relative to it (as compilers
  // do); anything else keeps its absolute path: "../work/main/x.cocoon" from
  // /tmp says less than "/work/main/x.cocoon" and is no shorter.
  static std::string DisplayName(const std::string& path) {
    std::error_code ec;
    fs::path relative = fs::relative(path, fs::current_path(ec), ec);
    if (ec || relative.empty() || *relative.begin() == "..") return path;
    return relative.string();
  }

  void IndexProfiles(const LoadedFile& file) {
    for (const ast::Profile& profile : file.ast.profiles) {
      auto [it, inserted] = program_.profiles.emplace(profile.name.text, ProfileRef{&profile, &file});
      // A profile with a syntax error (cocoon check) may have a name that
      // recovery made up (`profile {`): it is not checked, and not reported
      // as a second definition either.
      if (!inserted && (profile.has_syntax_errors || it->second.profile->has_syntax_errors)) continue;
      if (!inserted) {
        const LoadedFile& first = *it->second.file;
        LineCol at = first.source->Locate(it->second.profile->name.span.begin);
        diagnostics_.Error(file.source, profile.name.span,
                           "profile '" + profile.name.text + "' is already defined at " +
                               first.source->name() + ":" + std::to_string(at.line));
        program_.redefinitions.push_back(ProfileRef{&profile, &file});
      }
    }
  }

  const LoadOptions& options_;
  Diagnostics& diagnostics_;
  Program program_;
  std::vector<std::string> stack_;
  std::set<std::string> loaded_;
  std::set<std::string> shadowing_seen_;
  std::set<std::string> alias_seen_;
};

}  // namespace

void AddReadFromNotes(const Program& program, Diagnostics& diagnostics, size_t first) {
  auto read_from = [&program](const Source* file) -> const Program::ReadFrom* {
    for (const Program::ReadFrom& entry : program.read_from) {
      if (entry.file.get() == file) return &entry;
    }
    return nullptr;
  };
  for (size_t i = first; i < diagnostics.all().size(); ++i) {
    const Diagnostic& d = diagnostics.all()[i];
    if (d.severity == Severity::kNote) continue;
    const Source* file = d.source.get();
    // Each file is read once, from one directive: the walk ends at the root
    // (bounded by the number of files all the same).
    for (size_t step = 0; step < program.read_from.size() && file != nullptr; ++step) {
      const Program::ReadFrom* entry = read_from(file);
      if (entry == nullptr) break;
      diagnostics.AttachNote(i, entry->by, entry->directive,
                             entry->file->name() + (entry->is_import ? " is imported here" : " is included here"));
      file = entry->by.get();
    }
  }
}

bool ReadPolicyFile(const std::string& path, size_t max_bytes, std::string& text, std::string& error) {
  if (path == "-") {
    // Not standard input: a policy's includes, imports and diagnostics need
    // a file name and a directory.
    error = "cannot read a policy from standard input ('-'): give the policy's file name (save it to a file first)";
    return false;
  }
  // O_NONBLOCK: opening a FIFO must not hang; non-regular files are refused below.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    error = "cannot open " + path + ": " + std::strerror(errno);
    return false;
  }
  struct stat st;
  bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  if (!ok) {
    error = path + " is not a regular file";
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    error = path + " is " + std::to_string(st.st_size) + " bytes; the limit is " + std::to_string(max_bytes);
    ok = false;
  } else {
    text.clear();
    char buffer[65536];
    ssize_t n;
    while ((n = ::read(fd, buffer, sizeof buffer)) > 0 && text.size() <= max_bytes) text.append(buffer, n);
    if (n < 0) {
      error = "cannot read " + path + ": " + std::strerror(errno);
      ok = false;
    } else if (text.size() > max_bytes) {
      error = path + " grew past the limit of " + std::to_string(max_bytes) + " bytes";
      ok = false;
    }
  }
  ::close(fd);
  return ok;
}

Program LoadProgramFromFile(const std::string& path, const LoadOptions& options, Diagnostics& diagnostics) {
  Loader loader(options, diagnostics);
  std::string text, error;
  if (!ReadPolicyFile(path, options.parse.max_file_bytes, text, error)) {
    diagnostics.Error(nullptr, Span{}, error);
    return loader.Take();
  }
  std::string canonical = Canonical(path);
  auto source = std::make_shared<const Source>(path, std::move(text));
  const size_t first = diagnostics.all().size();
  loader.Load(canonical, fs::path(canonical).parent_path().string(), std::move(source));
  Program program = loader.Take();
  AddReadFromNotes(program, diagnostics, first);
  return program;
}

Program LoadProgramFromFileText(const std::string& path, const std::string& text, const LoadOptions& options,
                                Diagnostics& diagnostics) {
  Loader loader(options, diagnostics);
  if (text.size() > options.parse.max_file_bytes) {
    diagnostics.Error(nullptr, Span{}, path + " is " + std::to_string(text.size()) + " bytes; the limit is " +
                                           std::to_string(options.parse.max_file_bytes));
    return loader.Take();
  }
  std::string canonical = Canonical(path);
  auto source = std::make_shared<const Source>(path, text);
  loader.Load(canonical, fs::path(canonical).parent_path().string(), std::move(source));
  return loader.Take();
}

Program LoadProgramFromText(const std::string& display_name, const std::string& text,
                            const LoadOptions& options, Diagnostics& diagnostics) {
  Loader loader(options, diagnostics);
  std::error_code ec;
  auto source = std::make_shared<const Source>(display_name, text);
  const size_t first = diagnostics.all().size();
  loader.Load("", fs::current_path(ec).string(), std::move(source));
  Program program = loader.Take();
  AddReadFromNotes(program, diagnostics, first);
  return program;
}

}  // namespace cocoon::frontend
