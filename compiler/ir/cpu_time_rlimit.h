// RLIMIT_CPU for `cpu_time`, the value the Linux plan and the OCI config set
// and the enforcer applies (enforcer/limits/limit_plan.cc PlanCpuTime).
#pragma once

#include <algorithm>
#include <cstdint>

#include "compiler/ir/policy_ir.h"

namespace cocoon::ir {

// Whole seconds, rounded up (at least 1), as soft and hard limit alike. On
// Linux the command is the init of its pid namespace (the enforcer's, and an
// OCI container's process), and the kernel drops the SIGXCPU of a lower soft
// limit for an init without a handler (sig_task_ignored, pid_namespaces(7)):
// only the hard limit's SIGKILL acts, so soft = hard - 1 gave a whole second
// more than the policy asked for.
inline uint64_t CpuTimeRlimitSeconds(const Limit& cpu_time_ms) {
  return std::max<uint64_t>(1, (cpu_time_ms.value + 999) / 1000);
}

}  // namespace cocoon::ir
