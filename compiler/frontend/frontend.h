// The policy-language front end's public API: .cocoon text -> checked,
// immutable ir::Policy, plus the entry points behind `cocoon check`,
// `cocoon explain` and `cocoon fmt`.
//
//   cocoon::Diagnostics diagnostics;
//   auto policy = cocoon::frontend::CompilePolicyFile("policies/strict.cocoon", "", {}, diagnostics);
//   if (!policy) { std::cerr << diagnostics.Render(); return 1; }
//
// Policy mistakes are Diagnostics (positioned, collected, capped); nothing
// here throws. Imports search: the importing file's directory, then
// FrontendOptions::search_paths, then DefaultSearchPaths().
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/frontend/search_paths.h"
#include "compiler/common/diagnostics.h"
#include "compiler/frontend/parser.h"  // DfaReuse
#include "compiler/ir/policy_ir.h"

namespace cocoon::frontend {

// Run on each checked profile; each problem is an error at the statement
// that made the syscall's rules. The seccomp back end's check
// (backends::SyscallRuleProblems: rule sets seccomp cannot express) is
// wired in by the CLI (cli/frontend_util.h), compile_fuzzer and the tests;
// the front end does not link the back ends, so it cannot call it itself.
using SyscallRuleCheck = std::function<std::vector<ir::SyscallRuleProblem>(const ir::Policy&)>;

struct FrontendOptions {
  std::vector<std::string> search_paths;  // -I DIR, searched before the defaults
  size_t max_file_bytes = 4 << 20;
  size_t max_include_depth = 16;
  size_t max_nesting = 64;
  DiagnosticsOptions diagnostics;         // the cap callers should give their Diagnostics
  DfaReuse dfa_reuse = DfaReuse::kPerParse;  // see parser.h
  SyscallRuleCheck syscall_rule_check;    // empty: none
};

// Compiles one profile: `profile` if not empty, else the file's only profile,
// else the profile named like the file. nullopt when there are errors.
std::optional<ir::Policy> CompilePolicyFile(const std::string& path, const std::string& profile,
                                            const FrontendOptions& options, Diagnostics& diagnostics);

// Same for the policy file at `path` whose bytes the caller has already read
// (`text`): it is not read again; includes and imports resolve as for the file.
std::optional<ir::Policy> CompilePolicyFileText(const std::string& path, const std::string& text,
                                                const std::string& profile, const FrontendOptions& options,
                                                Diagnostics& diagnostics);

// Same for a policy held in memory (`cocoon run --policy-text`); includes
// resolve against the current directory, imports via the search paths.
std::optional<ir::Policy> CompilePolicyText(const std::string& display_name, const std::string& text,
                                            const std::string& profile, const FrontendOptions& options,
                                            Diagnostics& diagnostics);

// `cocoon check`: parses the file and its includes and checks every profile
// the file defines (or only `profile` when set). True when there are no errors.
bool CheckPolicyFile(const std::string& path, const std::string& profile, const FrontendOptions& options,
                     Diagnostics& diagnostics);

// The profiles a file defines, in order (empty on errors).
std::vector<std::string> ListProfiles(const std::string& path, const FrontendOptions& options,
                                      Diagnostics& diagnostics);

// `cocoon fmt`: the canonical text (comments kept; idempotent), or nullopt
// when the text does not parse.
std::optional<std::string> FormatPolicy(const std::string& display_name, const std::string& text,
                                        Diagnostics& diagnostics);

// `cocoon explain`: the resolved policy in plain words, with where each
// setting came from (profile, file:line).
std::string ExplainPolicy(const ir::Policy& policy);

}  // namespace cocoon::frontend
