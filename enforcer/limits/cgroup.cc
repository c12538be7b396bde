#include "enforcer/limits/cgroup.h"
#include "compiler/common/file_read.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <charconv>
#include <set>
#include <string>
#include <thread>

namespace cocoon::enforcer {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kKillDeadline = std::chrono::seconds(2);
constexpr auto kPollInterval = std::chrono::milliseconds(2);

Status WriteFile(const std::string& path, const std::string& value) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("open " + path);
  ssize_t written = write(fd, value.data(), value.size());
  int err = errno;
  close(fd);
  if (written != static_cast<ssize_t>(value.size())) return ErrnoError("write '" + value + "' to " + path, err);
  return Status::Ok();
}


Result<uint64_t> ReadNumber(const std::string& path) {
  COCOON_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc()) return InternalError("unexpected contents of " + path + ": '" + text + "'");
  return value;
}

// Finds "<key> <number>" in a flat-keyed file such as memory.events or
// memory.oom_control.
Result<uint64_t> ReadKeyed(const std::string& path, std::string_view key) {
  COCOON_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ' ') {
      uint64_t value = 0;
      std::from_chars(line.data() + key.size() + 1, line.data() + line.size(), value);
      return value;
    }
    pos = end + 1;
  }
  return NotFoundError("no '" + std::string(key) + "' in " + path);
}

std::set<pid_t> ReadPids(const std::string& dir) {
  std::set<pid_t> pids;
  auto text = ReadFileToString(dir + "/cgroup.procs");
  if (!text.ok()) return pids;
  const char* p = text->data();
  const char* end = p + text->size();
  while (p < end) {
    pid_t pid = 0;
    auto [next, ec] = std::from_chars(p, end, pid);
    if (ec == std::errc() && pid > 0) pids.insert(pid);
    p = next + 1;
  }
  return pids;
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

bool ValidName(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string::npos;
}

}  // namespace

Result<std::unique_ptr<Cgroup>> Cgroup::Create(const CgroupSpec& spec, const HostCapabilities& host,
                                               const std::string& name) {
  if (spec.version == CgroupVersion::kNone) return InvalidArgumentError("no cgroup version chosen");
  if (!ValidName(name)) return InvalidArgumentError("bad cgroup name '" + name + "'");
  std::unique_ptr<Cgroup> cg(new Cgroup());
  cg->version_ = spec.version;
  auto make = [&](const CgroupHierarchy& h) -> Result<std::string> {
    std::string dir = h.Dir() + "/" + name;
    if (mkdir(dir.c_str(), 0755) != 0) return ErrnoError("creating cgroup " + dir);
    cg->dirs_.push_back(dir);
    return dir;
  };
  Status status = spec.version == CgroupVersion::kV2 ? cg->SetUpV2(spec, host, make) : cg->SetUpV1(spec, host, make);
  if (!status.ok()) {
    (void)cg->Destroy();
    return status.WithContext("setting up the sandbox cgroup");
  }
  return cg;
}

Status Cgroup::SetUpV1(const CgroupSpec& spec, const HostCapabilities& host, const MakeDir& make) {
  const CgroupLimits& limits = spec.limits;
  if (spec.memory) {
    COCOON_ASSIGN_OR_RETURN(memory_dir_, make(host.v1_memory));
    // Swappiness 0 keeps the group's anonymous memory out of swap, so the
    // limit is a limit on RAM; memsw (swap accounting) caps RAM+swap when
    // the kernel has it. memsw must be >= limit_in_bytes, so it comes second
    // (Documentation/admin-guide/cgroup-v1/memory.rst, 2.5).
    (void)WriteFile(memory_dir_ + "/memory.swappiness", "0");
    if (limits.memory_bytes) {
      std::string bytes = std::to_string(limits.memory_bytes);
      COCOON_RETURN_IF_ERROR(WriteFile(memory_dir_ + "/memory.limit_in_bytes", bytes));
      if (Exists(memory_dir_ + "/memory.memsw.limit_in_bytes")) {
        COCOON_RETURN_IF_ERROR(WriteFile(memory_dir_ + "/memory.memsw.limit_in_bytes", bytes));
      }
      // v1 charges TCP and UDP socket buffers to a group only once its
      // kmem.tcp limit is set (a counter of its own, beside usage_in_bytes):
      // unset, a 128 MiB sandbox held 776 MiB of loopback TCP buffers with
      // its group at 3 MiB. Set, they stop at this size. (v2 counts socket
      // memory in memory.current.)
      if (host.v1_kmem_tcp) {
        COCOON_RETURN_IF_ERROR(WriteFile(memory_dir_ + "/memory.kmem.tcp.limit_in_bytes", bytes));
      }
    }
  }
  if (spec.pids) {
    COCOON_ASSIGN_OR_RETURN(pids_dir_, make(host.v1_pids));
    if (limits.pids_max) COCOON_RETURN_IF_ERROR(WriteFile(pids_dir_ + "/pids.max", std::to_string(limits.pids_max)));
  }
  if (spec.cpu) {
    COCOON_ASSIGN_OR_RETURN(std::string cpu_dir, make(host.v1_cpu));
    if (limits.cpu_quota_us) {
      COCOON_RETURN_IF_ERROR(WriteFile(cpu_dir + "/cpu.cfs_period_us", std::to_string(limits.cpu_period_us)));
      COCOON_RETURN_IF_ERROR(WriteFile(cpu_dir + "/cpu.cfs_quota_us", std::to_string(limits.cpu_quota_us)));
    }
  }
  if (spec.freezer) {
    COCOON_ASSIGN_OR_RETURN(freezer_dir_, make(host.v1_freezer));
  }
  procs_dir_ = !pids_dir_.empty() ? pids_dir_ : !freezer_dir_.empty() ? freezer_dir_ : memory_dir_;
  if (procs_dir_.empty() && !dirs_.empty()) procs_dir_ = dirs_.front();
  return Status::Ok();
}

Status Cgroup::SetUpV2(const CgroupSpec& spec, const HostCapabilities& host, const MakeDir& make) {
  // A controller must be enabled in the parent's cgroup.subtree_control
  // before a child group gets its files. Writing fails with EBUSY if our own
  // group holds processes and is not the root ("no internal processes" rule,
  // Documentation/admin-guide/cgroup-v2.rst 2-4-3), so the error says so.
  std::string parent = host.v2.Dir();
  for (auto [wanted, controller] : {std::pair{spec.memory, "memory"}, {spec.pids, "pids"}, {spec.cpu, "cpu"}}) {
    if (!wanted) continue;
    Status enabled = WriteFile(parent + "/cgroup.subtree_control", std::string("+") + controller);
    if (!enabled.ok()) return enabled.WithContext(std::string("enabling the ") + controller + " controller");
  }
  COCOON_ASSIGN_OR_RETURN(std::string dir, make(host.v2));
  procs_dir_ = dir;
  if (spec.memory) memory_dir_ = dir;
  if (spec.pids) pids_dir_ = dir;
  const CgroupLimits& limits = spec.limits;
  if (spec.memory && limits.memory_bytes) {
    COCOON_RETURN_IF_ERROR(WriteFile(dir + "/memory.max", std::to_string(limits.memory_bytes)));
    if (Exists(dir + "/memory.swap.max")) COCOON_RETURN_IF_ERROR(WriteFile(dir + "/memory.swap.max", "0"));
  }
  if (spec.pids && limits.pids_max) COCOON_RETURN_IF_ERROR(WriteFile(dir + "/pids.max", std::to_string(limits.pids_max)));
  if (spec.cpu && limits.cpu_quota_us) {
    COCOON_RETURN_IF_ERROR(WriteFile(
        dir + "/cpu.max", std::to_string(limits.cpu_quota_us) + " " + std::to_string(limits.cpu_period_us)));
  }
  v2_dir_fd_ = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (v2_dir_fd_ < 0) return ErrnoError("open " + dir);
  return Status::Ok();
}

Cgroup::~Cgroup() { (void)Destroy(); }

Status Cgroup::AddProcess(pid_t pid) {
  for (const std::string& dir : dirs_) {
    COCOON_RETURN_IF_ERROR(WriteFile(dir + "/cgroup.procs", std::to_string(pid)).WithContext("moving the sandbox into its cgroup"));
  }
  return Status::Ok();
}

std::vector<std::string> Cgroup::V1ParentDirs(const CgroupSpec& spec, const HostCapabilities& host) {
  std::vector<std::string> dirs;
  if (spec.version != CgroupVersion::kV1) return dirs;
  // The same hierarchies, in the same order, as SetUpV1 creates groups in.
  for (auto [wanted, hierarchy] : {std::pair{spec.memory, &host.v1_memory}, {spec.pids, &host.v1_pids},
                                   {spec.cpu, &host.v1_cpu}, {spec.freezer, &host.v1_freezer}}) {
    if (wanted) dirs.push_back(hierarchy->Dir());
  }
  return dirs;
}

Result<uint64_t> Cgroup::PeakMemoryBytes() const {
  if (memory_dir_.empty()) return NotFoundError("no memory cgroup");
  return ReadNumber(memory_dir_ + (version_ == CgroupVersion::kV2 ? "/memory.peak" : "/memory.max_usage_in_bytes"));
}

std::string Cgroup::PeakMemorySource() const {
  if (memory_dir_.empty()) return "";
  return version_ == CgroupVersion::kV2 ? "cgroup-v2 memory.peak" : "cgroup-v1 max_usage_in_bytes";
}

Result<uint64_t> Cgroup::OomKillCount() const {
  if (memory_dir_.empty()) return NotFoundError("no memory cgroup");
  if (version_ == CgroupVersion::kV2) return ReadKeyed(memory_dir_ + "/memory.events", "oom_kill");
  return ReadKeyed(memory_dir_ + "/memory.oom_control", "oom_kill");
}

std::string Cgroup::OomKillSource() const {
  return version_ == CgroupVersion::kV2 ? "cgroup-v2 memory.events oom_kill" : "cgroup-v1 memory.oom_control oom_kill";
}

Result<uint64_t> Cgroup::PidsMaxCount() const {
  if (pids_dir_.empty()) return NotFoundError("no pids cgroup");
  return ReadKeyed(pids_dir_ + "/pids.events", "max");
}

std::string Cgroup::PidsMaxSource() const {
  return version_ == CgroupVersion::kV2 ? "cgroup-v2 pids.events max" : "cgroup-v1 pids.events max";
}

Result<uint64_t> Cgroup::ProcessCount() const {
  // cgroup.procs, not pids.current: the latter still counts zombies that
  // their (reparented) parent has not reaped yet.
  if (procs_dir_.empty()) return NotFoundError("no cgroup");
  return static_cast<uint64_t>(ReadPids(procs_dir_).size());
}

bool Cgroup::Empty() const {
  for (const std::string& dir : dirs_) {
    if (!ReadPids(dir).empty()) return false;
  }
  return true;
}

Status Cgroup::KillAll() {
  if (dirs_.empty()) return Status::Ok();
  auto deadline = Clock::now() + kKillDeadline;
  if (version_ == CgroupVersion::kV2 && Exists(procs_dir_ + "/cgroup.kill")) {
    // cgroup.kill (Linux 5.14) kills every process atomically with respect
    // to fork: no new process can escape into the group while it runs.
    COCOON_RETURN_IF_ERROR(WriteFile(procs_dir_ + "/cgroup.kill", "1"));
  }
  while (!Empty()) {
    if (Clock::now() > deadline) return InternalError("processes survive in cgroup " + procs_dir_);
    KillRoundV1();
    std::this_thread::sleep_for(kPollInterval);
  }
  return Status::Ok();
}

// One round of freeze, SIGKILL every member, thaw. Freezing first means a
// fork bomb cannot create a new process between the read of cgroup.procs
// and the kills. SIGKILL is delivered to frozen tasks but they only die once
// thawed (cgroup-v1/freezer-subsystem.rst), hence the thaw at the end.
void Cgroup::KillRoundV1() {
  bool frozen = !freezer_dir_.empty() && WriteFile(freezer_dir_ + "/freezer.state", "FROZEN").ok();
  if (frozen) {
    for (int i = 0; i < 100; ++i) {
      auto state = ReadFileToString(freezer_dir_ + "/freezer.state");
      if (!state.ok() || state->rfind("FROZEN", 0) == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  for (const std::string& dir : dirs_) {
    for (pid_t pid : ReadPids(dir)) kill(pid, SIGKILL);
  }
  if (frozen) (void)WriteFile(freezer_dir_ + "/freezer.state", "THAWED");
}

Status Cgroup::Destroy() {
  if (destroyed_) return Status::Ok();
  if (v2_dir_fd_ >= 0) {
    close(v2_dir_fd_);
    v2_dir_fd_ = -1;
  }
  // rmdir refuses (EBUSY) a group that still holds a process, so a removal
  // that succeeds proves the group empty; only then is KillAll (a read of
  // every cgroup.procs, freeze, kill) worth its cost. Normally the sandbox's
  // pid namespace died with its init, and with it every process.
  Status killed;
  Status removed;
  bool killed_once = false;
  for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
    if (rmdir(it->c_str()) == 0 || errno == ENOENT) continue;
    if (errno == EBUSY && !killed_once) {
      killed = KillAll();
      killed_once = true;
    }
    // rmdir can also fail with EBUSY for a moment after the last task
    // exits, while the kernel finishes releasing it.
    auto deadline = Clock::now() + kKillDeadline;
    while (rmdir(it->c_str()) != 0 && errno == EBUSY && Clock::now() < deadline) {
      std::this_thread::sleep_for(kPollInterval);
    }
    if (Exists(*it) && removed.ok()) removed = ErrnoError("removing cgroup " + *it);
  }
  destroyed_ = true;
  dirs_.clear();
  return killed.ok() ? removed : killed;
}

}  // namespace cocoon::enforcer
