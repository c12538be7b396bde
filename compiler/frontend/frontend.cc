#include "compiler/frontend/frontend.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <sstream>
#include <tuple>

#include "compiler/frontend/checker.h"
#include "compiler/frontend/loader.h"

namespace cocoon::frontend {
namespace {

LoadOptions MakeLoadOptions(const FrontendOptions& options) {
  LoadOptions load;
  load.search_paths = options.search_paths;
  for (const std::string& dir : DefaultSearchPaths()) load.search_paths.push_back(dir);
  load.max_include_depth = options.max_include_depth;
  load.parse.max_file_bytes = options.max_file_bytes;
  load.parse.max_nesting = options.max_nesting;
  load.parse.dfa_reuse = options.dfa_reuse;
  load.parse.max_syntax_errors = std::min<size_t>(options.diagnostics.max_errors, 25);
  return load;
}

std::optional<ir::Policy> CompileProgram(const Program& program, const std::string& profile,
                                         const FrontendOptions& options, Diagnostics& diagnostics) {
  if (diagnostics.has_errors() || program.root() == nullptr) return std::nullopt;
  std::optional<std::string> name = SelectProfile(program, profile, diagnostics);
  if (!name) return std::nullopt;
  return CheckProfile(program, *name, diagnostics, options.syscall_rule_check);
}

// Adds the diagnostics of `from` to `to`, skipping exact repeats (a parent's
// problem is found again when each of its children is checked).
void MergeUnique(const Diagnostics& from, Diagnostics& to, std::set<std::tuple<std::string, uint32_t, std::string>>& seen) {
  // Report in source order, whatever order the checker found them in.
  std::vector<Diagnostic> sorted = from.all();
  std::stable_sort(sorted.begin(), sorted.end(), [](const Diagnostic& a, const Diagnostic& b) {
    std::string an = a.source ? a.source->name() : "", bn = b.source ? b.source->name() : "";
    return std::tie(an, a.span.begin) < std::tie(bn, b.span.begin);
  });
  for (const Diagnostic& d : sorted) {
    auto key = std::make_tuple(d.source ? d.source->name() : "", d.span.begin, d.message);
    if (seen.insert(key).second) to.Add(d);
  }
}

}  // namespace


std::optional<ir::Policy> CompilePolicyFile(const std::string& path, const std::string& profile,
                                            const FrontendOptions& options, Diagnostics& diagnostics) {
  Program program = LoadProgramFromFile(path, MakeLoadOptions(options), diagnostics);
  return CompileProgram(program, profile, options, diagnostics);
}

std::optional<ir::Policy> CompilePolicyText(const std::string& display_name, const std::string& text,
                                            const std::string& profile, const FrontendOptions& options,
                                            Diagnostics& diagnostics) {
  Program program = LoadProgramFromText(display_name, text, MakeLoadOptions(options), diagnostics);
  return CompileProgram(program, profile, options, diagnostics);
}

bool CheckPolicyFile(const std::string& path, const std::string& profile, const FrontendOptions& options,
                     Diagnostics& diagnostics) {
  Program program = LoadProgramFromFile(path, MakeLoadOptions(options), diagnostics);
  if (diagnostics.has_errors() || program.root() == nullptr) return false;
  std::vector<std::string> names;
  if (!profile.empty()) {
    names.push_back(profile);
  } else {
    for (const ast::Profile& p : program.root()->ast.profiles) names.push_back(p.name.text);
  }
  std::set<std::tuple<std::string, uint32_t, std::string>> seen;
  for (const std::string& name : names) {
    Diagnostics one(options.diagnostics);
    CheckProfile(program, name, one, options.syscall_rule_check);
    MergeUnique(one, diagnostics, seen);
  }
  return !diagnostics.has_errors();
}

std::vector<std::string> ListProfiles(const std::string& path, const FrontendOptions& options,
                                      Diagnostics& diagnostics) {
  Program program = LoadProgramFromFile(path, MakeLoadOptions(options), diagnostics);
  std::vector<std::string> names;
  if (program.root() == nullptr) return names;
  for (const ast::Profile& p : program.root()->ast.profiles) names.push_back(p.name.text);
  return names;
}

}  // namespace cocoon::frontend
