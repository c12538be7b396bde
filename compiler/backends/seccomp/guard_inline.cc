#include "compiler/backends/seccomp/guard_inline.h"

#include <linux/seccomp.h>

#include <cstddef>
#include <cstdio>

#include "compiler/backends/seccomp/bpf_opcodes.h"

namespace cocoon::backends {
namespace {

// Marker values sit high in TRACE's 16 data bits, far from anything a
// tracer would use (Cocoon emits no real TRACE action anyway).
constexpr uint32_t kMarkerBase = 0xc000;
constexpr uint32_t kMaxMarkers = 0x1000;

bool IsTraceRet(const sock_filter& insn) {
  return insn.code == bpf::kRetK && (insn.k & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_TRACE;
}

// Jump targets inside a block: the block's own `ret <action>`, or one of
// the shared deny returns at the very end.
enum InlineTarget : int { kToNext = -1, kToOwnRet = -2, kToDeny = -3, kToDenyFamily = -4 };

struct BlockInsn {
  uint16_t code;
  uint32_t k;
  int jt = kToNext;
  int jf = kToNext;
};

// The guard's test; every path ends at kToOwnRet, kToDeny or kToDenyFamily.
std::vector<BlockInsn> GuardTest(GuardKind kind, const PrefixGuards& guards) {
  std::vector<BlockInsn> out;
  auto value_list = [&](uint32_t offset, const std::vector<uint32_t>& values, int deny) {
    out.push_back({bpf::kLoadWordAbs, offset});
    for (size_t i = 0; i < values.size(); ++i) {
      out.push_back({bpf::kJeqK, values[i], deny, i + 1 == values.size() ? kToOwnRet : kToNext});
    }
  };
  switch (kind) {
    case GuardKind::kIoctl: value_list(bpf::ArgLowOffset(1), guards.ioctl_denied_cmds, kToDeny); break;
    case GuardKind::kSocket: value_list(bpf::ArgLowOffset(0), guards.socket_denied_families, kToDenyFamily); break;
    case GuardKind::kFcntl: value_list(bpf::ArgLowOffset(1), guards.fcntl_denied_cmds, kToDeny); break;
    case GuardKind::kClone:
      out.push_back({bpf::kLoadWordAbs, bpf::ArgLowOffset(0)});
      out.push_back({bpf::kJsetK, guards.clone_new_mask, kToDeny, kToOwnRet});
      break;
    case GuardKind::kSeccomp:
      out.push_back({bpf::kLoadWordAbs, bpf::ArgLowOffset(0)});
      out.push_back({bpf::kJeqK, bpf::kSetModeFilter, kToNext, kToOwnRet});
      out.push_back({bpf::kLoadWordAbs, bpf::ArgLowOffset(1)});
      out.push_back({bpf::kJsetK, bpf::kFilterFlagNewListener, kToDeny, kToOwnRet});
      break;
  }
  return out;
}

// The families the socket guard refuses (effective_rules.cc), by name.
std::string SocketFamilyName(uint32_t family) {
  switch (family) {
    case 16: return "AF_NETLINK";
    case 38: return "AF_ALG";
    case 40: return "AF_VSOCK";
  }
  return "family " + std::to_string(family);
}

const char* KindName(GuardKind kind) {
  switch (kind) {
    case GuardKind::kIoctl: return "ioctl TIOCSTI/TIOCLINUX -> deny";
    case GuardKind::kSeccomp: return "seccomp SET_MODE_FILTER with NEW_LISTENER -> deny";
    case GuardKind::kClone: return "clone/unshare with a CLONE_NEW* flag -> deny";
    case GuardKind::kSocket: return "socket";  // GuardMarkers::Describe names the families
    case GuardKind::kFcntl: return "fcntl F_SETLEASE -> deny";
  }
  return "?";
}

}  // namespace

bool GuardFor(std::string_view name, const PrefixGuards& guards, GuardKind* kind) {
  if (name == "ioctl" && !guards.ioctl_denied_cmds.empty()) *kind = GuardKind::kIoctl;
  else if (name == "seccomp" && guards.seccomp_listener) *kind = GuardKind::kSeccomp;
  else if ((name == "clone" || name == "unshare") && guards.clone_new_mask != 0) *kind = GuardKind::kClone;
  else if (name == "socket" && !guards.socket_denied_families.empty()) *kind = GuardKind::kSocket;
  else if ((name == "fcntl" || name == "fcntl64") && !guards.fcntl_denied_cmds.empty()) *kind = GuardKind::kFcntl;
  else return false;
  return true;
}

uint32_t GuardMarkers::Marker(GuardKind kind, uint32_t ret) {
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i] == std::make_pair(kind, ret)) return SECCOMP_RET_TRACE | (kMarkerBase + static_cast<uint32_t>(i));
  }
  entries_.emplace_back(kind, ret);
  return SECCOMP_RET_TRACE | (kMarkerBase + static_cast<uint32_t>(entries_.size() - 1));
}

Result<size_t> GuardMarkers::Lookup(uint32_t ret) const {
  const uint32_t data = ret & SECCOMP_RET_DATA;
  if (data < kMarkerBase || data - kMarkerBase >= entries_.size() || data - kMarkerBase >= kMaxMarkers) {
    return InternalError("libseccomp program returns an unexpected TRACE action " + std::to_string(data));
  }
  return static_cast<size_t>(data - kMarkerBase);
}

Result<BpfProgram> GuardMarkers::Strip(const BpfProgram& program) const {
  BpfProgram out = program;
  for (sock_filter& insn : out) {
    if (!IsTraceRet(insn)) continue;
    COCOON_ASSIGN_OR_RETURN(size_t index, Lookup(insn.k));
    insn.k = entries_[index].second;
  }
  return out;
}

Result<BpfProgram> GuardMarkers::Inline(const BpfProgram& program, const PrefixGuards& guards,
                                        uint32_t deny_ret) const {
  // Lay the blocks out after the program: block i starts at block_start[i].
  std::vector<std::vector<BlockInsn>> tests;
  std::vector<size_t> block_start;
  size_t end = program.size();
  bool family_deny = false;
  for (const auto& [kind, ret] : entries_) {
    tests.push_back(GuardTest(kind, guards));
    family_deny |= kind == GuardKind::kSocket;
    block_start.push_back(end);
    end += tests.back().size() + 1;  // + the block's own ret
  }
  const size_t deny_family = end;
  const size_t deny = end + (family_deny ? 1 : 0);
  BpfProgram out = program;
  for (size_t pc = 0; pc < program.size(); ++pc) {
    if (!IsTraceRet(program[pc])) continue;
    COCOON_ASSIGN_OR_RETURN(size_t index, Lookup(program[pc].k));
    out[pc] = BPF_STMT(BPF_JMP | BPF_JA, static_cast<uint32_t>(block_start[index] - pc - 1));
  }
  for (size_t b = 0; b < entries_.size(); ++b) {
    const size_t own_ret = block_start[b] + tests[b].size();
    for (const BlockInsn& insn : tests[b]) {
      const size_t pc = out.size();
      auto resolve = [&](int target) -> size_t {
        const size_t to = target == kToOwnRet ? own_ret : target == kToDeny ? deny : target == kToDenyFamily ? deny_family
                                                                                                   : pc + 1;
        return to - pc - 1;
      };
      const size_t jt = resolve(insn.jt), jf = resolve(insn.jf);
      if (jt > 255 || jf > 255) return InternalError("inline guard block: jump too long");
      out.push_back(sock_filter{insn.code, static_cast<uint8_t>(jt), static_cast<uint8_t>(jf), insn.k});
    }
    out.push_back(BPF_STMT(bpf::kRetK, entries_[b].second));
  }
  if (family_deny) out.push_back(BPF_STMT(bpf::kRetK, SocketFamilyDenyRet()));
  out.push_back(BPF_STMT(bpf::kRetK, deny_ret));
  return out;
}

std::string GuardMarkers::Describe(const PrefixGuards& guards, uint32_t deny_ret) const {
  if (entries_.empty()) return "";
  std::string text =
      "#\n# cocoon guard markers: in the PFC above, `action TRACE(n)` marks a permitted path that runs a\n"
      "# prologue guard first (guard_inline.h); deny means " + DescribeSeccompRet(deny_ret) + "\n";
  // The refused families depend on the policy (AF_NETLINK only with the
  // network off: effective_rules.h).
  std::string socket_kind = "socket";
  for (size_t i = 0; i < guards.socket_denied_families.size(); ++i) {
    socket_kind += (i == 0 ? " " : "/") + SocketFamilyName(guards.socket_denied_families[i]);
  }
  socket_kind += " -> errno(97)";
  char line[200];
  for (size_t i = 0; i < entries_.size(); ++i) {
    const GuardKind kind = entries_[i].first;
    std::snprintf(line, sizeof(line), "#   TRACE(%u): %s, else action %s\n", kMarkerBase + static_cast<uint32_t>(i),
                  kind == GuardKind::kSocket ? socket_kind.c_str() : KindName(kind),
                  DescribeSeccompRet(entries_[i].second).c_str());
    text += line;
  }
  return text;
}

}  // namespace cocoon::backends
