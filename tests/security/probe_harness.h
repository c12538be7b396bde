// The host side of the security probe suite: starts `cocoon enforce` as root
// or as the unprivileged user `cocoon-probe`, with planted canaries (an env
// secret, leaked fds, a pty as controlling terminal), collects its output and
// resource usage, and parses the JSON Outcome and the probe's verdict line.
//
// Nothing here runs a probe on the host: probes only ever run inside cocoon,
// or inside a throwaway `unshare -Urmpf` namespace as the unprivileged user
// for the probe self-tests.
#pragma once

#include <sys/resource.h>
#include <sys/types.h>

#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace cocoon::security_test {

enum class RunAs { kRoot, kUser };
const char* RunAsName(RunAs run_as);
inline void PrintTo(RunAs run_as, std::ostream* os) { *os << RunAsName(run_as); }

// The unprivileged account the suite runs cocoon as. When the harness runs as
// root it is `cocoon-probe`, created with useradd if missing; when the
// harness itself is unprivileged it is the harness's own uid.
struct ProbeUser {
  bool available = false;
  uid_t uid = 0;
  gid_t gid = 0;
  std::string why_unavailable;
};
const ProbeUser& GetProbeUser();

// Why the harness cannot run as `run_as`, or "" when it can.
std::string CannotRunAs(RunAs run_as);

// The host's namespace inode numbers and the host init's start time, passed
// to every probe (see probe_common.h: probe_require_sandbox).
std::vector<std::string> HostIdArgs();
unsigned long long HostInitStartTime();

// A private scratch dir under /tmp: bin/ (probe copies) and work/ (the host
// work dir), readable by the run user; removed recursively without following
// links when destroyed.
class Scratch {
 public:
  explicit Scratch(RunAs run_as);
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  const std::string& root() const { return root_; }
  std::string bin() const { return root_ + "/bin"; }
  std::string work() const { return root_ + "/work"; }
  // Copies build/tests/security/probes/probe_<name> into bin/ as `as`.
  std::string StageProbe(const std::string& name, const std::string& as = "") const;
  bool ok() const { return !root_.empty(); }

 private:
  std::string root_;
};

struct LaunchOptions {
  RunAs run_as = RunAs::kRoot;
  std::vector<std::string> cocoon_args;  // after "enforce": policy, --work, --copy, --json ...
  std::vector<std::string> command;      // after "--"
  std::vector<std::pair<std::string, std::string>> extra_env;
  std::vector<int> leak_fds;             // host fds cocoon inherits (no CLOEXEC)
  std::string ctty_slave;                // pty slave: becomes stdin and controlling tty
  int timeout_s = 180;                   // the harness's own watchdog
  size_t capture_limit = 64u << 20;      // bytes of cocoon's stdout kept
  bool measure_rss = false;              // run cocoon under rss_meter (LaunchResult::cocoon_max_rss_kib)
};

struct LaunchResult {
  bool started = false;
  std::string start_error;
  int wait_status = 0;
  int exit_status = -1;       // WEXITSTATUS, or 128+signal
  bool harness_killed = false;
  std::string out;            // cocoon's stdout (the JSON with --json)
  std::string err;            // cocoon's stderr
  uint64_t out_bytes = 0;     // everything cocoon wrote to stdout
  struct rusage usage {};     // wait4(2) on cocoon: max RSS of cocoon and what it reaped
  double wall_s = 0;
  std::optional<nlohmann::json> outcome;  // parsed --json Outcome
  long cocoon_max_rss_kib = -1;           // with measure_rss: cocoon's own peak (rss_meter.c)
  std::string Describe() const;           // for failure messages
};

LaunchResult Launch(const LaunchOptions& options);

// Runs argv directly (no cocoon) as the probe user, for the self-tests.
LaunchResult LaunchRaw(RunAs run_as, const std::vector<std::string>& argv,
                       const LaunchOptions& extras);

struct Verdict {
  bool found = false;
  std::string kind;    // BLOCKED, PENDING, ESCAPED, ERROR, SKIP
  std::string detail;
};
// Finds "PROBE <name> <KIND> <detail>" in text.
Verdict FindVerdict(const std::string& text, const std::string& name);

// The captured stdout/stderr of the sandboxed command from the Outcome.
std::string OutcomeStream(const nlohmann::json& outcome, const char* stream);
// outcome[key] as a string/bool/integer, tolerant of absent keys.
std::string JsonString(const nlohmann::json& j, const char* key);
bool JsonBool(const nlohmann::json& j, const char* key);
long long JsonInt(const nlohmann::json& j, const char* key, long long fallback = -1);
// The `requested` value of the Outcome's limits row named `limit`, or -1.
long long LimitRequested(const nlohmann::json& outcome, const std::string& limit);

// Host processes whose /proc/<pid>/cmdline contains `needle`.
std::vector<pid_t> HostProcessesWith(const std::string& needle);

// A random hex nonce for markers.
std::string Nonce();

// Starts `sleep SECONDS.NONCE` on the host as the run user (so only the
// sandbox stands between a probe and it). The caller kills and reaps it.
pid_t SpawnHostSleep(RunAs run_as, const std::string& seconds_arg);

}  // namespace cocoon::security_test
