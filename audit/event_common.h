// Internal to cocoon_audit: the fields every event shares, and the lifecycle
// records (1008 Event Log Activity) that AuditLog writes itself.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace cocoon::audit {

inline constexpr size_t kMaxStringBytes = 16 * 1024;  // per untrusted string field
inline constexpr std::string_view kOcsfVersion = "1.8.0";
inline constexpr std::string_view kEcsVersion = "8.11.0";

// Integers in a canonical line must be exact in an IEEE double (RFC 8785).
inline uint64_t Safe53(uint64_t value) { return std::min<uint64_t>(value, 9007199254740991ULL); }

enum class OcsfClass {
  kKernelActivity = 1003,
  kProcessActivity = 1007,
  kEventLogActivity = 1008,
  kDetectionFinding = 2004,
  kApplicationLifecycle = 6002,
};

std::string ProductVersion();

// class/category/activity/type/severity ids and names, metadata (product,
// version, log_name, profiles) and ecs.version.
nlohmann::json OcsfBase(OcsfClass klass, int activity_id, int severity_id);

void EcsEvent(nlohmann::json& e, std::string_view kind, std::initializer_list<const char*> categories,
              std::initializer_list<const char*> types, std::string_view action, std::string_view outcome);

// The top-level keys Cocoon ever writes. `verify --ignore-extra-keys` drops
// any other top-level key (added by a log shipper) before checking the hash.
bool IsCocoonTopLevelKey(std::string_view key);

// Lifecycle records. `kind` is the integrity kind ("start", "seal", ...).
nlohmann::json LifecycleEvent(std::string_view kind, std::string_view log_path, std::string_view message);

}  // namespace cocoon::audit
