// The seccomp filter (issue 4, step 6): validated and copied in the parent,
// loaded by the child as its very last step before execve.
#pragma once

#include <linux/filter.h>

#include <string_view>
#include <vector>

#include "compiler/common/status.h"

namespace cocoon::enforcer {

// Checks raw BPF bytes (linux.seccomp.bpf: an array of struct sock_filter in
// host byte order): non-empty, a whole number of instructions, at most
// BPF_MAXINSNS, every jump in range, and the last instruction a RET. The
// kernel verifies again; this gives a clear message before clone.
Result<std::vector<sock_filter>> ValidateSeccompProgram(std::string_view bytes);

// True if the program can return SECCOMP_RET_USER_NOTIF (then the child must
// install it with SECCOMP_FILTER_FLAG_NEW_LISTENER and the supervisor answers).
bool ProgramUsesUserNotif(const std::vector<sock_filter>& program);

}  // namespace cocoon::enforcer
