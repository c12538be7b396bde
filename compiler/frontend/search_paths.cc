#include "compiler/frontend/search_paths.h"

#include <cstdlib>
#include <sstream>

#ifndef COCOON_POLICIES_DIR
#define COCOON_POLICIES_DIR ""
#endif

namespace cocoon::frontend {

std::vector<std::string> DefaultSearchPaths() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("COCOON_POLICY_PATH"); env != nullptr && *env != '\0') {
    std::stringstream stream(env);
    std::string dir;
    while (std::getline(stream, dir, ':')) {
      if (!dir.empty()) paths.push_back(dir);
    }
    return paths;
  }
  if (*COCOON_POLICIES_DIR != '\0') paths.emplace_back(COCOON_POLICIES_DIR);
  return paths;
}

}  // namespace cocoon::frontend
