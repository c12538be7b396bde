// `cocoon import docker-seccomp`: turns a Docker/OCI seccomp profile (moby's
// default, containers/common's seccomp.json, an OCI config's linux.seccomp)
// into an equivalent .cocoon policy, so teams start from what they run.
//
// Docker's conditional parts are resolved for one target, as Docker itself
// does at container start (moby profiles/seccomp/seccomp.go):
//  - archMap / includes.arches / excludes.arches for the chosen architecture;
//  - includes.caps / excludes.caps against the granted capabilities (none by
//    default: a Cocoon sandbox holds none);
//  - minKernel is assumed satisfied (noted in the output).
// Names libseccomp does not know for the architecture are dropped and listed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/common/status.h"
#include "compiler/ir/policy_ir.h"

namespace cocoon::backends::oci {

struct DockerImportOptions {
  std::string profile_name = "imported";  // reduced to [A-Za-z0-9_-]
  std::string source_name;                // shown in the header comment
  ir::Arch arch = ir::Arch::kX86_64;
  std::vector<std::string> capabilities;  // e.g. {"CAP_SYS_PTRACE"}
  size_t max_input_bytes = 4u << 20;
  size_t max_entries = 4096;
};

// The .cocoon text, or InvalidArgument for input that is not a profile.
Result<std::string> ImportDockerSeccomp(std::string_view json, const DockerImportOptions& options);

}  // namespace cocoon::backends::oci
