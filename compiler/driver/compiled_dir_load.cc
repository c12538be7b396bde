// Loading compiled policy directories (manifest.h, LoadCompiledDir).
//
// Every path component is opened with O_NOFOLLOW relative to the
// directory's fd (dir_fd.h): a symlink planted inside a compiled dir, at any
// level, is refused rather than followed. manifest.json and each artifact
// must be regular files (opened O_NONBLOCK, so a FIFO in their place cannot
// hang the reader), each artifact of its manifest size and SHA-256. This is
// the launcher's path for `cocoon enforce DIR` too (cli/launch_util.cc), so
// it is a library of its own, cocoon_compiled_dir, with no back end in it.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "compiler/common/digest.h"
#include "compiler/driver/dir_fd.h"
#include "compiler/driver/manifest.h"

namespace cocoon::driver {
namespace internal {

Result<Fd> OpenParentDir(int root_fd, std::string_view path, CreateDirs create, std::string& leaf) {
  Fd current(dup(root_fd));
  if (current.get() < 0) return ErrnoError("dup");
  size_t start = 0;
  for (size_t slash; (slash = path.find('/', start)) != std::string_view::npos; start = slash + 1) {
    const std::string part(path.substr(start, slash - start));
    if (create == CreateDirs::kYes && mkdirat(current.get(), part.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoError("mkdir " + part);
    }
    Fd next(openat(current.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (next.get() < 0) {
      if (errno == ELOOP || errno == ENOTDIR) {
        return DataLossError("directory " + part + " of " + std::string(path) +
                             " is a symbolic link or not a directory; refusing to follow it");
      }
      return ErrnoError("open directory " + part);
    }
    current = std::move(next);
  }
  leaf = std::string(path.substr(start));
  return current;
}

}  // namespace internal

namespace {

using internal::CreateDirs;
using internal::Fd;
using internal::OpenParentDir;

// Opens `leaf` in `dir_fd` for reading: no symlink followed, a regular file
// only. `what` names it in errors ("artifact linux.plan.json").
Result<Fd> OpenRegularFile(int dir_fd, const std::string& leaf, const std::string& what, struct stat& st) {
  Fd file(openat(dir_fd, leaf.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (file.get() < 0) {
    if (errno == ELOOP) return DataLossError(what + " is a symbolic link; refusing to follow it");
    return ErrnoError("open " + what);
  }
  if (fstat(file.get(), &st) != 0) return ErrnoError("stat " + what);
  if (!S_ISREG(st.st_mode)) return DataLossError(what + " is not a regular file");
  return file;
}

// Reads exactly `size` bytes; fewer (the file shrank) is an error.
Result<std::string> ReadExactly(int fd, uint64_t size, const std::string& what) {
  std::string bytes(size, '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("read " + what);
    if (n == 0) return DataLossError(what + " is shorter than its size");
    done += static_cast<size_t>(n);
  }
  return bytes;
}

Result<std::string> ReadVerified(int root_fd, const ManifestEntry& entry, uint64_t max_bytes) {
  const std::string what = "artifact " + entry.path;
  std::string leaf;
  COCOON_ASSIGN_OR_RETURN(Fd dir, OpenParentDir(root_fd, entry.path, CreateDirs::kNo, leaf));
  struct stat st;
  COCOON_ASSIGN_OR_RETURN(Fd file, OpenRegularFile(dir.get(), leaf, what, st));
  if (static_cast<uint64_t>(st.st_size) != entry.size || entry.size > max_bytes) {
    return DataLossError(what + " has size " + std::to_string(st.st_size) + ", manifest says " +
                         std::to_string(entry.size));
  }
  COCOON_ASSIGN_OR_RETURN(std::string bytes, ReadExactly(file.get(), entry.size, what));
  if (Sha256Hex(bytes) != entry.sha256) {
    return DataLossError(what + " does not match its SHA-256 in manifest.json; the compiled policy was modified");
  }
  return bytes;
}

Result<Manifest> ReadManifest(int root_fd, const std::string& dir, uint64_t max_bytes) {
  struct stat st;
  Result<Fd> file = OpenRegularFile(root_fd, std::string(kManifestFile), dir + "/manifest.json", st);
  if (!file.ok() && file.status().code() == ErrorCode::kNotFound) {
    return NotFoundError(dir + " has no manifest.json; is it `cocoon compile` output?");
  }
  COCOON_RETURN_IF_ERROR(file.status());
  if (static_cast<uint64_t>(st.st_size) > max_bytes) return ResourceExhaustedError("manifest.json too large");
  COCOON_ASSIGN_OR_RETURN(std::string text,
                          ReadExactly(file->get(), static_cast<uint64_t>(st.st_size), dir + "/manifest.json"));
  return ParseManifest(text);
}

}  // namespace

Result<CompiledPolicy> LoadCompiledDir(const std::string& dir, const LoadOptions& options) {
  Fd root(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (root.get() < 0) return ErrnoError("open compiled dir " + dir);
  return LoadCompiledDirAt(root.get(), dir, options);
}

Result<CompiledPolicy> LoadCompiledDirAt(int dir_fd, const std::string& dir, const LoadOptions& options) {
  Fd root(dup(dir_fd));
  if (root.get() < 0) return ErrnoError("open compiled dir " + dir);
  CompiledPolicy compiled;
  compiled.dir = dir;
  COCOON_ASSIGN_OR_RETURN(compiled.manifest, ReadManifest(root.get(), dir, options.max_manifest_bytes));
  for (const std::string& path : options.only) {
    const auto& artifacts = compiled.manifest.artifacts;
    if (std::none_of(artifacts.begin(), artifacts.end(), [&](const ManifestEntry& e) { return e.path == path; })) {
      return DataLossError(dir + "/manifest.json does not list " + path + "; refusing to use the directory");
    }
  }
  for (const ManifestEntry& entry : compiled.manifest.artifacts) {
    if (!options.only.empty() && std::find(options.only.begin(), options.only.end(), entry.path) == options.only.end()) {
      continue;
    }
    COCOON_ASSIGN_OR_RETURN(std::string bytes, ReadVerified(root.get(), entry, options.max_artifact_bytes));
    compiled.files.emplace(entry.path, std::move(bytes));
  }
  return compiled;
}

}  // namespace cocoon::driver
