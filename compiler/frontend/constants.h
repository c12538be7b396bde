// Symbolic names usable in policies: syscall-argument constants (AF_*, SOCK_*,
// CLONE_*, TIOC*, PROT_*, ...) and errno names. Values are Linux's (x86_64 and
// aarch64 agree on every one listed), written out rather than taken from the
// build host's headers so that the compiler gives the same IR on any OS.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cocoon::frontend {

std::optional<uint64_t> LookupConstant(std::string_view name);
const std::vector<std::string>& ConstantNames();

std::optional<int> LookupErrno(std::string_view name);
const std::vector<std::string>& ErrnoNames();
// "EPERM" for 1; the number as text when unnamed.
std::string ErrnoName(int value);

}  // namespace cocoon::frontend
