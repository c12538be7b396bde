// manifest.json: the index of a compiled policy directory. It names every
// artifact with its target, media type, size and SHA-256, plus the policy's
// SHA-256, the compiler version, the profile and the target architectures.
// The enforcer loads a directory only through LoadCompiledDir, which refuses
// any artifact whose bytes do not match the manifest.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/common/status.h"

namespace cocoon::driver {

inline constexpr std::string_view kManifestSchema = "cocoon.manifest/v1";
inline constexpr std::string_view kManifestFile = "manifest.json";

struct ManifestEntry {
  std::string path;  // relative, '/'-separated, no "." or ".." components
  std::string target;
  std::string media_type;
  std::string sha256;
  uint64_t size = 0;
};

struct Manifest {
  std::string compiler_version;
  std::string profile;
  std::string policy_sha256;
  std::vector<std::string> targets;
  std::vector<std::string> architectures;
  std::vector<ManifestEntry> artifacts;
  std::vector<std::string> warnings;
};

std::string ManifestToJson(const Manifest& manifest);
Result<Manifest> ParseManifest(std::string_view json);

// An artifact path a compiled dir may contain: relative, components of
// [A-Za-z0-9._-] that are not "." or "..", at most 8 levels, 255 bytes.
bool IsSafeArtifactPath(std::string_view path);

// A compiled directory, loaded and verified.
struct CompiledPolicy {
  std::string dir;
  Manifest manifest;
  std::map<std::string, std::string> files;  // artifact path -> verified bytes

  // nullptr when the manifest has no such artifact.
  const std::string* File(std::string_view path) const;
};

struct LoadOptions {
  uint64_t max_artifact_bytes = 64u << 20;
  uint64_t max_manifest_bytes = 1u << 20;
};

// Reads manifest.json and every artifact it lists (without following
// symlinks inside the directory), and refuses with DataLoss on any size or
// SHA-256 mismatch, or InvalidArgument on an unsafe path or bad manifest.
Result<CompiledPolicy> LoadCompiledDir(const std::string& dir, const LoadOptions& options = {});

}  // namespace cocoon::driver
