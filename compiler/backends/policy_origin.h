// Where a policy set something, for back-end warnings that point at the
// statement a target cannot honour (a device it cannot grant, ...), the way
// `cocoon explain` names a setting's origin.
#pragma once

#include <string>

#include "compiler/ir/policy_ir.h"

namespace cocoon::backends {

// " (at FILE:LINE)", or " (at FILE:LINE, in profile P)" when an ancestor
// profile set it, for the ir::Policy::provenance key `key` (e.g.
// "filesystem.devices.kvm"); "" when the policy does not record it (IR built
// in code).
std::string AtPolicyLine(const ir::Policy& policy, const std::string& key);

// "'devices { NAME on }'" plus AtPolicyLine for filesystem.devices.NAME:
// how every back end names a device request it cannot fully grant.
std::string DeviceRequest(const ir::Policy& policy, const std::string& device);

// "'work /work quota 16MiB'" (" direct" added for a direct work dir) plus
// AtPolicyLine for filesystem.work: how back ends name a work dir whose
// staging or quota they cannot carry out.
std::string WorkStatement(const ir::Policy& policy);

// "'tmpfs /tmp size 8MiB'" plus AtPolicyLine for the mount: how back ends
// name a tmpfs they cannot give its own capped file system.
std::string TmpfsStatement(const ir::Policy& policy, const ir::Mount& mount);

// "8MiB", "1536KiB", "1000B": the largest binary unit that divides `bytes`,
// as a policy would write it.
std::string PolicySize(uint64_t bytes);

}  // namespace cocoon::backends
