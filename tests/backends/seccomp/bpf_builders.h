// BPF_STMT / BPF_JUMP as functions: the macros expand to brace lists, which
// cannot be pushed into a vector or passed as arguments without a type.
#pragma once

#include <linux/filter.h>

#include <cstdint>

namespace cocoon::backends::bpf_test {

inline sock_filter Stmt(uint16_t code, uint32_t k) { return BPF_STMT(code, k); }
inline sock_filter Jump(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) { return BPF_JUMP(code, k, jt, jf); }

}  // namespace cocoon::backends::bpf_test
