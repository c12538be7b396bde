// Writing compiled policy directories (loading them: compiled_dir_load.cc).
//
// Writing is atomic at the directory level: everything goes into a fresh
// mkdtemp() directory beside the destination, each file and directory is
// fsynced, and then one rename(2) (or renameat2(RENAME_EXCHANGE) when the
// destination exists) makes the whole set visible at once. A reader never
// sees a half-written artifact, and a crash leaves either the old or the new
// directory (plus, at worst, a stale ".NAME.tmp-*" to delete).
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "compiler/driver/dir_fd.h"
#include "compiler/driver/driver.h"
#include "compiler/driver/manifest.h"

namespace cocoon::driver {
namespace {

namespace fs = std::filesystem;
using internal::CreateDirs;
using internal::Fd;
using internal::OpenParentDir;

Status WriteAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoError("write");
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

// Writes and fsyncs one file. Its directory's entry is made durable by
// SyncDirectories, once per directory after all its files exist: nothing in
// the temp directory is visible before the final rename, so syncing a
// directory after each of its files (as this did, 26 fsyncs for
// `--target all`) bought no extra guarantee.
Status WriteFileIn(int root_fd, const std::string& path, std::string_view bytes) {
  std::string leaf;
  COCOON_ASSIGN_OR_RETURN(Fd dir, OpenParentDir(root_fd, path, CreateDirs::kYes, leaf));
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
    COCOON_ASSIGN_OR_RETURN(Fd parent, OpenParentDir(root_fd, dir, CreateDirs::kNo, leaf));
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

}  // namespace cocoon::driver
