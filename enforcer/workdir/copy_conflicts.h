// Whether --copy files may join a staged work dir without replacing
// anything of the host's. Copies are committed back with the run's results
// (docs/limits_and_workdir.md), so a copy named like a host file of other
// content would overwrite that original although the command never wrote
// it, and two copies of one name would keep only the last.
#pragma once

#include <string>
#include <vector>

#include "compiler/common/status.h"
#include "compiler/ir/policy_ir.h"

namespace cocoon::enforcer {

// Refuses (InvalidArgument, naming both paths) a copy whose destination
// equals or contains another's, whose source is the work dir or holds it,
// or which would replace an entry of `host_dir` (opened as `host_dir_fd`)
// with other content: a file with other bytes, or one kind of entry with
// another. The same bytes again are fine: a rerun with the same --copy
// finds the copy committed by the last run. Symlinks are never followed.
Status CheckCopiesAgainstWorkDir(const std::vector<ir::Copy>& copies, const std::string& host_dir, int host_dir_fd);

}  // namespace cocoon::enforcer
