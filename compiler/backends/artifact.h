// What every back end returns: named byte blobs with their hash, plus the
// warnings the back end wants the user to see (e.g. "policy reopens bpf").
// Back ends are pure functions IR -> artifacts; they never touch the disk.
// The driver (compiler/driver) writes them atomically with manifest.json.
#pragma once

#include <string>
#include <vector>

#include "compiler/common/status.h"
#include "compiler/ir/policy_ir.h"

namespace cocoon::backends {

struct Artifact {
  std::string target;      // "linux", "macos", "windows", "oci", "k8s"
  std::string path;        // relative output path, e.g. "linux.seccomp.bpf", "oci/config.json"
  std::string media_type;  // e.g. "application/vnd.cocoon.seccomp-bpf", "application/json"
  std::string bytes;
  std::string sha256;      // hex of bytes (set with MakeArtifact)
  std::vector<std::string> warnings;
};

Artifact MakeArtifact(std::string target, std::string path, std::string media_type, std::string bytes);

// One function per back end. Each returns every file of its target.
// linux: linux.seccomp.bpf, linux.seccomp.txt, linux.seccomp.json (notify/log
//        rule table + stats), linux.plan.json
Result<std::vector<Artifact>> CompileSeccomp(const ir::Policy& policy);          // backends/seccomp
Result<std::vector<Artifact>> CompileLinuxPlan(const ir::Policy& policy,
                                               const Artifact& seccomp_bpf);     // backends/plan
Result<std::vector<Artifact>> CompileSbpl(const ir::Policy& policy);             // backends/sbpl: macos.sb, macos.params.json
Result<std::vector<Artifact>> CompileWindows(const ir::Policy& policy);          // backends/windows: windows.json
Result<std::vector<Artifact>> CompileOci(const ir::Policy& policy);              // backends/oci: oci/config.json
Result<std::vector<Artifact>> CompileKubernetes(const ir::Policy& policy);       // backends/oci: k8s/seccomp.json, k8s/pod.yaml|json, k8s/networkpolicy.json

}  // namespace cocoon::backends
