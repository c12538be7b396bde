// Host capability detection shared by `cocoon doctor` and `cocoon info`.
//
// Every probe that needs a namespace runs in a forked child that first
// unshares a fresh user + mount namespace: a mount made there dies with the
// child and never touches the host (we are often root). A probe that cannot
// get its namespace stops before doing anything else.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace cocoon::cli {

enum class CheckStatus { kOk, kWarn, kFail };
std::string_view CheckStatusName(CheckStatus status);

// Whether a failed check means the default policy (strict) cannot be enforced.
enum class CheckWeight {
  kRequired,  // doctor exits 1 when this fails
  kAdvisory,  // defence in depth, a runtime, an optional device: warn at most
};

struct HostCheck {
  std::string name;    // "user namespaces", "seccomp", ...
  CheckStatus status = CheckStatus::kOk;
  CheckWeight weight = CheckWeight::kRequired;
  std::string detail;  // what was found
  std::string fix;     // how to fix it, when not ok
};

struct HostInfo {
  std::string kernel_release;  // uname -r
  std::string kernel_version;  // uname -v
  std::string machine;         // uname -m
  std::string cpu_model;
  unsigned cpus_online = 0;
  uint64_t memory_total_bytes = 0;      // MemTotal
  uint64_t memory_available_bytes = 0;  // MemAvailable
  std::optional<uint64_t> cgroup_memory_limit_bytes;  // our own cgroup's limit, when one is set
  uint64_t memory_ceiling_bytes = 0;    // 95% of min(MemTotal, cgroup limit)
  int landlock_abi = 0;
  std::string cgroup_layout;            // "v1", "v2", "hybrid (v1 + v2)", "none"
  bool kvm_present = false;
};

HostInfo ProbeHostInfo();

// The largest memory limit a sandbox may be given: 95% of what the host (or
// the cgroup we run in) has, so a sandbox can never push the host itself into
// OOM. Requested limits above it are clamped and the clamp is reported.
uint64_t MemoryCeilingBytes();
// Returns min(requested, ceiling); sets *note when it clamped, naming the
// limit as `what` ("memory", or a disk that is RAM).
uint64_t ClampMemoryRequest(uint64_t requested_bytes, std::string* note, const std::string& what = "memory");

enum class CheckScope {
  kEverything,     // doctor: isolation + runtimes + audit
  kIsolationOnly,  // info: the kernel features only
};

struct DoctorOptions {
  CheckScope scope = CheckScope::kEverything;
  std::string audit_log;  // --audit-log or $COCOON_AUDIT_LOG; "" = not configured
  std::string audit_key;  // --audit-key or $COCOON_AUDIT_KEY
};

// Every check in a fixed order: namespaces, mounts, seccomp, Landlock,
// cgroups, filesystems, /dev/kvm, runtimes, audit.
std::vector<HostCheck> RunHostChecks(const DoctorOptions& options);
// True when no kRequired check failed.
bool DefaultPolicyEnforceable(const std::vector<HostCheck>& checks);

nlohmann::json HostInfoToJson(const HostInfo& info);
nlohmann::json HostChecksToJson(const std::vector<HostCheck>& checks);
std::string FormatBytes(uint64_t bytes);  // "23.5 GiB"

}  // namespace cocoon::cli
