// RLIMIT_FSIZE, the cap per file that the Linux plan and the OCI config set
// and the enforcer applies (docs/language.md, "Limits"). Its own header:
// policy_ir.h is included everywhere.
#pragma once

#include <cstdint>

#include "compiler/ir/policy_ir.h"

namespace cocoon::ir {

// `file_size`; else the disk limit (the stricter of `disk` and the work
// dir's quota), a cap per file that also holds in writable mounts, which no
// work dir tmpfs covers; else kDefaultFileSizeBytes (`unlimited` is unset).
// A direct work dir has no tmpfs to hold the disk limit, so there it also
// caps `file_size`. The enforcer's limit planner follows the same rule
// (limit_plan.cc PlanFiles and PlanDisk) and keeps the stricter of its value
// and the plan's (sandbox.cc MergePlanRlimits).
inline uint64_t FileSizeRlimitBytes(const Limits& limits, const WorkDir& work) {
  uint64_t disk = limits.disk_bytes.set ? limits.disk_bytes.value : 0;
  if (work.quota_bytes != 0 && (disk == 0 || work.quota_bytes < disk)) disk = work.quota_bytes;
  uint64_t fsize = limits.file_size_bytes.set ? limits.file_size_bytes.value
                   : disk != 0                ? disk
                                              : kDefaultFileSizeBytes;
  if (work.mode == WorkMode::kDirect && disk != 0 && disk < fsize) fsize = disk;
  return fsize;
}

}  // namespace cocoon::ir
