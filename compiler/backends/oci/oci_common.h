// Pieces shared by the OCI config and the Kubernetes Pod: the placeholder
// command, the environment, the rlimits and the provenance annotations.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compiler/ir/policy_ir.h"

namespace cocoon::backends::oci {

struct Rlimit {
  std::string type;  // "RLIMIT_CORE", ...
  uint64_t soft = 0;
  uint64_t hard = 0;
};

// RLIMIT_CORE=0, RLIMIT_RTPRIO=0 and RLIMIT_SIGPENDING always; CPU from the
// policy; NOFILE and FSIZE always, as the enforcer sets them
// (ir::FileSizeRlimitBytes, for a work dir bound directly). Not RLIMIT_NPROC: it counts every process of the uid on the host
// (setrlimit(2)), so the pids cgroup carries the process limit instead.
std::vector<Rlimit> Rlimits(const ir::Limits& limits, const ir::WorkDir& work);

// The policy does not name the command; the artifact carries the runtime's
// first interpreter (or /bin/sh) and the launcher replaces process.args.
nlohmann::ordered_json PlaceholderArgs(const ir::Policy& policy);

// "NAME=value" for every `set`; `pass` names cannot be resolved at compile
// time and are reported as a warning prefixed with `target`.
nlohmann::ordered_json EnvList(const ir::Policy& policy, const std::string& target,
                               std::vector<std::string>& warnings);

// An empty object with room for `members` members. nlohmann's ordered_json
// keeps an object's members in a std::vector<std::pair<const std::string,
// json>>: the const key makes the pair's move constructor potentially
// throwing, so each time that vector grows it COPIES every member, nested
// values included (a Pod spec copied with its containers, a seccomp entry
// with its names). Objects that take large values get their room up front.
nlohmann::ordered_json ReservedObject(size_t members);

// Whether the compiled profile itself says `devices { tty off }` (the IR's
// provenance names it), not only inherits it. /dev/tty is one of the
// runtime's default devices (config-linux.md#default-devices), in the
// container whatever the policy says, so that statement cannot be honoured
// and is warned about. tty is off by default and strict says so for every
// policy built on it; warning for the inherited or default value would fire
// on every compile for a node that opens nothing without a controlling
// terminal (process.terminal is false).
bool ProfileSaysTtyOff(const ir::Policy& policy);

// cocoon.dev/* provenance: profile, policy hash, compiler version, timeouts.
nlohmann::ordered_json Annotations(const ir::Policy& policy);

}  // namespace cocoon::backends::oci
