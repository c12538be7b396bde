#include "compiler/backends/seccomp/bpf_dispatch.h"

#include <linux/seccomp.h>

#include <algorithm>
#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <stddef.h>
#include <tuple>
#include <utility>

#include "compiler/backends/seccomp/bpf_flow.h"
#include "compiler/backends/seccomp/bpf_opcodes.h"

namespace cocoon::backends {
namespace {

constexpr size_t kMaxJump = 255;  // jt/jf are 8 bits

// A jump whose outcome depends only on A compared with a constant (ja: on
// nothing), so that its outcome is constant between compare constants.
bool IsConstantCompare(const sock_filter& insn) {
  if (BPF_CLASS(insn.code) != BPF_JMP) return false;
  if (BPF_OP(insn.code) == BPF_JA) return true;
  if (BPF_SRC(insn.code) != BPF_K) return false;
  return BPF_OP(insn.code) == BPF_JEQ || BPF_OP(insn.code) == BPF_JGT || BPF_OP(insn.code) == BPF_JGE;
}

struct Region {
  size_t entry = 0;
  std::vector<bool> member;
  size_t size = 0;
};

Region RegionFrom(const BpfProgram& p, const std::vector<int64_t>& loaded, size_t entry) {
  Region region{entry, std::vector<bool>(p.size(), false), 0};
  std::vector<size_t> stack{entry};
  while (!stack.empty()) {
    size_t pc = stack.back();
    stack.pop_back();
    if (pc >= p.size() || region.member[pc]) continue;
    if (loaded[pc] != bpf::kNrOffset || !IsConstantCompare(p[pc])) continue;
    region.member[pc] = true;
    ++region.size;
    for (size_t next : BpfSuccessors(p, pc)) stack.push_back(next);
  }
  return region;
}

// Where a syscall number leaves the region: a RET's value, or the first
// instruction outside it. Two RETs of the same value are the same exit.
struct Exit {
  bool is_ret = false;
  uint32_t value = 0;  // is_ret: the RET's k; else the instruction's pc
  auto operator<=>(const Exit&) const = default;
};

Exit ExitAt(const BpfProgram& p, size_t pc) {
  const sock_filter& insn = p[pc];
  if (BPF_CLASS(insn.code) == BPF_RET && BPF_RVAL(insn.code) == BPF_K) return {true, insn.k};
  return {false, static_cast<uint32_t>(pc)};
}

bool Taken(const sock_filter& insn, uint32_t a) {
  switch (BPF_OP(insn.code)) {
    case BPF_JEQ: return a == insn.k;
    case BPF_JGT: return a > insn.k;
    case BPF_JGE: return a >= insn.k;
  }
  return false;
}

Exit Evaluate(const BpfProgram& p, const Region& region, uint32_t nr) {
  size_t pc = region.entry;
  while (region.member[pc]) {
    const sock_filter& insn = p[pc];
    if (BPF_OP(insn.code) == BPF_JA) pc += 1 + insn.k;
    else pc += 1 + (Taken(insn, nr) ? insn.jt : insn.jf);
  }
  return ExitAt(p, pc);
}

struct Range {
  uint64_t low = 0;  // the range runs to the next range's low (or 2^32)
  Exit exit;
};

std::vector<Range> Ranges(const BpfProgram& p, const Region& region) {
  std::set<uint64_t> bounds{0};
  for (size_t pc = 0; pc < p.size(); ++pc) {
    if (!region.member[pc] || BPF_OP(p[pc].code) == BPF_JA) continue;
    const uint64_t k = p[pc].k;
    switch (BPF_OP(p[pc].code)) {
      case BPF_JEQ: bounds.insert(k); bounds.insert(k + 1); break;
      case BPF_JGT: bounds.insert(k + 1); break;
      case BPF_JGE: bounds.insert(k); break;
    }
  }
  std::vector<Range> ranges;
  for (uint64_t low : bounds) {
    if (low > UINT32_MAX) continue;
    Exit exit = Evaluate(p, region, static_cast<uint32_t>(low));
    if (!ranges.empty() && ranges.back().exit == exit) continue;
    ranges.push_back({low, exit});
  }
  return ranges;
}

// The search, in preorder: each node is `jge low(mid)`, true to the upper
// half, false (the next instruction) to the lower half; a half of one range
// jumps straight to that range's exit.
struct Node {
  uint32_t k = 0;
  // >= 0: a node index; < 0: -(exit index + 1).
  long jt = 0;
  long jf = 0;
};

long BuildSearch(const std::vector<Range>& ranges, size_t begin, size_t end,
                 const std::map<Exit, size_t>& exit_index, std::vector<Node>& nodes) {
  if (end - begin == 1) return -static_cast<long>(exit_index.at(ranges[begin].exit)) - 1;
  const size_t mid = begin + (end - begin) / 2;
  const long self = static_cast<long>(nodes.size());
  nodes.push_back({static_cast<uint32_t>(ranges[mid].low), 0, 0});
  long lower = BuildSearch(ranges, begin, mid, exit_index, nodes);
  long upper = BuildSearch(ranges, mid, end, exit_index, nodes);
  nodes[static_cast<size_t>(self)].jf = lower;
  nodes[static_cast<size_t>(self)].jt = upper;
  return self;
}

std::optional<BpfProgram> CompressAt(const BpfProgram& p, const Region& region) {
  const size_t entry = region.entry;
  // Nothing outside the region may jump into it except to its entry.
  for (size_t pc = 0; pc < p.size(); ++pc) {
    if (region.member[pc]) continue;
    for (size_t next : BpfSuccessors(p, pc)) {
      if (next < p.size() && region.member[next] && next != entry) return std::nullopt;
    }
  }
  const std::vector<Range> ranges = Ranges(p, region);
  std::map<Exit, size_t> exit_index;
  std::vector<Exit> exits;
  for (const Range& r : ranges) {
    if (exit_index.emplace(r.exit, exits.size()).second) exits.push_back(r.exit);
  }
  std::vector<Node> nodes;
  const long root = BuildSearch(ranges, 0, ranges.size(), exit_index, nodes);
  if (root < 0) return std::nullopt;  // one range: nothing to search (never the case for a real policy)

  // Kept after the search and its exits, in their original order: what the
  // exits lead to, what the prefix jumps to beyond the region, and the last
  // instruction (the program's final deny).
  std::vector<size_t> roots{p.size() - 1};
  for (const Exit& e : exits) {
    if (!e.is_ret) roots.push_back(e.value);
  }
  for (size_t pc = 0; pc < entry; ++pc) {
    for (size_t next : BpfSuccessors(p, pc)) {
      if (next > entry && next < p.size()) roots.push_back(next);
    }
  }
  std::vector<bool> kept(p.size(), false);
  while (!roots.empty()) {
    size_t pc = roots.back();
    roots.pop_back();
    if (pc < entry || pc >= p.size() || kept[pc]) continue;
    if (region.member[pc]) return std::nullopt;  // cannot happen: jumps go forward
    kept[pc] = true;
    for (size_t next : BpfSuccessors(p, pc)) roots.push_back(next);
  }
  const size_t search_at = entry;
  const size_t exits_at = search_at + nodes.size();
  const size_t rest_at = exits_at + exits.size();
  std::vector<size_t> new_pc(p.size() + 1, SIZE_MAX);
  for (size_t pc = 0; pc < entry; ++pc) new_pc[pc] = pc;
  new_pc[entry] = search_at;
  size_t next_free = rest_at;
  for (size_t pc = entry; pc < p.size(); ++pc) {
    if (kept[pc]) new_pc[pc] = next_free++;
  }

  BpfProgram out;
  out.reserve(next_free);
  auto offset = [](size_t from, size_t to) -> std::optional<uint32_t> {
    if (to <= from) return std::nullopt;
    return static_cast<uint32_t>(to - from - 1);
  };
  // A conditional jump's two targets as its 8-bit jt/jf offsets, if both
  // are forward and within reach.
  auto branch_offsets = [&](size_t at, size_t if_true, size_t if_false) -> std::optional<std::pair<uint8_t, uint8_t>> {
    auto jt = offset(at, if_true);
    auto jf = offset(at, if_false);
    if (!jt || !jf || *jt > kMaxJump || *jf > kMaxJump) return std::nullopt;
    return std::pair{static_cast<uint8_t>(*jt), static_cast<uint8_t>(*jf)};
  };
  auto relink = [&](sock_filter insn, size_t old_pc, size_t at) -> std::optional<sock_filter> {
    if (BPF_CLASS(insn.code) != BPF_JMP) return insn;
    if (BPF_OP(insn.code) == BPF_JA) {
      auto k = offset(at, new_pc[old_pc + 1 + insn.k]);
      if (!k) return std::nullopt;
      insn.k = *k;
      return insn;
    }
    auto branches = branch_offsets(at, new_pc[old_pc + 1 + insn.jt], new_pc[old_pc + 1 + insn.jf]);
    if (!branches) return std::nullopt;
    std::tie(insn.jt, insn.jf) = *branches;
    return insn;
  };
  for (size_t pc = 0; pc < entry; ++pc) {
    auto insn = relink(p[pc], pc, pc);
    if (!insn) return std::nullopt;
    out.push_back(*insn);
  }
  auto target_of = [&](long ref) { return ref >= 0 ? search_at + static_cast<size_t>(ref) : exits_at + static_cast<size_t>(-ref - 1); };
  for (size_t i = 0; i < nodes.size(); ++i) {
    const size_t at = search_at + i;
    auto branches = branch_offsets(at, target_of(nodes[i].jt), target_of(nodes[i].jf));
    if (!branches) return std::nullopt;
    out.push_back(BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, nodes[i].k, branches->first, branches->second));
  }
  for (size_t i = 0; i < exits.size(); ++i) {
    if (exits[i].is_ret) {
      out.push_back(BPF_STMT(BPF_RET | BPF_K, exits[i].value));
    } else {
      auto k = offset(exits_at + i, new_pc[exits[i].value]);
      if (!k) return std::nullopt;
      out.push_back(BPF_STMT(BPF_JMP | BPF_JA, *k));
    }
  }
  for (size_t pc = entry; pc < p.size(); ++pc) {
    if (!kept[pc]) continue;
    auto insn = relink(p[pc], pc, new_pc[pc]);
    if (!insn) return std::nullopt;
    out.push_back(*insn);
  }
  if (!ValidateBpf(out).ok()) return std::nullopt;
  return out;
}

}  // namespace

std::optional<BpfProgram> CompressSyscallDispatch(const BpfProgram& program) {
  if (program.size() < 2) return std::nullopt;
  const std::vector<int64_t> loaded = BpfLoadedOffsets(program);
  // The region after whichever load of the number starts the largest one
  // (libseccomp's main tree; a guard prefix has its own small one).
  Region best;
  for (size_t pc = 0; pc + 1 < program.size(); ++pc) {
    if (program[pc].code != bpf::kLoadWordAbs || program[pc].k != bpf::kNrOffset) continue;
    Region region = RegionFrom(program, loaded, pc + 1);
    if (region.size > best.size) best = std::move(region);
  }
  if (best.size == 0) return std::nullopt;
  std::optional<BpfProgram> compressed = CompressAt(program, best);
  if (!compressed || compressed->size() >= program.size()) return std::nullopt;
  return compressed;
}

}  // namespace cocoon::backends
