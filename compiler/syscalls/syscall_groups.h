// The shipped table of named syscall groups (systemd-style: @mount, @module,
// @debug, @keyring, @raw-io, @clock, @reboot, @swap, @obsolete, ...), and the
// lookup of syscall names against libseccomp's table.
//
// docs/language.md reproduces this table; a test keeps the two in sync.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/policy_ir.h"

namespace cocoon::syscalls {

struct SyscallGroup {
  std::string_view name;         // with the leading '@'
  std::string_view description;  // one line, for docs and `cocoon explain`
  std::vector<std::string_view> members;  // syscall names and/or other @groups
};

// Every shipped group, sorted by name.
const std::vector<SyscallGroup>& AllGroups();

// nullptr when the group does not exist.
const SyscallGroup* FindGroup(std::string_view name);

// Flattens nested groups; sorted, unique. Members unknown to libseccomp for
// every architecture are dropped. Empty for an unknown group.
std::vector<std::string> ExpandGroup(std::string_view name);

// True if libseccomp knows the syscall on at least one of the architectures.
bool IsKnownSyscall(std::string_view name, const std::vector<ir::Arch>& arches);

// Every syscall name libseccomp knows for x86_64 (for did-you-mean).
const std::vector<std::string>& KnownSyscallNames();

}  // namespace cocoon::syscalls
