// manifest.json: the index of a compiled policy directory. It names every
// artifact with its target, media type, size and SHA-256, plus the policy's
// SHA-256, the compiler version, the profile and the target architectures.
// Consumers (`cocoon enforce DIR` among them) load a directory only through
// LoadCompiledDir, which refuses any artifact whose bytes do not match the
// manifest. Library cocoon_compiled_dir: no back end is linked with it.
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
// Strict: the schema string, exactly the members ManifestToJson writes
// (`warnings` may be missing), no member twice in any object, every target
// a known one and listed once, every artifact's target among them, no
// artifact path twice, safe paths, 64-hex SHA-256s. Anything else is
// InvalidArgument.
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
  // When not empty, only these artifacts are read and verified (each must
  // be listed, else DataLoss); the whole manifest is still checked. A
  // launcher needs the linux ones only.
  std::vector<std::string> only;
};

// Reads manifest.json and every artifact it lists (or `options.only`),
// opening each path component with O_NOFOLLOW from the directory's fd, so
// no symlink inside the directory is followed; manifest.json and artifacts
// must be regular files. Refuses with DataLoss on a symlink, a non-regular
// file, or any size or SHA-256 mismatch; InvalidArgument on a bad manifest
// (ParseManifest); NotFound when there is no manifest.json.
Result<CompiledPolicy> LoadCompiledDir(const std::string& dir, const LoadOptions& options = {});
// The same, from a directory the caller already opened (and checked):
// `dir` only names it in messages.
Result<CompiledPolicy> LoadCompiledDirAt(int dir_fd, const std::string& dir, const LoadOptions& options = {});

}  // namespace cocoon::driver
