#include "enforcer/workdir/writable_binds.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "enforcer/workdir/breakout_scan.h"
#include "enforcer/workdir/change_floor.h"
#include "enforcer/workdir/commit.h"
#include "enforcer/workdir/host_path.h"

namespace cocoon::enforcer {
namespace {

void AddError(WritableBindsResult& result, const std::string& message) {
  result.incomplete = true;
  if (!result.error.empty()) result.error += "; ";
  result.error += message;
}

}  // namespace

std::unique_ptr<WritableBinds> WritableBinds::Prepare(const std::vector<WritableBindSource>& sources) {
  auto binds = std::unique_ptr<WritableBinds>(new WritableBinds());
  for (const WritableBindSource& source : sources) {
    Result<std::string> resolved = ResolveHostPath(source.source);
    if (!resolved.ok()) continue;
    Result<int> opened = OpenResolvedPath(*resolved, O_PATH);
    if (!opened.ok()) continue;
    Bind bind;
    bind.target = source.target;
    bind.fd.Reset(*opened);
    struct stat st {};
    if (fstat(bind.fd.get(), &st) != 0) continue;
    bind.dev = st.st_dev;
    bind.ino = st.st_ino;
    bind.is_dir = S_ISDIR(st.st_mode);
    if (bind.is_dir) {
      // The scan reads it: a real open of the same directory (through the
      // O_PATH fd, no name looked up again). One this user cannot read is
      // still bound, and reported unverified after the run.
      OwnedFd readable(openat(bind.fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!readable.valid()) {
        bind.unreadable = "opening " + *resolved + ": " + std::string(strerror(errno));
      } else {
        bind.fd = std::move(readable);
      }
      bind.changed_since = RunChangeFloor(bind.fd.get());
    } else {
      // The probe goes in the file's directory (the sandbox cannot write
      // there; an O_TMPFILE leaves no trace): a bound file's filesystem.
      const std::string parent = resolved->substr(0, resolved->find_last_of('/'));
      Result<int> dir = OpenResolvedPath(parent.empty() ? "/" : parent, O_RDONLY | O_DIRECTORY);
      OwnedFd dir_fd(dir.ok() ? *dir : -1);
      bind.changed_since = RunChangeFloor(dir_fd.get());
    }
    binds->binds_.push_back(std::move(bind));
  }
  return binds;
}

bool WritableBinds::Covers(dev_t dev, ino_t ino) const {
  for (const Bind& bind : binds_) {
    if (bind.dev == dev && bind.ino == ino) return true;
  }
  return false;
}

WritableBindsResult WritableBinds::Verify(int cancel_fd) const {
  WritableBindsResult result;
  for (const Bind& bind : binds_) {
    if (bind.is_dir) {
      VerifyDir(bind, cancel_fd, result);
    } else {
      VerifyFile(bind, result);
    }
  }
  return result;
}

void WritableBinds::VerifyDir(const Bind& bind, int cancel_fd, WritableBindsResult& result) const {
  ScanOptions options;
  options.mode = ScanMode::kDirect;  // no hardlink findings: links cannot cross the bind (EXDEV)
  // Not capped, as in a direct work dir: whatever the sandbox left is on
  // the host already, and each must be defused or reported.
  options.max_findings = UINT64_MAX;
  options.max_finding_bytes = UINT64_MAX;
  options.max_path_bytes = UINT64_MAX;
  options.cancel_fd = cancel_fd;
  const std::string where = "the writable mount " + bind.target;
  if (!bind.unreadable.empty()) {
    AddError(result, where + " was not verified (" + bind.unreadable + ")");
    return;
  }
  auto scan = ScanForBreakouts(bind.fd.get(), options);
  if (!scan.ok()) {
    AddError(result, where + " was not verified (" + scan.status().message() + ")");
    return;
  }
  auto remediated = RemediateDirectTree(bind.fd.get(), *scan, bind.changed_since);
  if (!remediated.ok()) {
    AddError(result, where + " was not verified (" + remediated.status().message() + ")");
    return;
  }
  std::vector<BreakoutFinding> preexisting;
  SetAsidePreexisting(*scan, *remediated, preexisting);
  size_t uninspected = 0;
  for (BreakoutFinding& finding : scan->findings) {
    if (IsUninspected(finding)) ++uninspected;
    finding.mount = bind.target;
    result.findings.push_back(std::move(finding));
  }
  for (BreakoutFinding& finding : preexisting) {
    finding.mount = bind.target;
    result.preexisting.push_back(std::move(finding));
  }
  if (scan->stopped) {
    AddError(result, "breakout verification of " + where + " was stopped by SIGINT/SIGTERM/SIGHUP after " +
                         std::to_string(scan->entries) + " entries; the rest of it was not verified");
  }
  if (!remediated->not_remediated.empty()) {
    AddError(result, std::to_string(remediated->not_remediated.size()) + " entries the sandbox left in " + where +
                         " could not be removed or defused (first: " + remediated->remediation_error +
                         "); remove them by hand");
  }
  if (uninspected != 0) {
    AddError(result, std::to_string(uninspected) + (uninspected == 1 ? " entry" : " entries") + " of " + where +
                         " could not be inspected and were left in place; check them by hand");
  }
}

void WritableBinds::VerifyFile(const Bind& bind, WritableBindsResult& result) const {
  struct stat st {};
  if (fstat(bind.fd.get(), &st) != 0) {
    AddError(result, "the writable mount " + bind.target + " was not verified (stat failed)");
    return;
  }
  if (!S_ISREG(st.st_mode) || (st.st_mode & (S_ISUID | S_ISGID)) == 0) return;
  BreakoutFinding finding{"", (st.st_mode & S_ISUID) != 0 ? "setuid" : "setgid", "", false, bind.target};
  if (!ChangedSince(st, bind.changed_since)) {
    result.preexisting.push_back(std::move(finding));
    return;
  }
  if (Status cleared = ClearSetIdBits(bind.fd.get(), st, bind.target); !cleared.ok()) {
    finding.left_in_place = true;
    AddError(result, cleared.message() + "; clear the bits by hand");
  }
  result.findings.push_back(std::move(finding));
}

}  // namespace cocoon::enforcer
