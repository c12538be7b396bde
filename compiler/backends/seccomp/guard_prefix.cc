#include "compiler/backends/seccomp/guard_prefix.h"

#include <linux/audit.h>
#include <linux/seccomp.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <map>
#include <string_view>

#include "compiler/backends/seccomp/bpf_opcodes.h"
#include "compiler/backends/seccomp/effective_rules.h"
#include "compiler/syscalls/syscall_groups.h"

namespace cocoon::backends {
namespace {

// Symbolic jump targets, resolved once the layout is known. kFirstCheck - i
// is the i-th check of the block the jump is in.
enum Label : int {
  kNext = -1, kDeny = -2, kOut = -3, kNextArch = -4, kDenyFamily = -5, kDenyMultiplexer = -6, kFirstCheck = -7
};

int CheckLabel(size_t index) { return kFirstCheck - static_cast<int>(index); }

struct Insn {
  uint16_t code;
  uint32_t k;
  int jt = kNext;  // kNext: fall through; otherwise a Label
  int jf = kNext;
};

// One guard's test in one arch block: the syscall numbers the dispatch sends
// to it, and its instructions (every path ends at a deny label or kOut).
struct Check {
  std::vector<uint32_t> nrs;
  std::vector<Insn> body;
};

struct Block {
  std::vector<Insn> insns;
  std::vector<size_t> check_starts;  // index in insns of each check's first instruction
};

// Audit arch (a key for each of `arches`) -> the numbers of `names` there,
// name by name (x86_64 and x32 share one audit arch).
std::map<uint32_t, std::vector<uint32_t>> Numbers(const std::vector<ir::Arch>& arches,
                                                  std::initializer_list<const char*> names) {
  std::map<uint32_t, std::vector<uint32_t>> out;
  for (ir::Arch arch : arches) out[AuditArch(arch)];
  for (const char* name : names) {
    for (ir::Arch arch : arches) {
      // The kernel's number: on i386, socket is both socketcall(SYS_SOCKET)
      // (refused outright, effective_rules.h) and the direct syscall 359.
      const int nr = syscalls::KernelSyscallNumber(name, arch);
      if (nr >= 0) out[AuditArch(arch)].push_back(static_cast<uint32_t>(nr));  // else libseccomp's rules decide
    }
  }
  return out;
}

// Resolves the labels of every arch block plus the shared tail: deny, then
// (with the socket guard) deny_family, then (with the i386 multiplexer
// guard) deny_multiplexer, then out.
Result<BpfProgram> Resolve(const std::vector<Block>& blocks, bool with_family_deny, bool with_multiplexer_deny) {
  std::vector<size_t> block_start;
  size_t total = 0;
  for (const Block& b : blocks) {
    block_start.push_back(total);
    total += b.insns.size();
  }
  const size_t deny = total;
  const size_t deny_family = total + 1;
  const size_t deny_multiplexer = total + (with_family_deny ? 2 : 1);
  const size_t out = deny_multiplexer + (with_multiplexer_deny ? 1 : 0);
  BpfProgram program;
  for (size_t bi = 0; bi < blocks.size(); ++bi) {
    const Block& b = blocks[bi];
    for (size_t i = 0; i < b.insns.size(); ++i) {
      const Insn& insn = b.insns[i];
      const size_t pc = block_start[bi] + i;
      auto target = [&](int label) -> size_t {
        switch (label) {
          case kNext: return pc + 1;
          case kDeny: return deny;
          case kDenyFamily: return deny_family;
          case kDenyMultiplexer: return deny_multiplexer;
          case kOut: return out;
          case kNextArch: return bi + 1 < blocks.size() ? block_start[bi + 1] : out;
          default: return block_start[bi] + b.check_starts.at(static_cast<size_t>(kFirstCheck - label));
        }
      };
      const size_t jt = target(insn.jt) - pc - 1;
      const size_t jf = target(insn.jf) - pc - 1;
      if (jt > 255 || jf > 255) return InternalError("guard prefix: jump too long");
      program.push_back(sock_filter{insn.code, static_cast<uint8_t>(jt), static_cast<uint8_t>(jf), insn.k});
    }
  }
  return program;
}

// A value guard, the shape of the ioctl, socket and fcntl guards: syscalls
// `nrs` get `deny_label` when the low 32 bits of argument `arg` (the kernel
// reads an int there) equal one of `denied`; anything else goes out.
//    ld  [low 32 bits of args[arg]]
//    jeq denied[0], deny_label, 0
//    ...
//    jeq denied[n-1], deny_label, out
Check ValueGuard(std::vector<uint32_t> nrs, uint32_t arg, const std::vector<uint32_t>& denied, int deny_label) {
  Check check{std::move(nrs), {{bpf::kLoadWordAbs, bpf::ArgLowOffset(arg)}}};
  for (size_t i = 0; i < denied.size(); ++i) {
    check.body.push_back({bpf::kJeqK, denied[i], deny_label, i + 1 == denied.size() ? kOut : kNext});
  }
  return check;
}

// seccomp(SECCOMP_SET_MODE_FILTER, flags with NEW_LISTENER) -> deny.
Check SeccompListenerGuard(std::vector<uint32_t> nrs) {
  return {std::move(nrs),
          {{bpf::kLoadWordAbs, bpf::ArgLowOffset(0)},
           {bpf::kJeqK, bpf::kSetModeFilter, kNext, kOut},
           {bpf::kLoadWordAbs, bpf::ArgLowOffset(1)},
           {bpf::kJsetK, bpf::kFilterFlagNewListener, kDeny, kOut}}};
}

// clone / unshare with any bit of `mask` in the flags' low half -> deny.
Check CloneFlagsGuard(std::vector<uint32_t> nrs, uint32_t mask) {
  return {std::move(nrs), {{bpf::kLoadWordAbs, bpf::ArgLowOffset(0)}, {bpf::kJsetK, mask, kDeny, kOut}}};
}

// The i386 numbers of I386MultiplexerNames (socketcall 102, ipc 117).
std::vector<uint32_t> I386MultiplexerNumbers() {
  std::vector<uint32_t> out;
  for (std::string_view name : I386MultiplexerNames()) {
    const int nr = syscalls::ResolveSyscall(name, ir::Arch::kX86);
    if (nr >= 0) out.push_back(static_cast<uint32_t>(nr));
  }
  return out;
}

// One arch's block: the dispatch on the syscall number (each check's
// numbers, in order, then the refused multiplexers), then the checks' bodies
// in the same order. Empty when nothing is guarded there.
Block ArchBlock(uint32_t audit_arch, const std::vector<Check>& checks, const std::vector<uint32_t>& multiplexers) {
  Block b;
  std::vector<std::pair<uint32_t, int>> dispatch;  // nr -> where it goes
  for (size_t c = 0; c < checks.size(); ++c) {
    for (uint32_t nr : checks[c].nrs) dispatch.push_back({nr, CheckLabel(c)});
  }
  for (uint32_t nr : multiplexers) dispatch.push_back({nr, kDenyMultiplexer});
  if (dispatch.empty()) return b;
  b.insns.push_back({bpf::kLoadWordAbs, bpf::kArchOffset});
  b.insns.push_back({bpf::kJeqK, audit_arch, kNext, kNextArch});
  b.insns.push_back({bpf::kLoadWordAbs, bpf::kNrOffset});
  for (size_t i = 0; i < dispatch.size(); ++i) {
    b.insns.push_back({bpf::kJeqK, dispatch[i].first, dispatch[i].second, i + 1 == dispatch.size() ? kOut : kNext});
  }
  for (const Check& check : checks) {
    b.check_starts.push_back(b.insns.size());
    b.insns.insert(b.insns.end(), check.body.begin(), check.body.end());
  }
  return b;
}

// The checks of one arch, in the prefix's order: ioctl, seccomp, clone and
// unshare, socket, fcntl (and i386's fcntl64). A guard that is off, or whose
// syscalls the arch lacks, has none.
std::vector<Check> ArchChecks(const PrefixGuards& guards, const std::vector<ir::Arch>& arches, uint32_t audit_arch) {
  auto numbers = [&](std::initializer_list<const char*> names) { return Numbers(arches, names).at(audit_arch); };
  std::vector<Check> checks;
  auto add = [&](Check check) {
    if (!check.nrs.empty()) checks.push_back(std::move(check));
  };
  if (!guards.ioctl_denied_cmds.empty()) add(ValueGuard(numbers({"ioctl"}), 1, guards.ioctl_denied_cmds, kDeny));
  if (guards.seccomp_listener) add(SeccompListenerGuard(numbers({"seccomp"})));
  if (guards.clone_new_mask != 0) add(CloneFlagsGuard(numbers({"clone", "unshare"}), guards.clone_new_mask));
  if (!guards.socket_denied_families.empty()) {
    add(ValueGuard(numbers({"socket"}), 0, guards.socket_denied_families, kDenyFamily));
  }
  if (!guards.fcntl_denied_cmds.empty()) {
    add(ValueGuard(numbers({"fcntl", "fcntl64"}), 1, guards.fcntl_denied_cmds, kDeny));
  }
  return checks;
}

// For each number of `name` on each arch: a header naming it, then one line
// per denied value (`value_line`), for the ioctl and fcntl value guards.
void DescribeValueGuard(std::string& text, const std::vector<ir::Arch>& arches, const char* name,
                        const std::vector<uint32_t>& denied, const std::function<std::string(uint32_t)>& value_line) {
  if (denied.empty()) return;
  char line[200];
  for (const auto& [audit_arch, numbers] : Numbers(arches, {name})) {
    for (uint32_t nr : numbers) {
      std::snprintf(line, sizeof(line), "if ($arch == %u && $syscall == %u)   # %s\n", audit_arch, nr, name);
      text += line;
      for (uint32_t value : denied) text += value_line(value);
    }
  }
}

}  // namespace

uint32_t SocketFamilyDenyRet() { return SECCOMP_RET_ERRNO | EAFNOSUPPORT; }

uint32_t MultiplexerDenyRet() { return SECCOMP_RET_ERRNO | ENOSYS; }

uint32_t AuditArch(ir::Arch arch) {
  switch (arch) {
    case ir::Arch::kX86_64: return AUDIT_ARCH_X86_64;
    case ir::Arch::kX32: return AUDIT_ARCH_X86_64;
    case ir::Arch::kX86: return AUDIT_ARCH_I386;
    case ir::Arch::kAarch64: return AUDIT_ARCH_AARCH64;
  }
  return 0;
}

Result<BpfProgram> BuildGuardPrefix(const std::vector<ir::Arch>& arches, const PrefixGuards& guards,
                                    uint32_t deny_ret) {
  if (guards.empty()) return BpfProgram{};
  std::vector<Block> blocks;
  for (const auto& [audit_arch, unused] : Numbers(arches, {})) {
    const std::vector<uint32_t> multiplexers =
        guards.i386_multiplexers && audit_arch == AUDIT_ARCH_I386 ? I386MultiplexerNumbers() : std::vector<uint32_t>{};
    Block b = ArchBlock(audit_arch, ArchChecks(guards, arches, audit_arch), multiplexers);
    if (!b.insns.empty()) blocks.push_back(std::move(b));
  }
  if (blocks.empty()) return BpfProgram{};
  const bool family_deny = !guards.socket_denied_families.empty();
  const bool multiplexer_deny = guards.i386_multiplexers && std::any_of(arches.begin(), arches.end(), [](ir::Arch a) {
    return a == ir::Arch::kX86;
  });
  COCOON_ASSIGN_OR_RETURN(BpfProgram program, Resolve(blocks, family_deny, multiplexer_deny));
  program.push_back(BPF_STMT(BPF_RET | BPF_K, deny_ret));
  if (family_deny) program.push_back(BPF_STMT(BPF_RET | BPF_K, SocketFamilyDenyRet()));
  if (multiplexer_deny) program.push_back(BPF_STMT(BPF_RET | BPF_K, MultiplexerDenyRet()));
  return program;
}

std::string DescribeGuardPrefix(const std::vector<ir::Arch>& arches, const PrefixGuards& guards, uint32_t deny_ret,
                                size_t instructions) {
  if (instructions == 0) return "";
  std::string text = "#\n# cocoon guard prefix: these " + std::to_string(instructions) +
                     " BPF instructions run BEFORE the libseccomp program above\n# (linux.seccomp.bpf = prefix + "
                     "libseccomp program; the kernel truncates these arguments to 32 bits)\n";
  const std::string action = DescribeSeccompRet(deny_ret);
  char line[200];
  DescribeValueGuard(text, arches, "ioctl", guards.ioctl_denied_cmds, [&](uint32_t cmd) {
    std::snprintf(line, sizeof(line), "  if ($a1.lo32 == 0x%x)\n    action %s;\n", cmd, action.c_str());
    return std::string(line);
  });
  for (const auto& [audit_arch, numbers] : Numbers(arches, {"seccomp"})) {
    for (uint32_t nr : guards.seccomp_listener ? numbers : std::vector<uint32_t>{}) {
      std::snprintf(line, sizeof(line),
                    "if ($arch == %u && $syscall == %u)   # seccomp\n  if ($a0.lo32 == %u && ($a1.lo32 & 0x%x) != 0)\n"
                    "    action %s;\n",
                    audit_arch, nr, bpf::kSetModeFilter, bpf::kFilterFlagNewListener, action.c_str());
      text += line;
    }
  }
  if (guards.clone_new_mask != 0) {
    std::snprintf(line, sizeof(line), "if ($syscall is clone or unshare && ($a0.lo32 & 0x%x) != 0)\n  action %s;\n",
                  guards.clone_new_mask, action.c_str());
    text += line;
  }
  for (uint32_t family : guards.socket_denied_families) {
    std::snprintf(line, sizeof(line), "if ($syscall is socket && $a0.lo32 == %u)\n  action %s;\n", family,
                  DescribeSeccompRet(SocketFamilyDenyRet()).c_str());
    text += line;
  }
  for (const char* name : {"fcntl", "fcntl64"}) {
    DescribeValueGuard(text, arches, name, guards.fcntl_denied_cmds, [&](uint32_t cmd) {
      std::snprintf(line, sizeof(line), "  if ($a1.lo32 == %u)   # F_SETLEASE\n    action %s;\n", cmd, action.c_str());
      return std::string(line);
    });
  }
  if (guards.i386_multiplexers) {
    for (uint32_t nr : I386MultiplexerNumbers()) {
      std::snprintf(line, sizeof(line), "if ($arch == %u && $syscall == %u)   # i386 socketcall/ipc multiplexer\n"
                    "  action %s;\n", AUDIT_ARCH_I386, nr, DescribeSeccompRet(MultiplexerDenyRet()).c_str());
      text += line;
    }
  }
  text += "# anything else: continue with the libseccomp program\n";
  return text;
}

}  // namespace cocoon::backends
