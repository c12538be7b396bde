#include "compiler/backends/artifact.h"

#include "compiler/common/digest.h"

namespace cocoon::backends {

Artifact MakeArtifact(std::string target, std::string path, std::string media_type, std::string bytes) {
  Artifact artifact;
  artifact.target = std::move(target);
  artifact.path = std::move(path);
  artifact.media_type = std::move(media_type);
  artifact.sha256 = Sha256Hex(bytes);
  artifact.bytes = std::move(bytes);
  return artifact;
}

}  // namespace cocoon::backends
