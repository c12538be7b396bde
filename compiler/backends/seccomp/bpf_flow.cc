#include "compiler/backends/seccomp/bpf_flow.h"

namespace cocoon::backends {

std::vector<size_t> BpfSuccessors(const BpfProgram& p, size_t pc) {
  const sock_filter& insn = p[pc];
  if (BPF_CLASS(insn.code) == BPF_RET) return {};
  if (BPF_CLASS(insn.code) != BPF_JMP) return {pc + 1};
  if (BPF_OP(insn.code) == BPF_JA) return {pc + 1 + insn.k};
  return {pc + 1 + insn.jt, pc + 1 + insn.jf};
}

std::vector<int64_t> BpfLoadedOffsets(const BpfProgram& p) {
  std::vector<int64_t> in(p.size(), kBpfAUnset);
  if (p.empty()) return in;
  in[0] = kBpfAUnknown;
  for (size_t pc = 0; pc < p.size(); ++pc) {
    if (in[pc] == kBpfAUnset) continue;  // unreachable
    const sock_filter& insn = p[pc];
    int64_t out = kBpfAUnknown;
    if (insn.code == (BPF_LD | BPF_W | BPF_ABS)) out = insn.k;
    else if (BPF_CLASS(insn.code) == BPF_JMP) out = in[pc];  // jumps leave A alone
    for (size_t next : BpfSuccessors(p, pc)) {
      if (next < p.size()) in[next] = in[next] == kBpfAUnset || in[next] == out ? out : kBpfAUnknown;
    }
  }
  return in;
}

}  // namespace cocoon::backends
