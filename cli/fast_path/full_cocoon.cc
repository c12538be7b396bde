// The launcher's side of the compiler seam (cli/policy_compile.h) and of the
// dynamic-loader seam (cli/launch_dynamic.h): each entry point hands the
// whole command line to cocoon-full.
#include "cli/fast_path/full_cocoon.h"

#include <sys/mman.h>
#include <unistd.h>

#include <optional>

#include "cli/launch_dynamic.h"
#include "cli/policy_compile.h"

namespace cocoon::cli {
namespace {

char** remembered_argv = nullptr;
std::optional<std::string> consumed_stdin;

// cocoon-full must read the code the launcher already took from stdin: put
// the same bytes on its fd 0 (a memfd, read from the start).
Status HandOnConsumedStdin() {
  if (!consumed_stdin) return Status::Ok();
  int fd = memfd_create("cocoon-stdin", MFD_CLOEXEC);
  if (fd < 0) return ErrnoError("memfd_create for the code read from stdin");
  std::string_view rest = *consumed_stdin;
  while (!rest.empty()) {
    ssize_t n = write(fd, rest.data(), rest.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = errno;
      close(fd);
      return ErrnoError("writing the code read from stdin to a memfd", err);
    }
    rest.remove_prefix(static_cast<size_t>(n));
  }
  // dup2 leaves the new fd 0 without FD_CLOEXEC, so it survives the exec.
  bool ok = lseek(fd, 0, SEEK_SET) == 0 && dup2(fd, STDIN_FILENO) == STDIN_FILENO;
  int err = errno;
  close(fd);
  if (!ok) return ErrnoError("putting the code read from stdin back on fd 0", err);
  return Status::Ok();
}

}  // namespace

Result<std::string> FullCocoonPath() {
  std::string path = enforcer::CompilerExecutablePath();
  if (path.empty()) return ErrnoError("cannot locate cocoon-full: readlink /proc/self/exe (is /proc mounted?)");
  return path;
}

void RememberCommandLine(char** argv) { remembered_argv = argv; }

Status ExecFullCocoon() {
  if (remembered_argv == nullptr) return InternalError("ExecFullCocoon before RememberCommandLine");
  COCOON_ASSIGN_OR_RETURN(std::string path, FullCocoonPath());
  COCOON_RETURN_IF_ERROR(HandOnConsumedStdin());
  execv(path.c_str(), remembered_argv);
  return ErrnoError("cannot run " + path +
                    ", the part of cocoon that holds the policy compiler and every command but a warm-cache "
                    "`enforce` and `run`; it is installed beside the `cocoon` launcher: rebuild or reinstall cocoon");
}

// Nothing has been started, written or opened without O_CLOEXEC when these
// are called (policy_compile.h), so the exec loses nothing: cocoon-full
// compiles, stores the result in the caches (so that the next launch is
// served here) and runs the command.
Result<enforcer::CompiledLinuxArtifacts> CompilePolicyOnCacheMiss(const std::string&, const std::string&) {
  return ExecFullCocoon();
}

Result<enforcer::CompiledLinuxArtifacts> CompilePolicyTextOnCacheMiss(const std::string&, const std::string&,
                                                                      const std::string&) {
  return ExecFullCocoon();
}

Result<ir::Policy> CheckPolicyFile(const std::string&, const std::string&) { return ExecFullCocoon(); }

Result<ir::Policy> CheckPolicyText(const std::string&, const std::string&, const std::string&, std::string*) {
  return ExecFullCocoon();
}

std::optional<ir::Policy> CheckRuntimePresetFile(const std::string& path, const std::string&,
                                                 Diagnostics& diagnostics) {
  Status status = ExecFullCocoon();
  diagnostics.Error(nullptr, Span{}, path + ": " + status.message());
  return std::nullopt;
}

Result<std::string> ExplainCheckedPolicy(const ir::Policy&) { return ExecFullCocoon(); }

void RememberConsumedStdin(const std::string& bytes) { consumed_stdin = bytes; }

// LaunchSandboxed calls these before it prepares the sandbox: nothing has
// started, so cocoon-full runs the same launch with the audit log or the
// allow-list (and fills nothing twice: the caches are already warm).
Result<std::unique_ptr<LaunchAuditLog>> OpenLaunchAuditLog(const AuditOptions&) { return ExecFullCocoon(); }

Result<enforcer::AllowListResolver> HostNameResolver() { return ExecFullCocoon(); }

bool LaunchDynamicExecsFullCocoon() { return true; }

}  // namespace cocoon::cli
