// Classic-BPF opcodes and struct seccomp_data offsets that the seccomp back
// end's emitters, optimisers and checkers all match on: one definition, so
// that an emitter and the pass that recognises its output cannot disagree.
#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <bit>
#include <cstddef>
#include <cstdint>

namespace cocoon::backends::bpf {

inline constexpr uint16_t kLoadWordAbs = BPF_LD | BPF_W | BPF_ABS;
inline constexpr uint16_t kAndK = BPF_ALU | BPF_AND | BPF_K;
inline constexpr uint16_t kJeqK = BPF_JMP | BPF_JEQ | BPF_K;
inline constexpr uint16_t kJsetK = BPF_JMP | BPF_JSET | BPF_K;
inline constexpr uint16_t kRetK = BPF_RET | BPF_K;

// Every architecture Cocoon emits for is little-endian, so the low 32 bits
// of a 64-bit argument come first (guard_prefix.h says why the low half is
// what the kernel acts on for the guarded calls).
static_assert(std::endian::native == std::endian::little);
inline constexpr uint32_t kNrOffset = offsetof(seccomp_data, nr);
inline constexpr uint32_t kArchOffset = offsetof(seccomp_data, arch);
inline constexpr uint32_t kFirstArgOffset = offsetof(seccomp_data, args);
constexpr uint32_t ArgLowOffset(unsigned arg) { return kFirstArgOffset + 8 * arg; }
static_assert(ArgLowOffset(1) == 24, "seccomp_data.args[1] low half");

// seccomp(2)'s operation and the flag that asks for a user-notification
// listener: the guards that keep a sandboxed program from installing its own
// listener match these.
inline constexpr uint32_t kSetModeFilter = SECCOMP_SET_MODE_FILTER;
inline constexpr uint32_t kFilterFlagNewListener = SECCOMP_FILTER_FLAG_NEW_LISTENER;

}  // namespace cocoon::backends::bpf
