// The policy's syscall rules, for the back ends with no syscall filter
// (macOS Seatbelt, the Windows plan).
//
// Why: those targets cannot filter system calls, but some of what a
// `syscalls` block denies has a coarser equivalent there (no process-exec,
// no process-fork, no network). A back end maps what it can and says, at the
// syscalls block's line, which of the profile's own rules it could not:
// a dropped rule must never pass silently (docs/targets.md, "Syscall rules
// on macOS and Windows").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/ir/policy_ir.h"

namespace cocoon::backends {

// What a target can take away as a whole. Each is refused on Linux when
// every syscall of it is (syscall_fidelity.cc: kCapabilitySyscalls).
enum class SyscallCapability {
  kExec,     // execve, execveat: running another program
  kFork,     // fork, vfork, clone, clone3: new processes (and threads)
  kSocket,   // socket: every socket
  kConnect,  // connect: outgoing connections
  kBind,     // bind: a local address
  kListen,   // listen: incoming connections
};

// True when the policy refuses every syscall of `capability`, whatever its
// arguments: each has an unconditional rule that does not allow it and no
// rule that does (or no rule at all, under a default that does not allow).
bool PolicyDenies(const ir::Policy& policy, SyscallCapability capability);

// How a target expressed one capability's denial: "no process-exec".
// Partial: the target's form lets through part of what Linux refuses
// (denying clone on Linux stops threads too, no process-fork does not), so
// the warning is given even when every rule is mapped.
enum class Fidelity { kExact, kPartial };
struct ExpressedDenial {
  SyscallCapability capability;
  std::string how;
  Fidelity fidelity = Fidelity::kExact;
};

// The one warning for `target` ("macos") when the profile's own syscalls
// block (not an inherited one) sets a `default` that refuses, or writes a
// rule that restricts something `expressed` does not cover, or covers only
// partially; "" when it does neither. The rules are the statements the
// profile wrote, read from the provenance: one that repeats the default
// action is listed too, though the checker drops it from the rule list.
// Said at the syscalls block's line, listing each such rule. `note`
// follows the list (what the target does instead).
std::string UnexpressedSyscallsWarning(const ir::Policy& policy, std::string_view target,
                                       const std::vector<ExpressedDenial>& expressed, std::string_view note);

}  // namespace cocoon::backends
