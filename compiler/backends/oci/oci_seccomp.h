// The OCI runtime-spec `linux.seccomp` object (config-linux.md#seccomp) in
// its resolved form: no Docker archMap, no includes/excludes, one entry per
// (action, argument conditions) with the syscall names that share it.
// Conditions inside one entry are ANDed; separate entries are ORed, which is
// exactly the shape of EffectiveSyscalls rules. The same object, as a file,
// is the kubelet's Localhost seccomp profile.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compiler/backends/seccomp/effective_rules.h"
#include "compiler/common/status.h"

namespace cocoon::backends::oci {

// "SCMP_ACT_ALLOW", ... Notify has no listener in a plain OCI/Kubernetes run,
// so it becomes SCMP_ACT_ERRNO(EPERM) (fail closed) with a warning.
std::string ScmpAction(const ir::Action& action, std::vector<std::string>& warnings);

nlohmann::ordered_json SeccompToOci(const EffectiveSyscalls& rules, std::vector<std::string>& warnings);

// ComputeEffectiveSyscalls when the seccomp back end is linked; otherwise a
// clear error (never an empty, allow-everything filter).
Result<EffectiveSyscalls> EffectiveRulesFor(const ir::Syscalls& syscalls);

}  // namespace cocoon::backends::oci
