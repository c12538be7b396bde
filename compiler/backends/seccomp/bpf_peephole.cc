#include "compiler/backends/seccomp/bpf_peephole.h"

#include <cstdint>
#include <vector>

#include "compiler/backends/seccomp/bpf_flow.h"
#include "compiler/backends/seccomp/bpf_opcodes.h"

namespace cocoon::backends {
namespace {

std::vector<bool> JumpTargets(const BpfProgram& p) {
  std::vector<bool> target(p.size() + 1, false);
  for (size_t pc = 0; pc < p.size(); ++pc) {
    if (BPF_CLASS(p[pc].code) != BPF_JMP) continue;
    for (size_t next : BpfSuccessors(p, pc)) {
      if (next < target.size()) target[next] = true;
    }
  }
  return target;
}

bool OverwritesA(const sock_filter& insn) {
  return insn.code == bpf::kLoadWordAbs || BPF_CLASS(insn.code) == BPF_RET;
}

}  // namespace

BpfProgram RemoveRedundantInstructions(const BpfProgram& p) {
  if (p.size() < 2) return p;
  const std::vector<int64_t> loaded = BpfLoadedOffsets(p);
  const std::vector<bool> targeted = JumpTargets(p);
  std::vector<bool> drop(p.size(), false);
  for (size_t pc = 0; pc < p.size(); ++pc) {
    if (p[pc].code == bpf::kLoadWordAbs && loaded[pc] == static_cast<int64_t>(p[pc].k)) drop[pc] = true;
    if (pc + 3 < p.size() && p[pc].code == bpf::kLoadWordAbs && p[pc + 1].code == bpf::kAndK && p[pc + 1].k == 0 &&
        p[pc + 2].code == bpf::kJeqK && p[pc + 2].k == 0 && p[pc + 2].jt == 0 && !targeted[pc + 1] &&
        !targeted[pc + 2] && OverwritesA(p[pc + 3])) {
      drop[pc] = drop[pc + 1] = drop[pc + 2] = true;
    }
  }
  // A dropped instruction hands control to the next one, so a jump to it
  // goes to the first kept instruction at or after it.
  std::vector<size_t> new_index(p.size() + 1);
  std::vector<size_t> resolve(p.size() + 1);
  size_t kept = 0;
  for (size_t pc = 0; pc < p.size(); ++pc) {
    new_index[pc] = kept;
    if (!drop[pc]) ++kept;
  }
  new_index[p.size()] = kept;
  resolve[p.size()] = p.size();
  for (size_t pc = p.size(); pc-- > 0;) resolve[pc] = drop[pc] ? resolve[pc + 1] : pc;
  BpfProgram out;
  out.reserve(kept);
  for (size_t pc = 0; pc < p.size(); ++pc) {
    if (drop[pc]) continue;
    sock_filter insn = p[pc];
    const size_t here = new_index[pc];
    auto remap = [&](size_t offset) { return new_index[resolve[pc + 1 + offset]] - here - 1; };
    if (BPF_CLASS(insn.code) == BPF_JMP) {
      if (BPF_OP(insn.code) == BPF_JA) {
        insn.k = static_cast<uint32_t>(remap(insn.k));
      } else {
        insn.jt = static_cast<uint8_t>(remap(insn.jt));
        insn.jf = static_cast<uint8_t>(remap(insn.jf));
      }
    }
    out.push_back(insn);
  }
  return out;
}

}  // namespace cocoon::backends
