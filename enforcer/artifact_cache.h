// A cache of compiled Linux artifacts (linux.plan.json, linux.seccomp.bpf,
// linux.seccomp.json), so repeated launches skip the front end and libseccomp
// (building a 300-rule filter costs 1.4-1.8 ms; loading cached bytes ~0.1 ms).
//
// Key: SHA-256 over the cocoon version, the identity of the running cocoon
// executable (so a rebuilt compiler never gets a stale filter), the profile
// name, $COCOON_POLICY_PATH (where `import` searches; a relative entry made
// absolute, as the loader reads it from the current directory), the root policy
// file's absolute path and its bytes. Each entry also records every source
// file the policy was compiled from (includes, imports) with the SHA-256 of
// the bytes the compiler parsed (never of a second read), and a lookup
// re-hashes them: an edited include is a miss. It records too the
// paths an include or import tried before the file it read (the policy's
// own directory, before the shipped policies/ for `import "strict"`), and a
// regular file at one of them now is a miss: the policy would import that
// file now, and the recompile does.
//
// Trust: an entry is used only if the cache directory, every directory above
// it (OpenTrustedCacheDir) and the entry file are owned by us (or root) and
// not writable by group or others, and every artifact's SHA-256 matches the
// one stored in the entry. Anything else is a miss, never an error: the
// caller recompiles. Nothing is written into a directory that fails the same
// check (Store returns why): another user who can rename the directory, or
// one above it, could put their own entries -- or `cocoon run`'s generated
// policy -- in its place.
//
// Location: $COCOON_CACHE_DIR, else /var/cache/cocoon for root, else
// $XDG_CACHE_HOME/cocoon, else ~/.cache/cocoon.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/common/status.h"

namespace cocoon::enforcer {

struct CompiledLinuxArtifacts {
  std::string plan_json;
  std::string seccomp_bpf;
  std::string seccomp_sidecar_json;
  std::vector<std::string> source_files;  // absolute paths the policy came from
  // Paths that held no file when the policy was compiled and would change
  // an include or import if one appeared (ir::Policy::shadowing_paths).
  std::vector<std::string> shadowing_paths{};
  // The SHA-256 of each source file's bytes as the compiler parsed them,
  // one per source_files entry (ir::Policy::source_digests). Store records
  // these and refuses an entry without them: hashing the files again at
  // store time would pair this plan with whatever text is there by then.
  std::vector<std::string> source_sha256{};
};

// The executable that compiles policies into cached artifacts: the cache key
// names its build (cli/fast_path/full_cocoon.h explains the two executables).
inline constexpr char kCompilerExecutableName[] = "cocoon-full";

// kCompilerExecutableName in the running executable's directory (through
// /proc/self/exe, never PATH or the environment); "" when /proc/self/exe
// cannot be read.
std::string CompilerExecutablePath();

enum class CacheDirCreation { kExisting, kCreateMissing };

// Opens `dir` (absolute) as a cache directory: an O_PATH|O_DIRECTORY fd, for
// openat and friends. Symlinks in the name are resolved first; then each
// directory from / down is opened without following one, and must be owned
// by us or root and not writable by group or others -- above the last, a
// sticky one (/tmp) is fine: nobody else can rename what is ours in it.
// kCreateMissing makes missing directories (mode 0700) inside checked ones.
// The error names the directory that failed and why.
Result<int> OpenTrustedCacheDir(const std::string& dir, CacheDirCreation creation);

class ArtifactCache {
 public:
  explicit ArtifactCache(std::string dir) : dir_(std::move(dir)) {}
  static std::string DefaultDir();

  // Key for a root policy file and profile; "" if the file cannot be read.
  static std::string KeyFor(const std::string& policy_path, const std::string& profile);
  // The same key for the policy file at `policy_path` whose bytes the caller
  // holds (`text`; the file is not read): "" if the path cannot be resolved.
  static std::string KeyForText(const std::string& policy_path, const std::string& text, const std::string& profile);
  // Key for artifacts derived from `content` alone (the seccomp back end's
  // input, cli/policy_compile_util.cc), under the same version and compiler
  // identity as KeyFor. `domain` keeps kinds of content apart.
  static std::string KeyForContent(std::string_view domain, std::string_view content);

  std::optional<CompiledLinuxArtifacts> Lookup(const std::string& key) const;
  // Atomic (write to a temporary file, rename). Errors are returned but
  // callers normally ignore them: the cache is an optimisation.
  Status Store(const std::string& key, const CompiledLinuxArtifacts& artifacts) const;

  // One derived blob under the same key scheme, trust rules and source
  // verification (for `cocoon run`'s summary of a compiled base profile,
  // cli/base_summary_util.h): the blob travels in plan_json, the other
  // artifacts stay empty. Use a KeyFor profile string of your own so blob and
  // artifact keys never collide.
  std::optional<std::string> LookupBlob(const std::string& key, std::vector<std::string>* source_files = nullptr) const;
  // source_sha256: one per source_files entry, as in CompiledLinuxArtifacts.
  Status StoreBlob(const std::string& key, std::string blob, std::vector<std::string> source_files,
                   std::vector<std::string> source_sha256, std::vector<std::string> shadowing_paths) const;

  const std::string& dir() const { return dir_; }

 private:
  Status StoreAt(int dir_fd, const std::string& key, const CompiledLinuxArtifacts& artifacts) const;
  std::string dir_;
};

}  // namespace cocoon::enforcer
