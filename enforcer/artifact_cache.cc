#include "enforcer/artifact_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "cocoon_version.h"
#include "compiler/common/digest.h"
#include "compiler/common/temp_name.h"
#include "enforcer/cache_pruning.h"

namespace cocoon::enforcer {
namespace {

constexpr size_t kMaxEntryBytes = 16u << 20;

bool Trusted(const struct stat& st) {
  return (st.st_uid == geteuid() || st.st_uid == 0) && (st.st_mode & 022) == 0;
}

// Cache files are never read through a link. A policy source is read as the
// loader reads it, links followed (an import found through a symlink is
// recorded under that path too, so a repointed link is a miss), and with
// O_NONBLOCK: a FIFO planted at its path must not hang the lookup.
enum class Links { kRefuse, kFollow };

std::optional<std::string> ReadSmallFile(const std::string& path, bool check_trust, int dir_fd = AT_FDCWD,
                                         Links links = Links::kRefuse) {
  int fd = openat(dir_fd, path.c_str(),
                  O_RDONLY | O_CLOEXEC | (links == Links::kRefuse ? O_NOFOLLOW : O_NONBLOCK));
  if (fd < 0) return std::nullopt;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<size_t>(st.st_size) > kMaxEntryBytes ||
      (check_trust && !Trusted(st))) {
    close(fd);
    return std::nullopt;
  }
  std::string data(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = read(fd, data.data() + done, data.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  close(fd);
  if (done != data.size()) return std::nullopt;
  return data;
}

// `dir` with the symlinks of its longest existing prefix resolved (the rest
// is made by OpenTrustedCacheDir, symlink-free by construction).
std::string ResolveExistingPrefix(const std::string& dir) {
  std::string head = dir, tail;
  while (true) {
    char real[PATH_MAX];
    if (realpath(head.c_str(), real) != nullptr) return (std::string(real) == "/" ? "" : std::string(real)) + tail;
    size_t slash = head.find_last_of('/');
    if (errno != ENOENT || slash == std::string::npos || head == "/") return dir;
    tail = head.substr(slash) + tail;
    head = slash == 0 ? "/" : head.substr(0, slash);
  }
}

// Why a directory on the way to a cache directory could let another user
// swap what is in it, or "".
std::string WhyUntrustedDir(const struct stat& st, bool last) {
  if (!S_ISDIR(st.st_mode)) return "is not a directory";
  if (st.st_uid != geteuid() && st.st_uid != 0) {
    return "is owned by uid " + std::to_string(st.st_uid) +
           (geteuid() == 0 ? std::string(" (not by root)") : " (not by uid " + std::to_string(geteuid()) + " or root)");
  }
  const bool sticky_above = !last && (st.st_mode & S_ISVTX) != 0;
  if ((st.st_mode & 022) != 0 && !sticky_above) return "is writable by group or others";
  return "";
}

}  // namespace

Result<int> OpenTrustedCacheDir(const std::string& dir, CacheDirCreation creation) {
  if (dir.empty() || dir[0] != '/') return InvalidArgumentError("cache directory '" + dir + "' is not absolute");
  const std::string path = ResolveExistingPrefix(dir);
  int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open /");
  std::string walked;
  size_t pos = 0;
  struct stat st;
  if (fstat(fd, &st) != 0 || !WhyUntrustedDir(st, path.find_first_not_of('/') == std::string::npos).empty()) {
    close(fd);
    return PermissionDeniedError("/ is not a directory only root can change");
  }
  while (pos < path.size()) {
    size_t end = path.find('/', pos);
    if (end == std::string::npos) end = path.size();
    std::string name = path.substr(pos, end - pos);
    pos = end + 1;
    if (name.empty() || name == ".") continue;
    walked += "/" + name;
    if (name == "..") {
      close(fd);
      return InvalidArgumentError("cache directory " + dir + " has a '..' below a missing directory");
    }
    int next = openat(fd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0 && errno == ENOENT && creation == CacheDirCreation::kCreateMissing) {
      if (mkdirat(fd, name.c_str(), 0700) != 0 && errno != EEXIST) {
        int err = errno;
        close(fd);
        return ErrnoError("mkdir " + walked, err);
      }
      next = openat(fd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    int err = errno;
    close(fd);
    if (next < 0) return ErrnoError("open " + walked + (err == ELOOP || err == ENOTDIR ? " (a symlink now?)" : ""), err);
    fd = next;
    const bool last = path.find_first_not_of('/', pos) == std::string::npos;
    std::string why = fstat(fd, &st) != 0 ? std::string("cannot be inspected") : WhyUntrustedDir(st, last);
    if (!why.empty()) {
      close(fd);
      return PermissionDeniedError(walked + " " + why + ": another user could change the cache directory " + dir);
    }
  }
  return fd;
}

std::string ArtifactCache::DefaultDir() {
  if (const char* dir = getenv("COCOON_CACHE_DIR"); dir != nullptr && dir[0] == '/') return dir;
  if (geteuid() == 0) return "/var/cache/cocoon";
  if (const char* xdg = getenv("XDG_CACHE_HOME"); xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/cocoon";
  if (const char* home = getenv("HOME"); home != nullptr && home[0] == '/') return std::string(home) + "/.cache/cocoon";
  return "";
}

std::string CompilerExecutablePath() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "";
  std::string path(self, static_cast<size_t>(n));
  return path.substr(0, path.find_last_of('/') + 1) + kCompilerExecutableName;
}

// The compiler that produced a cached artifact must be the one running now:
// the version string alone does not change between builds, and a rebuilt
// back end (say, a new prologue rule) must never be served a stale filter.
// One stat of the compiler's executable identifies the build cheaply. That
// executable is cocoon-full, beside the running one: the launcher `cocoon`
// never compiles (it execs cocoon-full on a miss), so both must key the cache
// by the same file. A test or bench binary with no cocoon-full beside it
// compiles itself and keys by its own file. Computed once per process: `cocoon
// run` keys two entries per launch (the base summary and the policy).
static const std::string& CompilerIdentity() {
  static const std::string identity = [] {
    struct stat st;
    std::string compiler = CompilerExecutablePath();
    bool found = !compiler.empty() && stat(compiler.c_str(), &st) == 0;
    if (!found && stat("/proc/self/exe", &st) != 0) return std::string("unknown");
    return std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino) + ":" + std::to_string(st.st_size) + ":" +
           std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
  }();
  return identity;
}

// What every key starts with: the cache layout's version, cocoon's version
// and the compiler that produced the entry.
static std::string KeyMaterialPrefix() {
  return std::string("cocoon-cache-v4\n") + COCOON_VERSION_STRING + "\n" + CompilerIdentity() + "\n";
}

// The search path `import` falls back on (frontend/search_paths.h): the
// same policy imports other files under another one. A relative entry names
// a directory below the current one (the loader joins it to the import's
// name and opens that), so it goes into the key made absolute: with the raw
// text, runs from two directories with COCOON_POLICY_PATH=p shared an entry,
// and the second got the first one's import. nullopt if the current
// directory is unknown (no key, no cache).
static std::optional<std::string> SearchPathKeyMaterial() {
  const char* search = getenv("COCOON_POLICY_PATH");
  if (search == nullptr || *search == '\0') return std::string();  // the shipped policies/: in the compiler's identity
  std::string material, cwd;
  std::string_view rest = search;
  while (!rest.empty()) {
    size_t colon = rest.find(':');
    std::string_view dir = rest.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    if (dir.empty()) continue;  // skipped by the loader too
    if (dir.front() != '/') {
      if (cwd.empty()) {
        char here[PATH_MAX];
        if (getcwd(here, sizeof(here)) == nullptr) return std::nullopt;
        cwd = here;
      }
      material += cwd + "/";
    }
    material.append(dir);
    material.push_back('\0');  // no path holds one: entries cannot run together
  }
  return material;
}

std::string ArtifactCache::KeyFor(const std::string& policy_path, const std::string& profile) {
  char real[PATH_MAX];
  if (realpath(policy_path.c_str(), real) == nullptr) return "";
  auto bytes = ReadSmallFile(real, false);
  if (!bytes) return "";
  return KeyForText(real, *bytes, profile);
}

std::string ArtifactCache::KeyForText(const std::string& policy_path, const std::string& text,
                                      const std::string& profile) {
  char real[PATH_MAX];
  if (realpath(policy_path.c_str(), real) == nullptr) return "";
  std::optional<std::string> search = SearchPathKeyMaterial();
  if (!search) return "";
  return Sha256Hex(KeyMaterialPrefix() + profile + "\n" + *search + "\n" + real + "\n" + text);
}

std::string ArtifactCache::KeyForContent(std::string_view domain, std::string_view content) {
  std::string material = KeyMaterialPrefix() + "content:" + std::string(domain) + "\n";
  material.append(content);
  return Sha256Hex(material);
}

std::optional<CompiledLinuxArtifacts> ArtifactCache::Lookup(const std::string& key) const {
  if (dir_.empty() || key.empty()) return std::nullopt;
  Result<int> dir_fd = OpenTrustedCacheDir(dir_, CacheDirCreation::kExisting);
  if (!dir_fd.ok()) return std::nullopt;
  auto entry = ReadSmallFile(key + ".entry", true, *dir_fd);
  close(*dir_fd);
  if (!entry) return std::nullopt;
  struct stat st;
  // Layout: one JSON line (lengths, hashes, sources), then the three blobs.
  size_t newline = entry->find('\n');
  if (newline == std::string::npos) return std::nullopt;
  CompiledLinuxArtifacts artifacts;
  try {
    auto index = nlohmann::json::parse(entry->substr(0, newline));
    size_t offset = newline + 1;
    for (auto [name, out] : {std::pair{"plan", &artifacts.plan_json}, std::pair{"bpf", &artifacts.seccomp_bpf},
                             std::pair{"sidecar", &artifacts.seccomp_sidecar_json}}) {
      size_t size = index.at(name).at("size").get<size_t>();
      if (offset + size > entry->size()) return std::nullopt;
      *out = entry->substr(offset, size);
      offset += size;
      if (Sha256Hex(*out) != index.at(name).at("sha256").get<std::string>()) return std::nullopt;
    }
    for (const auto& source : index.at("sources")) {
      std::string path = source.at("path").get<std::string>();
      auto bytes = ReadSmallFile(path, false, AT_FDCWD, Links::kFollow);
      if (!bytes || Sha256Hex(*bytes) != source.at("sha256").get<std::string>()) return std::nullopt;
      artifacts.source_files.push_back(path);
    }
    for (const auto& shadow : index.at("absent")) {
      // What the loader would take now (an include or import reads the
      // first regular file among its candidates, symlinks followed).
      std::string path = shadow.get<std::string>();
      if (stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return std::nullopt;
      artifacts.shadowing_paths.push_back(std::move(path));
    }
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
  return artifacts;
}

Status ArtifactCache::Store(const std::string& key, const CompiledLinuxArtifacts& artifacts) const {
  if (dir_.empty() || key.empty()) return InvalidArgumentError("no cache directory");
  if (artifacts.source_sha256.size() != artifacts.source_files.size()) {
    return InvalidArgumentError("cache entry without the digest of every source file it was compiled from");
  }
  // Never into a directory another user could swap (OpenTrustedCacheDir).
  COCOON_ASSIGN_OR_RETURN(int dir_fd, OpenTrustedCacheDir(dir_, CacheDirCreation::kCreateMissing));
  Status stored = StoreAt(dir_fd, key, artifacts);
  close(dir_fd);
  if (!stored.ok()) return stored;
  // Entries of old cocoon builds and forgotten policies are never hit again.
  if (ShouldPruneAfterStore(key)) PruneCacheDir(dir_, ".entry", PruneLimits{});
  return Status::Ok();
}

Status ArtifactCache::StoreAt(int dir_fd, const std::string& key, const CompiledLinuxArtifacts& artifacts) const {
  nlohmann::json index;
  index["plan"] = {{"size", artifacts.plan_json.size()}, {"sha256", Sha256Hex(artifacts.plan_json)}};
  index["bpf"] = {{"size", artifacts.seccomp_bpf.size()}, {"sha256", Sha256Hex(artifacts.seccomp_bpf)}};
  index["sidecar"] = {{"size", artifacts.seccomp_sidecar_json.size()}, {"sha256", Sha256Hex(artifacts.seccomp_sidecar_json)}};
  index["sources"] = nlohmann::json::array();
  // The digests of what the compiler parsed, not of the files now: an edit
  // since then must make this entry a miss, not the old plan's new key.
  for (size_t i = 0; i < artifacts.source_files.size(); ++i) {
    index["sources"].push_back({{"path", artifacts.source_files[i]}, {"sha256", artifacts.source_sha256[i]}});
  }
  index["absent"] = artifacts.shadowing_paths;
  std::string data = index.dump() + "\n" + artifacts.plan_json + artifacts.seccomp_bpf + artifacts.seccomp_sidecar_json;
  std::string temp = "." + key + UniqueTempSuffix();
  int fd = openat(dir_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0 && errno == EEXIST) {
    // No live writer uses this name (temp_name.h): a killed cocoon with our
    // pid left it.
    unlinkat(dir_fd, temp.c_str(), 0);
    fd = openat(dir_fd, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  }
  if (fd < 0) return ErrnoError("create " + dir_ + "/" + temp);
  ssize_t n = write(fd, data.data(), data.size());
  close(fd);
  if (n != static_cast<ssize_t>(data.size())) {
    unlinkat(dir_fd, temp.c_str(), 0);
    return ErrnoError("write " + dir_ + "/" + temp);
  }
  if (renameat(dir_fd, temp.c_str(), dir_fd, (key + ".entry").c_str()) != 0) {
    unlinkat(dir_fd, temp.c_str(), 0);
    return ErrnoError("rename cache entry");
  }
  return Status::Ok();
}

std::optional<std::string> ArtifactCache::LookupBlob(const std::string& key, std::vector<std::string>* source_files) const {
  auto entry = Lookup(key);
  if (!entry || !entry->seccomp_bpf.empty() || !entry->seccomp_sidecar_json.empty()) return std::nullopt;
  if (source_files != nullptr) *source_files = std::move(entry->source_files);
  return std::move(entry->plan_json);
}

Status ArtifactCache::StoreBlob(const std::string& key, std::string blob, std::vector<std::string> source_files,
                                std::vector<std::string> source_sha256, std::vector<std::string> shadowing_paths) const {
  CompiledLinuxArtifacts entry;
  entry.plan_json = std::move(blob);
  entry.source_files = std::move(source_files);
  entry.source_sha256 = std::move(source_sha256);
  entry.shadowing_paths = std::move(shadowing_paths);
  return Store(key, entry);
}

}  // namespace cocoon::enforcer
