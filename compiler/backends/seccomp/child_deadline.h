// Runs library code that may never return in a child process with a
// deadline.
//
// Why: libseccomp 2.5.4's seccomp_rule_add can loop forever (src/db.c,
// freeing a rule's argument tree after merging it into the syscall's tree).
// Found by the verifier's mutation test; the smallest case is two allow rules
// of mbind, `arg1 != 7 and arg2 == 5` and `arg1 != 7 and arg2 ==
// 0x500000000`. A policy that `cocoon check` accepted then hung `cocoon
// compile` and every launch that compiles it. The loop cannot be interrupted
// inside the process, so the rules that can trigger it are first added in a
// throwaway child that is killed at the deadline (seccomp_backend.cc).
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include "compiler/common/status.h"

namespace cocoon::backends {

// `work(progress)` runs in a forked child, which calls `progress(label)`
// before each step. Ok when the child finished within `deadline`;
// ResourceExhausted when it did not (it is killed); Internal when it died
// or failed first. Either way `*stuck_at` holds the label of the step it
// was in. The child must only compute (no output, no locks
// held by other threads of the caller: fork copies only the calling thread).
Status RunInChildWithDeadline(const std::function<void(const std::function<void(const char*)>& progress)>& work,
                              std::chrono::milliseconds deadline, std::string* stuck_at);

}  // namespace cocoon::backends
