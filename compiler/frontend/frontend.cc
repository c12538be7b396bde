#include "compiler/frontend/frontend.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
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

std::optional<ir::Policy> CompileProgram(const Program& program, const std::string& profile,
                                         const FrontendOptions& options, Diagnostics& diagnostics) {
  if (diagnostics.has_errors() || program.root() == nullptr) return std::nullopt;
  std::optional<std::string> name = SelectProfile(program, profile, diagnostics);
  if (!name) return std::nullopt;
  // Uncapped, then merged in source order as `check` does: the checker finds
  // a profile's problems section by section (arch and default before the
  // rules, the work dir's conflicts at the end), not line by line.
  Diagnostics found(DiagnosticsOptions{.max_errors = std::numeric_limits<size_t>::max()});
  std::optional<ir::Policy> policy = CheckProfile(program, *name, found, options.syscall_rule_check);
  std::set<std::tuple<std::string, uint32_t, std::string>> seen;
  MergeUnique(found, diagnostics, seen);
  return policy;
}

}  // namespace


std::optional<ir::Policy> CompilePolicyFile(const std::string& path, const std::string& profile,
                                            const FrontendOptions& options, Diagnostics& diagnostics) {
  Program program = LoadProgramFromFile(path, MakeLoadOptions(options), diagnostics);
  return CompileProgram(program, profile, options, diagnostics);
}

std::optional<ir::Policy> CompilePolicyFileText(const std::string& path, const std::string& text,
                                                const std::string& profile, const FrontendOptions& options,
                                                Diagnostics& diagnostics) {
  Program program = LoadProgramFromFileText(path, text, MakeLoadOptions(options), diagnostics);
  return CompileProgram(program, profile, options, diagnostics);
}

std::optional<ir::Policy> CompilePolicyText(const std::string& display_name, const std::string& text,
                                            const std::string& profile, const FrontendOptions& options,
                                            Diagnostics& diagnostics) {
  Program program = LoadProgramFromText(display_name, text, MakeLoadOptions(options), diagnostics);
  return CompileProgram(program, profile, options, diagnostics);
}

namespace {

// What checking a profile with a syntax error inside reports, of what the
// checker found in what the parser left of it. Kept: a diagnostic inside a
// statement that holds no syntax error (`memroy` in the `limits` block
// after a broken `network offf`), at the `extends` name, or in another
// profile (an ancestor's). Dropped, as what may only follow from the
// statements the parser dropped: one at the profile's name ("no syscalls
// section", when that was the section dropped), in a block that holds an
// error but not in one of its intact statements, and those that weigh one
// statement against one that may have been dropped (`relaxes` acknowledging
// nothing, a cwd, hide or mount against the work dir, which is /work when its
// `work` line was the one dropped), listed in kDependsOnOtherStatements.
bool KeepForBrokenProfile(const Diagnostic& d, const LoadedFile& file, const ast::Profile& profile) {
  if (d.source == nullptr || d.source != file.source) return true;
  const uint32_t at = d.span.begin;
  if (at < profile.span.begin || at >= profile.span.end) return true;
  if (profile.has_parent && at >= profile.parent.span.begin && at < profile.parent.span.end) return true;
  auto has_error = [&profile](const Span& span) {
    return std::any_of(profile.syntax_errors.begin(), profile.syntax_errors.end(),
                       [&span](uint32_t e) { return e >= span.begin && e <= span.end; });
  };
  const std::vector<ast::Statement>* level = &profile.body;
  const ast::Statement* deepest = nullptr;
  for (;;) {
    auto it = std::find_if(level->begin(), level->end(),
                           [at](const ast::Statement& s) { return at >= s.span.begin && at < s.span.end; });
    if (it == level->end()) break;
    deepest = &*it;
    level = &it->block;
  }
  if (deepest == nullptr || has_error(deepest->span)) return false;
  static constexpr std::string_view kDependsOnOtherStatements[] = {
      "acknowledges nothing", "work dir", "working directory",
  };
  return std::none_of(std::begin(kDependsOnOtherStatements), std::end(kDependsOnOtherStatements),
                      [&d](std::string_view s) { return d.message.find(s) != std::string::npos; });
}

bool CheckPolicyFileFound(const std::string& path, const std::string& profile, const FrontendOptions& options,
                          Diagnostics& diagnostics) {
  const size_t errors_before = diagnostics.error_count() + diagnostics.suppressed();
  LoadOptions load = MakeLoadOptions(options);
  // `diagnostics` is uncapped here (CheckPolicyFile caps it): every syntax
  // error up to the parser's own limit is counted, past --max-errors too.
  load.parse.max_syntax_errors = 25;
  // A unit written apart (`wall_time 5 sec`) is reported, and the rest of
  // the file still checked (`memroy` on the same line).
  load.parse.slip_recovery = SlipRecovery::kAstForChecking;
  Program program = LoadProgramFromFile(path, load, diagnostics);
  // A profile defined twice is an error of its own, and both definitions are
  // still checked, so that it hides no other mistake. Any other load error (a
  // file missing or not parsing) stops here: checking without that file
  // would only report what follows from it (unknown parents).
  const size_t load_errors = diagnostics.error_count() + diagnostics.suppressed() - errors_before;
  if (program.root() == nullptr || load_errors > program.redefinitions.size() + program.slip_errors) return false;
  const LoadedFile& root = *program.root();
  std::vector<ProfileRef> definitions;
  std::set<std::string> named;
  for (const ast::Profile& p : root.ast.profiles) {
    if (!profile.empty() && p.name.text != profile) continue;
    // By name, as `compile` resolves it; the other definitions of that name
    // are each checked below, once.
    if (named.insert(p.name.text).second) {
      auto it = program.profiles.find(p.name.text);
      if (it != program.profiles.end()) definitions.push_back(it->second);
    }
  }
  for (const ProfileRef& redefinition : program.redefinitions) {
    if (redefinition.file == &root && (profile.empty() || redefinition.profile->name.text == profile)) {
      definitions.push_back(redefinition);
    }
  }
  if (!profile.empty() && named.empty()) {
    // A profile of an included file, or of none (CheckProfile reports that).
    auto it = program.profiles.find(profile);
    if (it == program.profiles.end()) {
      CheckProfile(program, profile, diagnostics, options.syscall_rule_check);
      return false;
    }
    definitions.push_back(it->second);
    named.insert(profile);
  }
  if (named.empty()) {
    // What compile and explain would refuse (SelectProfile), said here too.
    diagnostics.Error(root.source, Span{}, "no profile in " + root.source->name(),
                      "define one: profile NAME { ... }");
    return false;
  }
  // A profile that extends one with a syntax error inside is not checked:
  // what it inherits is unknown. The profile with the error is: the parser
  // dropped the statements the errors are in (PruneDamagedStatements), and
  // what it finds is then filtered (KeepForBrokenProfile).
  auto broken_ancestor = [&program](const ProfileRef& ref) {
    std::set<std::string> walked{ref.profile->name.text};
    for (const ast::Profile* p = ref.profile; p != nullptr;) {
      if (p != ref.profile && p->has_syntax_errors) return true;
      if (!p->has_parent) return false;
      auto parent = program.profiles.find(p->parent.text);
      p = parent == program.profiles.end() ? nullptr : parent->second.profile;
      if (p != nullptr && !walked.insert(p->name.text).second) return p->has_syntax_errors && p != ref.profile;
    }
    return false;
  };
  std::erase_if(definitions, broken_ancestor);
  std::set<std::tuple<std::string, uint32_t, std::string>> seen;
  CheckSession session(program);
  for (const ProfileRef& definition : definitions) {
    // Uncapped, so that every error reaches MergeUnique and the cap of
    // `diagnostics` counts what it drops ("N more error(s) not shown"); a
    // capped copy would drop them uncounted. Its size is bounded by the
    // profile's statements, which are already in memory.
    Diagnostics one(DiagnosticsOptions{.max_errors = std::numeric_limits<size_t>::max()});
    CheckProfile(program, definition, session, one, options.syscall_rule_check);
    if (definition.profile->has_syntax_errors) {
      Diagnostics kept(DiagnosticsOptions{.max_errors = std::numeric_limits<size_t>::max()});
      for (const Diagnostic& d : one.all()) {
        if (KeepForBrokenProfile(d, *definition.file, *definition.profile)) kept.Add(d);
      }
      MergeUnique(kept, diagnostics, seen);
      continue;
    }
    MergeUnique(one, diagnostics, seen);
  }
  Diagnostics missing_syscalls(DiagnosticsOptions{.max_errors = std::numeric_limits<size_t>::max()});
  session.ReportMissingSyscalls(missing_syscalls);
  MergeUnique(missing_syscalls, diagnostics, seen);
  return !diagnostics.has_errors();
}

}  // namespace

bool CheckPolicyFile(const std::string& path, const std::string& profile, const FrontendOptions& options,
                     Diagnostics& diagnostics) {
  // Everything is found uncapped, then reported in source order (syntax
  // errors, the checker's per profile, and the Linux filter's came in that
  // order) and capped: the cap then keeps the first errors of the file, and
  // counts the rest.
  Diagnostics found(DiagnosticsOptions{.max_errors = std::numeric_limits<size_t>::max()});
  const bool ok = CheckPolicyFileFound(path, profile, options, found);
  // Sorted by file (in the order the files first appear) and position; a
  // diagnostic with no position (a note such as "stopped parsing after 25
  // syntax errors") keeps its place after the one before it.
  std::vector<std::string> files;
  std::vector<std::tuple<size_t, uint32_t, size_t>> keys;  // file rank, offset, index
  const std::vector<Diagnostic>& all = found.all();
  for (size_t i = 0; i < all.size(); ++i) {
    if (all[i].source == nullptr) {
      keys.emplace_back(keys.empty() ? 0 : std::get<0>(keys.back()), keys.empty() ? 0 : std::get<1>(keys.back()), i);
      continue;
    }
    const std::string& name = all[i].source->name();
    size_t rank = std::find(files.begin(), files.end(), name) - files.begin();
    if (rank == files.size()) files.push_back(name);
    keys.emplace_back(rank, all[i].span.begin, i);
  }
  std::stable_sort(keys.begin(), keys.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });
  for (const auto& key : keys) diagnostics.Add(all[std::get<2>(key)]);
  return ok && !diagnostics.has_errors();
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
