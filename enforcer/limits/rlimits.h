// Applying a precomputed RlimitSet in the child, after clone and before exec.
//
// Async-signal-safe: only setrlimit(2) on a table the parent built; no
// allocation, no locks, no errno-to-string. Safe to call after clone(2)
// without CLONE_VM issues and after fork() in a multi-threaded parent.
//
// Order note for the core sequence: call it AFTER entering the new user
// namespace. Since Linux 5.14 RLIMIT_NPROC is counted per (user namespace,
// uid) through ucounts, and a namespace records its creator's RLIMIT_NPROC as
// the cap at the parent level (kernel/ucount.c is_rlimit_overlimit), so
// lowering it before unshare/clone(CLONE_NEWUSER) would also cap the parent's
// level at the small value.
#pragma once

#include "enforcer/limits/limit_plan.h"

namespace cocoon::enforcer {

// Returns 0 on success, or the errno of the first setrlimit that failed, with
// *failed_resource set to its RLIMIT_* (the child reports {step, errno} to the
// parent, which prints RlimitName(*failed_resource)).
int ApplyRlimits(const RlimitSet& set, int* failed_resource) noexcept;

}  // namespace cocoon::enforcer
