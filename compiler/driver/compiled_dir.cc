// Writing and loading compiled policy directories.
//
// Writing is atomic at the directory level: everything goes into a fresh
// mkdtemp() directory beside the destination, each file and directory is
// fsynced, and then one rename(2) (or renameat2(RENAME_EXCHANGE) when the
// destination exists) makes the whole set visible at once. A reader never
// sees a half-written artifact, and a crash leaves either the old or the new
// directory (plus, at worst, a stale ".NAME.tmp-*" to delete).
//
// Loading opens every path component with O_NOFOLLOW relative to the
// directory, so a symlink planted inside a compiled dir cannot redirect the
// enforcer to another file, and verifies sizes and SHA-256 against the manifest.
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "compiler/common/digest.h"
#include "compiler/driver/driver.h"
#include "compiler/driver/manifest.h"

namespace cocoon::driver {
namespace {

namespace fs = std::filesystem;

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Fd& operator=(Fd&& other) noexcept {
    if (this != &other) {
      if (fd_ >= 0) close(fd_);
      fd_ = other.fd_;
      other.fd_ = -1;
    }
    return *this;
  }
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

Status WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoError("write");
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

// Opens (creating when asked) each directory of `path` below `root_fd`, without following symlinks.
Result<Fd> OpenParentDir(int root_fd, std::string_view path, bool create, std::string& leaf) {
  Fd current(dup(root_fd));
  if (current.get() < 0) return ErrnoError("dup");
  size_t start = 0;
  for (size_t slash; (slash = path.find('/', start)) != std::string_view::npos; start = slash + 1) {
    const std::string part(path.substr(start, slash - start));
    if (create && mkdirat(current.get(), part.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoError("mkdir " + part);
    }
    Fd next(openat(current.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (next.get() < 0) return ErrnoError("open directory " + part);
    current = std::move(next);
  }
  leaf = std::string(path.substr(start));
  return current;
}

// Writes and fsyncs one file. Its directory's entry is made durable by
// SyncDirectories, once per directory after all its files exist: nothing in
// the temp directory is visible before the final rename, so syncing a
// directory after each of its files (as this did, 26 fsyncs for
// `--target all`) bought no extra guarantee.
Status WriteFileIn(int root_fd, const std::string& path, std::string_view bytes) {
  std::string leaf;
  COCOON_ASSIGN_OR_RETURN(Fd dir, OpenParentDir(root_fd, path, /*create=*/true, leaf));
  Fd file(openat(dir.get(), leaf.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (file.get() < 0) return ErrnoError("create " + path);
  COCOON_RETURN_IF_ERROR(WriteAll(file.get(), bytes).WithContext(path));
  if (fsync(file.get()) != 0) return ErrnoError("fsync " + path);
  return Status::Ok();
}

// fsyncs each subdirectory that holds an artifact (the root is synced by
// the caller last), so their entries are on disk before the rename.
Status SyncDirectories(int root_fd, const CompileOutput& output) {
  std::set<std::string> dirs;
  for (const auto& artifact : output.artifacts) {
    for (size_t slash = artifact.path.find('/'); slash != std::string::npos;
         slash = artifact.path.find('/', slash + 1)) {
      dirs.insert(artifact.path.substr(0, slash));
    }
  }
  for (const std::string& dir : dirs) {  // parents sort before their children: fine either way
    std::string leaf;
    COCOON_ASSIGN_OR_RETURN(Fd parent, OpenParentDir(root_fd, dir, /*create=*/false, leaf));
    Fd fd(openat(parent.get(), leaf.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (fd.get() < 0) return ErrnoError("open directory " + dir);
    if (fsync(fd.get()) != 0) return ErrnoError("fsync directory " + dir);
  }
  return Status::Ok();
}

// Whether `out` (a directory with a manifest.json) holds exactly what a
// previous `cocoon compile` wrote: a manifest that parses as ours, and
// nothing but the artifacts it lists and their directories. Anything else
// is someone's data (a web app's manifest.json is a common name), and
// replacing the directory would delete it.
Status CheckPreviousOutput(const fs::path& out) {
  Fd root(open(out.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (root.get() < 0) return ErrnoError("open " + out.string());
  Fd manifest_fd(openat(root.get(), std::string(kManifestFile).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (manifest_fd.get() < 0) return ErrnoError("open " + (out / kManifestFile).string());
  std::string text(LoadOptions{}.max_manifest_bytes + 1, '\0');
  ssize_t n = read(manifest_fd.get(), text.data(), text.size());
  if (n < 0) return ErrnoError("read " + (out / kManifestFile).string());
  text.resize(static_cast<size_t>(n));
  Result<Manifest> manifest = ParseManifest(text);
  if (!manifest.ok()) {
    return FailedPreconditionError("refusing to replace " + out.string() + ": its manifest.json is not a cocoon compile manifest (" +
                                   manifest.status().message() + "); choose another output directory");
  }
  std::set<std::string> expected{std::string(kManifestFile)};
  for (const ManifestEntry& entry : manifest->artifacts) {
    expected.insert(entry.path);
    for (size_t slash = entry.path.find('/'); slash != std::string::npos; slash = entry.path.find('/', slash + 1)) {
      expected.insert(entry.path.substr(0, slash));
    }
  }
  std::error_code ec;
  for (fs::recursive_directory_iterator it(out, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string relative = it->path().lexically_relative(out).generic_string();
    if (expected.count(relative) == 0) {
      return FailedPreconditionError("refusing to replace " + out.string() + ": it holds " + relative +
                                     ", which its manifest.json does not list (not only a cocoon compile output); "
                                     "move it away or choose another output directory");
    }
  }
  if (ec) return ErrnoError("read " + out.string(), ec.value());
  return Status::Ok();
}

// A destination we may replace: missing, an empty dir, or a previous output.
Result<bool> CheckReplaceable(const fs::path& out) {
  struct stat st;
  if (lstat(out.c_str(), &st) != 0) {
    if (errno == ENOENT) return false;
    return ErrnoError("stat " + out.string());
  }
  if (!S_ISDIR(st.st_mode)) return FailedPreconditionError(out.string() + " exists and is not a directory");
  std::error_code ec;
  const bool empty = fs::is_empty(out, ec);
  if (ec) return ErrnoError("read " + out.string(), ec.value());
  if (empty) return true;
  if (!fs::exists(fs::symlink_status(out / kManifestFile, ec))) {
    return FailedPreconditionError("refusing to replace " + out.string() +
                                   ": it is not empty and has no manifest.json (not a cocoon compile output)");
  }
  COCOON_RETURN_IF_ERROR(CheckPreviousOutput(out));
  return true;
}

Status PopulateTemp(const CompileOutput& output, const fs::path& temp) {
  Fd root(open(temp.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (root.get() < 0) return ErrnoError("open " + temp.string());
  for (const auto& artifact : output.artifacts) {
    if (!IsSafeArtifactPath(artifact.path)) return InternalError("unsafe artifact path " + artifact.path);
    COCOON_RETURN_IF_ERROR(WriteFileIn(root.get(), artifact.path, artifact.bytes));
  }
  // The manifest goes last: a directory with a manifest is complete.
  COCOON_RETURN_IF_ERROR(WriteFileIn(root.get(), std::string(kManifestFile), ManifestToJson(output.manifest)));
  COCOON_RETURN_IF_ERROR(SyncDirectories(root.get(), output));
  if (fsync(root.get()) != 0) return ErrnoError("fsync " + temp.string());
  return Status::Ok();
}

Status SwapIntoPlace(const fs::path& temp, const fs::path& out, bool exists) {
  if (!exists) {
    if (rename(temp.c_str(), out.c_str()) != 0) return ErrnoError("rename to " + out.string());
    return Status::Ok();
  }
  // RENAME_EXCHANGE (renameat2(2), Linux 3.15): both names stay valid throughout.
  if (renameat2(AT_FDCWD, temp.c_str(), AT_FDCWD, out.c_str(), RENAME_EXCHANGE) != 0) {
    return ErrnoError("exchange " + out.string());
  }
  std::error_code ec;
  fs::remove_all(temp, ec);  // now holds the previous output
  return Status::Ok();
}

Result<std::string> ReadVerified(int root_fd, const ManifestEntry& entry, uint64_t max_bytes) {
  std::string leaf;
  COCOON_ASSIGN_OR_RETURN(Fd dir, OpenParentDir(root_fd, entry.path, /*create=*/false, leaf));
  Fd file(openat(dir.get(), leaf.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (file.get() < 0) return ErrnoError("open artifact " + entry.path);
  struct stat st;
  if (fstat(file.get(), &st) != 0) return ErrnoError("stat " + entry.path);
  if (!S_ISREG(st.st_mode)) return DataLossError("artifact " + entry.path + " is not a regular file");
  if (static_cast<uint64_t>(st.st_size) != entry.size || entry.size > max_bytes) {
    return DataLossError("artifact " + entry.path + " has size " + std::to_string(st.st_size) + ", manifest says " +
                         std::to_string(entry.size));
  }
  std::string bytes(entry.size, '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = read(file.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoError("read " + entry.path);
    done += static_cast<size_t>(n);
  }
  if (Sha256Hex(bytes) != entry.sha256) {
    return DataLossError("artifact " + entry.path + " does not match its SHA-256 in manifest.json");
  }
  return bytes;
}

}  // namespace

Status WriteCompiledDir(const CompileOutput& output, const std::string& out_dir) {
  if (out_dir.empty()) return InvalidArgumentError("no output directory given");
  // "out/" (what shell completion types) names the same directory as "out".
  std::string trimmed = out_dir;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  std::error_code ec;
  const fs::path out = fs::absolute(fs::path(trimmed), ec).lexically_normal();
  if (ec || !out.has_filename()) return InvalidArgumentError("bad output directory '" + out_dir + "'");
  COCOON_ASSIGN_OR_RETURN(bool exists, CheckReplaceable(out));
  // `-o out/strict` in a fresh clone: the parents are made, as `mkdir -p`.
  if (!exists && !out.parent_path().empty()) {
    fs::create_directories(out.parent_path(), ec);
    if (ec) return Status(ErrorCode::kFailedPrecondition, "create " + out.parent_path().string() + ": " + ec.message());
  }
  std::string pattern = (out.parent_path() / ("." + out.filename().string() + ".tmp-XXXXXX")).string();
  if (mkdtemp(pattern.data()) == nullptr) return ErrnoError("create temporary directory next to " + out.string());
  const fs::path temp(pattern);
  chmod(temp.c_str(), 0755);
  Status status = PopulateTemp(output, temp);
  if (status.ok()) status = SwapIntoPlace(temp, out, exists);
  if (!status.ok()) {
    fs::remove_all(temp, ec);
    return status.WithContext("writing " + out.string());
  }
  Fd parent(open(out.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (parent.get() >= 0) fsync(parent.get());  // persist the rename itself
  return Status::Ok();
}

Result<CompiledPolicy> LoadCompiledDir(const std::string& dir, const LoadOptions& options) {
  Fd root(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (root.get() < 0) return ErrnoError("open compiled dir " + dir);
  const ManifestEntry manifest_entry{std::string(kManifestFile), "", "", "", 0};
  Fd manifest_fd(openat(root.get(), manifest_entry.path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (manifest_fd.get() < 0) return ErrnoError(dir + "/manifest.json");
  std::string text(options.max_manifest_bytes + 1, '\0');
  ssize_t n = read(manifest_fd.get(), text.data(), text.size());
  if (n < 0) return ErrnoError("read manifest.json");
  if (static_cast<uint64_t>(n) > options.max_manifest_bytes) return ResourceExhaustedError("manifest.json too large");
  text.resize(static_cast<size_t>(n));
  CompiledPolicy compiled;
  compiled.dir = dir;
  COCOON_ASSIGN_OR_RETURN(compiled.manifest, ParseManifest(text));
  for (const ManifestEntry& entry : compiled.manifest.artifacts) {
    COCOON_ASSIGN_OR_RETURN(std::string bytes, ReadVerified(root.get(), entry, options.max_artifact_bytes));
    compiled.files.emplace(entry.path, std::move(bytes));
  }
  return compiled;
}

}  // namespace cocoon::driver
