// How many bits of each syscall argument the kernel actually reads.
//
// seccomp sees the six argument registers as 64-bit values, but a parameter
// the kernel declares as `int`, `unsigned int`, `pid_t`, `uid_t`, ... (32
// bits) or `umode_t` (16 bits) is cut to that width by the SYSCALL_DEFINE
// wrapper (include/linux/syscalls.h: each register is taken as a `long` and
// cast to the declared type, `__SC_CAST`) before the syscall body runs. So
// socket(0x100000010, ...) creates an AF_NETLINK (16) socket, and a seccomp
// comparison of all 64 bits against 16 does not see it. The back ends use
// this table to compare only the bits the kernel reads (see
// compiler/backends/seccomp/kernel_widths.h).
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

namespace cocoon::syscalls {

struct SyscallArgWidths {
  std::string_view name;         // libseccomp name
  std::array<uint8_t, 6> bits;   // 16, 32, or 64 (the whole register, or not known to be narrower)
};

// The table, sorted by name. Only parameters known to be narrower than 64
// bits are listed; everything else (pointers, sizes, `unsigned long` flags
// such as clone's or mmap's) counts as 64 bits. Generic kernel code, so the
// same on x86_64, x32, aarch64 (LP64) and i386 (where every register is 32
// bits anyway).
const std::vector<SyscallArgWidths>& ArgWidthTable();

// Bits of argument `arg` (0..5) of `name` the kernel reads: 16, 32 or 64.
int KernelArgBits(std::string_view name, int arg);

}  // namespace cocoon::syscalls
