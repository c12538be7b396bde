// Helpers shared by the front-end tests.
#pragma once

#include <string>

#include "compiler/frontend/frontend.h"
#include "compiler/frontend/loader.h"

namespace cocoon::frontend::testing {

inline std::string RepoPath(const std::string& relative) { return std::string(COCOON_SOURCE_DIR) + "/" + relative; }

// Compiles `text` as "t.cocoon"; returns the rendered diagnostics.
inline std::string Diagnose(const std::string& text, std::optional<ir::Policy>* out = nullptr) {
  Diagnostics diagnostics;
  FrontendOptions options;
  auto policy = CompilePolicyText("t.cocoon", text, "", options, diagnostics);
  if (out) *out = std::move(policy);
  return diagnostics.Render();
}

}  // namespace cocoon::frontend::testing
