// IR policies built in code for the back-end tests, independent of the front
// end: a strict profile like policies/strict.cocoon, and a hostile one whose
// paths contain every character that could break out of a quoted string.
#pragma once

#include <string>

#include "compiler/ir/policy_ir.h"

namespace cocoon::testing {

inline ir::Mount ReadOnly(std::string path, bool optional = false) {
  return ir::Mount{ir::MountKind::kReadOnly, path, path, 0, optional};
}

inline ir::Limit Required(uint64_t value) { return ir::Limit{true, value, ir::Enforcement::kRequired}; }

inline ir::SyscallRule Rule(std::string name, ir::ActionKind kind, int err = 0) {
  ir::SyscallRule rule;
  rule.name = std::move(name);
  rule.action = {kind, err};
  return rule;
}

inline ir::Policy StrictPolicy() {
  ir::Policy p;
  p.name = "strict";
  p.description = "Untrusted code: no network";
  p.lineage = {"strict"};
  p.source_sha256 = std::string(64, 'a');
  p.network.mode = ir::NetworkMode::kOff;
  p.filesystem.mounts = {ReadOnly("/bin"), ReadOnly("/etc/ssl/certs"), ReadOnly("/lib"),
                         ReadOnly("/lib64", true), ReadOnly("/usr")};
  p.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kTmpfs, "", "/tmp", 64 << 20, false});
  p.filesystem.work = {"/work", 64 << 20, ir::WorkMode::kStaged};
  p.filesystem.hidden = {"/etc/shadow", "/proc/kcore"};
  p.limits.wall_time_ms = Required(5000);
  p.limits.cpu_time_ms = Required(5000);
  p.limits.memory_bytes = Required(128 << 20);
  p.limits.processes = Required(32);
  p.limits.open_files = Required(256);
  p.limits.file_size_bytes = Required(64 << 20);
  p.limits.disk_bytes = Required(64 << 20);
  p.limits.output_bytes = Required(1 << 20);
  p.limits.cpu_percent = ir::Limit{true, 100, ir::Enforcement::kBestEffort};
  p.syscalls.default_action = {ir::ActionKind::kErrno, 38};
  for (const char* name : {"brk", "close", "execve", "exit_group", "fstat", "mmap", "openat", "read", "write"}) {
    p.syscalls.rules.push_back(Rule(name, ir::ActionKind::kAllow));
  }
  p.syscalls.rules.push_back(Rule("mount", ir::ActionKind::kErrno, 1));
  p.syscalls.rules.push_back(Rule("ptrace", ir::ActionKind::kErrno, 1));
  ir::SyscallRule socket = Rule("socket", ir::ActionKind::kAllow);
  socket.conditions = {{0, ir::CompareOp::kEq, 1, 0}};
  p.syscalls.rules.push_back(socket);
  p.environment.set = {{"HOME", "/work"}, {"PATH", "/usr/local/bin:/usr/bin:/bin"}};
  p.environment.pass = {"LANG", "TERM"};
  p.hostname = "sandbox";
  return p;
}

// StrictPolicy's filter refuses connect, bind and listen (its default, no
// rule allows them); targets without a syscall filter then leave the
// network out (syscall_fidelity.h). Network tests of those targets allow
// the calls, as the shipped strict does.
inline ir::Policy WithNetworkCalls(ir::Policy p) {
  for (const char* name : {"bind", "connect", "listen"}) p.syscalls.rules.push_back(Rule(name, ir::ActionKind::kAllow));
  return p;
}

// Paths full of quotes, parens, semicolons, backslashes, newlines and
// SDDL/JSON metacharacters: none of them may change an artifact's structure.
inline ir::Policy HostilePolicy() {
  ir::Policy p = StrictPolicy();
  p.name = "ev\"il (profile)";
  const std::string evil = "/data/a\"b)(allow default)(c;d\\e\nf";
  p.filesystem.mounts.push_back(ReadOnly(evil));
  p.filesystem.mounts.push_back(ir::Mount{ir::MountKind::kWritable, evil + "w", evil + "w", 0, false});
  p.filesystem.work.path = "/work\")(allow file-write* (subpath \"/\"))";
  p.filesystem.hidden.push_back("/secret\"(D;;FA;;;WD)");
  p.network.mode = ir::NetworkMode::kAllowList;
  p.network.allow = {{"127.0.0.1", 8080}, {"api.example.com\")", 443}};
  p.hostname = "h\"o";
  return p;
}

}  // namespace cocoon::testing
