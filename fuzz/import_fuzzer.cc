// libFuzzer entry for `cocoon import docker-seccomp`: arbitrary bytes as a
// Docker/OCI seccomp profile. The importer must never crash, hang or emit a
// policy whose profile header or rule lines were injected by the input.
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/backends/oci/docker_seccomp_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  cocoon::backends::oci::DockerImportOptions options;
  options.capabilities = {"CAP_SYS_PTRACE"};
  auto text = cocoon::backends::oci::ImportDockerSeccomp(input, options);
  if (text.ok()) {
    // Exactly one profile, always ours: a name in the input cannot open another.
    const std::string& out = *text;
    size_t profiles = 0;
    for (size_t pos = 0; (pos = out.find("\nprofile ", pos)) != std::string::npos; ++pos) ++profiles;
    if (profiles != 1) __builtin_trap();
  }
  return 0;
}
