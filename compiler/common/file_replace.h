// Rewriting a file in place without a window in which it is half written
// (`cocoon fmt --write`): the new text goes to a temporary beside the file,
// then rename(2) puts it in place.
#pragma once

#include <string>
#include <string_view>

#include "compiler/common/status.h"

namespace cocoon {

// Replaces the contents of `path` with `bytes`, atomically. A symlink is
// followed: the file it resolves to is rewritten and the link stays a link.
// The file keeps its permission bits (a 0600 policy stays 0600). A hard link
// to the file keeps the old contents: rename gives this name a new inode.
Status ReplaceFileContents(const std::string& path, std::string_view bytes);

}  // namespace cocoon
