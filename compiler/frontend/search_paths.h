// Where `import "name"` looks for policy files. A file of its own so that
// the `cocoon` launcher (cli/fast_path/) can find presets without linking
// the rest of the front end.
#pragma once

#include <string>
#include <vector>

namespace cocoon::frontend {

// $COCOON_POLICY_PATH (colon-separated) when set, else the repo's policies/
// directory compiled in at build time.
std::vector<std::string> DefaultSearchPaths();

}  // namespace cocoon::frontend
