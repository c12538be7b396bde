#include "cli/runtime_util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <string_view>

#include "cli/policy_compile.h"
#include "compiler/frontend/search_paths.h"

namespace cocoon::cli {
namespace {

namespace fs = std::filesystem;

bool IsExecutableFile(const std::string& path) {
  struct stat st{};
  // stat follows symlinks: /usr/bin/python3 -> python3.11 is fine.
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

std::string FirstLine(const std::string& text) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (!line.empty()) return line;
    start = end + 1;
  }
  return "";
}

// Reads the child's combined output until EOF or the deadline.
std::string DrainWithDeadline(int fd, std::chrono::steady_clock::time_point deadline, bool* timed_out) {
  std::string out;
  char buffer[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      *timed_out = true;
      return out;
    }
    pollfd pfd{fd, POLLIN, 0};
    int ready = poll(&pfd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return out;
    if (out.size() < 64 * 1024) out.append(buffer, static_cast<size_t>(n));
  }
}

}  // namespace

std::vector<std::string> RuntimeSearchDirs() {
  std::vector<std::string> dirs;
  for (const std::string& base : frontend::DefaultSearchPaths()) {
    std::error_code ec;
    std::string dir = (fs::path(base) / "runtimes").string();
    if (fs::is_directory(dir, ec)) dirs.push_back(dir);
  }
  return dirs;
}

std::vector<std::string> RuntimePresetNames() {
  std::vector<std::string> names;
  for (const std::string& dir : RuntimeSearchDirs()) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.path().extension() != ".cocoon") continue;
      std::string stem = entry.path().stem().string();
      if (std::find(names.begin(), names.end(), stem) == names.end()) names.push_back(stem);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::string> RuntimePresetPath(const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name.find("..") != std::string::npos) {
    return std::nullopt;
  }
  for (const std::string& dir : RuntimeSearchDirs()) {
    std::string path = (fs::path(dir) / (name + ".cocoon")).string();
    std::error_code ec;
    if (fs::is_regular_file(path, ec)) return path;
  }
  return std::nullopt;
}

std::optional<ir::Policy> LoadRuntimePreset(const std::string& name, Diagnostics& diagnostics) {
  auto path = RuntimePresetPath(name);
  if (!path) {
    diagnostics.Error(nullptr, Span{}, "no runtime preset named '" + name + "'",
                      "see `cocoon run --list-runtimes`; presets live in policies/runtimes/");
    return std::nullopt;
  }
  auto policy = CheckRuntimePresetFile(*path, name, diagnostics);
  if (policy && !policy->runtime) {
    diagnostics.Error(nullptr, Span{}, "preset '" + name + "' has no runtime block");
    return std::nullopt;
  }
  return policy;
}

std::optional<std::string> FindInterpreter(const ir::Runtime& runtime) {
  for (const std::string& candidate : runtime.interpreters) {
    if (IsExecutableFile(candidate)) return candidate;
  }
  return std::nullopt;
}

Result<std::string> InterpreterVersion(const std::string& path, const std::vector<std::string>& args,
                                       int timeout_ms) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("pipe2");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
  std::vector<std::string> argv_storage = {path};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& arg : argv_storage) argv.push_back(arg.data());
  argv.push_back(nullptr);
  char path_env[] = "PATH=/usr/local/bin:/usr/bin:/bin";
  char* envp[] = {path_env, nullptr};
  pid_t pid = -1;
  // `cocoon run` ignores SIGPIPE (run_output_util.h, IgnoreSigpipe), and an
  // ignored signal survives execve: the probed interpreter gets the default.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t default_signals;
  sigemptyset(&default_signals);
  sigaddset(&default_signals, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &default_signals);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  int rc = posix_spawn(&pid, path.c_str(), &actions, &attr, argv.data(), envp);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return ErrnoError("running " + path, rc);
  }
  bool timed_out = false;
  std::string output =
      DrainWithDeadline(fds[0], std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms), &timed_out);
  close(fds[0]);
  if (timed_out) kill(pid, SIGKILL);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (timed_out) return Status(ErrorCode::kUnavailable, path + " did not print its version within " +
                                                            std::to_string(timeout_ms) + " ms");
  // An interpreter with no version flag (dash) fails with a usage line on
  // stderr; that line is not a version.
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::string flags;
    for (const std::string& arg : args) flags += (flags.empty() ? "" : " ") + arg;
    return Status(ErrorCode::kUnavailable,
                  path + " printed no version: '" + flags + "' failed with status " + std::to_string(code));
  }
  std::string line = FirstLine(output);
  if (line.empty()) return Status(ErrorCode::kUnavailable, path + " printed no version");
  return line;
}

RuntimeInfo InspectRuntime(const std::string& name) {
  RuntimeInfo info;
  info.name = name;
  info.preset_file = RuntimePresetPath(name).value_or("");
  Diagnostics diagnostics;
  auto policy = LoadRuntimePreset(name, diagnostics);
  if (!policy) {
    info.error = diagnostics.Render();
    return info;
  }
  const ir::Runtime& runtime = *policy->runtime;
  info.flags = runtime.flags;
  info.code_flag = runtime.code_flag;
  info.extension = runtime.file_extension;
  info.candidates = runtime.interpreters;
  auto interpreter = FindInterpreter(runtime);
  if (!interpreter) return info;
  info.available = true;
  info.path = *interpreter;
  auto version = InterpreterVersion(*interpreter, runtime.version_args.empty()
                                                      ? std::vector<std::string>{"--version"}
                                                      : runtime.version_args);
  if (version.ok()) info.version = *version;
  else info.error = version.status().message();
  return info;
}

std::vector<RuntimeInfo> InspectRuntimes(bool use_cache) {
  static std::mutex mutex;
  static std::optional<std::vector<RuntimeInfo>> cache;
  std::lock_guard lock(mutex);
  if (use_cache && cache) return *cache;
  std::vector<RuntimeInfo> all;
  for (const std::string& name : RuntimePresetNames()) all.push_back(InspectRuntime(name));
  cache = all;
  return all;
}

nlohmann::json RuntimesToJson(const std::vector<RuntimeInfo>& runtimes) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : runtimes) {
    nlohmann::json entry = {{"name", r.name}, {"available", r.available}, {"preset", r.preset_file}};
    if (r.available) {
      entry["path"] = r.path;
      entry["version"] = r.version;
      entry["flags"] = r.flags;
    } else {
      entry["searched"] = r.candidates;
    }
    if (!r.error.empty()) entry["error"] = r.error;
    list.push_back(std::move(entry));
  }
  return {{"runtimes", std::move(list)}};
}

Result<std::vector<std::string>> ScaleMemoryFlags(const ir::Runtime& runtime, uint64_t memory_bytes) {
  std::vector<std::string> flags;
  for (const std::string& flag : runtime.flags) {
    const ir::MemoryFlagPart part = ir::ParseMemoryFlag(flag);
    if (!part.present) {
      flags.push_back(flag);
      continue;
    }
    if (!part.valid) {
      return InvalidArgumentError("runtime " + runtime.name + " flag '" + flag + "': " + ir::MemoryFlagAdvice());
    }
    if (memory_bytes == 0) continue;  // no limit to follow: the runtime's own default
    const uint64_t mib = std::max<uint64_t>(1, memory_bytes / (1024 * 1024) * part.percent / 100);
    flags.push_back(flag.substr(0, part.begin) + std::to_string(mib) + flag.substr(part.end));
  }
  return flags;
}

std::vector<std::string> RuntimeArgv(const ir::Runtime& runtime, const std::string& interpreter,
                                     CodeDelivery delivery, const std::string& code,
                                     const std::string& script_path) {
  std::vector<std::string> flags = runtime.flags;
  auto marker = std::find(flags.begin(), flags.end(), kCompileAndRun);
  if (marker != flags.end()) {
    // A compiler with no "run" mode (rustc): compile into the sandbox's own
    // /tmp, then exec the binary. "$0" is the compiler, "$@" its flags + file.
    flags.erase(marker);
    std::vector<std::string> argv = {"/bin/sh", "-c",
                                     "\"$0\" \"$@\" -o /tmp/cocoon-main && exec /tmp/cocoon-main", interpreter};
    argv.insert(argv.end(), flags.begin(), flags.end());
    argv.push_back(script_path);
    return argv;
  }
  std::vector<std::string> argv = {interpreter};
  argv.insert(argv.end(), flags.begin(), flags.end());
  if (delivery == CodeDelivery::kInline && !runtime.code_flag.empty()) {
    argv.push_back(runtime.code_flag);
    argv.push_back(code);
  } else {
    argv.push_back(script_path);
  }
  return argv;
}

bool NeedsScriptFile(const ir::Runtime& runtime) {
  return runtime.code_flag.empty() ||
         std::find(runtime.flags.begin(), runtime.flags.end(), kCompileAndRun) != runtime.flags.end();
}

}  // namespace cocoon::cli
