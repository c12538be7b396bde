#include "compiler/backends/seccomp/guard_prefix.h"

#include <linux/audit.h>
#include <linux/seccomp.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <map>
#include <string_view>

#include "compiler/backends/seccomp/bpf_opcodes.h"
#include "compiler/backends/seccomp/effective_rules.h"
#include "compiler/syscalls/syscall_groups.h"

namespace cocoon::backends {
namespace {

// Symbolic jump targets, resolved once the layout is known.
enum Label : int {
  kNext = -1, kDeny = -2, kOut = -3, kNextArch = -4, kIoctlCheck = -5, kSeccompCheck = -6, kCloneCheck = -7,
  kSocketCheck = -8, kDenyFamily = -9, kDenyMultiplexer = -10, kFcntlCheck = -11
};

struct Insn {
  uint16_t code;
  uint32_t k;
  int jt = kNext;  // kNext: fall through; otherwise a Label
  int jf = kNext;
};

struct Block {
  std::vector<Insn> insns;
  size_t ioctl_check = 0;    // index of the ioctl cmd check
  size_t seccomp_check = 0;  // index of the seccomp op check
  size_t clone_check = 0;    // index of the clone/unshare flags check
  size_t socket_check = 0;   // index of the socket family check
  size_t fcntl_check = 0;    // index of the fcntl cmd check
};

// Audit arch -> the numbers of `name` there (x86_64 and x32 share one arch).
std::map<uint32_t, std::vector<uint32_t>> Numbers(const std::vector<ir::Arch>& arches, const char* name) {
  std::map<uint32_t, std::vector<uint32_t>> out;
  for (ir::Arch arch : arches) {
    out[AuditArch(arch)];
    // The kernel's number: on i386, socket is both socketcall(SYS_SOCKET)
    // (refused outright, effective_rules.h) and the direct syscall 359.
    const int nr = syscalls::KernelSyscallNumber(name, arch);
    if (nr >= 0) out[AuditArch(arch)].push_back(static_cast<uint32_t>(nr));  // else libseccomp's rules decide
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
          case kDeny: return deny;
          case kDenyFamily: return deny_family;
          case kDenyMultiplexer: return deny_multiplexer;
          case kOut: return out;
          case kNextArch: return bi + 1 < blocks.size() ? block_start[bi + 1] : out;
          case kIoctlCheck: return block_start[bi] + b.ioctl_check;
          case kSeccompCheck: return block_start[bi] + b.seccomp_check;
          case kCloneCheck: return block_start[bi] + b.clone_check;
          case kSocketCheck: return block_start[bi] + b.socket_check;
          case kFcntlCheck: return block_start[bi] + b.fcntl_check;
          default: return pc + 1;
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

// One arch's block; nullopt-like empty block when nothing is guarded there.
struct ArchNumbers {
  std::vector<uint32_t> ioctl, seccomp, clone, socket;  // clone holds clone and unshare
  std::vector<uint32_t> fcntl;  // fcntl and (i386) fcntl64
  std::vector<uint32_t> multiplexers;  // i386 socketcall, ipc: refused whatever the arguments
};

// The i386 numbers of I386MultiplexerNames (socketcall 102, ipc 117).
std::vector<uint32_t> I386MultiplexerNumbers() {
  std::vector<uint32_t> out;
  for (std::string_view name : I386MultiplexerNames()) {
    const int nr = syscalls::ResolveSyscall(name, ir::Arch::kX86);
    if (nr >= 0) out.push_back(static_cast<uint32_t>(nr));
  }
  return out;
}

Block ArchBlock(uint32_t audit_arch, const ArchNumbers& n, const PrefixGuards& guards) {
  Block b;
  std::vector<std::pair<uint32_t, int>> dispatch;  // nr -> check label
  for (uint32_t nr : n.ioctl) dispatch.push_back({nr, kIoctlCheck});
  for (uint32_t nr : n.seccomp) dispatch.push_back({nr, kSeccompCheck});
  for (uint32_t nr : n.clone) dispatch.push_back({nr, kCloneCheck});
  for (uint32_t nr : n.socket) dispatch.push_back({nr, kSocketCheck});
  for (uint32_t nr : n.fcntl) dispatch.push_back({nr, kFcntlCheck});
  for (uint32_t nr : n.multiplexers) dispatch.push_back({nr, kDenyMultiplexer});
  if (dispatch.empty()) return b;
  b.insns.push_back({bpf::kLoadWordAbs, bpf::kArchOffset});
  b.insns.push_back({bpf::kJeqK, audit_arch, kNext, kNextArch});
  b.insns.push_back({bpf::kLoadWordAbs, bpf::kNrOffset});
  for (size_t i = 0; i < dispatch.size(); ++i) {
    b.insns.push_back({bpf::kJeqK, dispatch[i].first, dispatch[i].second, i + 1 == dispatch.size() ? kOut : kNext});
  }
  if (!n.ioctl.empty()) {
    b.ioctl_check = b.insns.size();
    b.insns.push_back({bpf::kLoadWordAbs, bpf::ArgLowOffset(1)});
    const auto& cmds = guards.ioctl_denied_cmds;
    for (size_t i = 0; i < cmds.size(); ++i) {
      b.insns.push_back({bpf::kJeqK, cmds[i], kDeny, i + 1 == cmds.size() ? kOut : kNext});
    }
  }
  if (!n.seccomp.empty()) {
    b.seccomp_check = b.insns.size();
    b.insns.push_back({bpf::kLoadWordAbs, bpf::ArgLowOffset(0)});
    b.insns.push_back({bpf::kJeqK, bpf::kSetModeFilter, kNext, kOut});
    b.insns.push_back({bpf::kLoadWordAbs, bpf::ArgLowOffset(1)});
    b.insns.push_back({bpf::kJsetK, bpf::kFilterFlagNewListener, kDeny, kOut});
  }
  if (!n.clone.empty()) {
    b.clone_check = b.insns.size();
    b.insns.push_back({bpf::kLoadWordAbs, bpf::ArgLowOffset(0)});
    b.insns.push_back({bpf::kJsetK, guards.clone_new_mask, kDeny, kOut});
  }
  if (!n.socket.empty()) {
    b.socket_check = b.insns.size();
    b.insns.push_back({bpf::kLoadWordAbs, bpf::ArgLowOffset(0)});
    const auto& families = guards.socket_denied_families;
    for (size_t i = 0; i < families.size(); ++i) {
      b.insns.push_back({bpf::kJeqK, families[i], kDenyFamily, i + 1 == families.size() ? kOut : kNext});
    }
  }
  if (!n.fcntl.empty()) {
    b.fcntl_check = b.insns.size();
    b.insns.push_back({bpf::kLoadWordAbs, bpf::ArgLowOffset(1)});
    const auto& cmds = guards.fcntl_denied_cmds;
    for (size_t i = 0; i < cmds.size(); ++i) {
      b.insns.push_back({bpf::kJeqK, cmds[i], kDeny, i + 1 == cmds.size() ? kOut : kNext});
    }
  }
  return b;
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
  const auto ioctl = Numbers(arches, "ioctl");
  const auto seccomp = Numbers(arches, "seccomp");
  const auto clone = Numbers(arches, "clone");
  const auto unshare = Numbers(arches, "unshare");
  const auto socket = Numbers(arches, "socket");
  const auto fcntl = Numbers(arches, "fcntl");
  const auto fcntl64 = Numbers(arches, "fcntl64");
  std::vector<Block> blocks;
  for (const auto& [audit_arch, ioctl_nrs] : ioctl) {
    ArchNumbers n;
    if (!guards.ioctl_denied_cmds.empty()) n.ioctl = ioctl_nrs;
    if (guards.seccomp_listener) n.seccomp = seccomp.at(audit_arch);
    if (guards.clone_new_mask != 0) {
      n.clone = clone.at(audit_arch);
      n.clone.insert(n.clone.end(), unshare.at(audit_arch).begin(), unshare.at(audit_arch).end());
    }
    if (!guards.socket_denied_families.empty()) n.socket = socket.at(audit_arch);
    if (!guards.fcntl_denied_cmds.empty()) {
      n.fcntl = fcntl.at(audit_arch);
      n.fcntl.insert(n.fcntl.end(), fcntl64.at(audit_arch).begin(), fcntl64.at(audit_arch).end());
    }
    if (guards.i386_multiplexers && audit_arch == AUDIT_ARCH_I386) n.multiplexers = I386MultiplexerNumbers();
    Block b = ArchBlock(audit_arch, n, guards);
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
  for (const auto& [audit_arch, numbers] : Numbers(arches, "ioctl")) {
    for (uint32_t nr : guards.ioctl_denied_cmds.empty() ? std::vector<uint32_t>{} : numbers) {
      std::snprintf(line, sizeof(line), "if ($arch == %u && $syscall == %u)   # ioctl\n", audit_arch, nr);
      text += line;
      for (uint32_t cmd : guards.ioctl_denied_cmds) {
        std::snprintf(line, sizeof(line), "  if ($a1.lo32 == 0x%x)\n    action %s;\n", cmd, action.c_str());
        text += line;
      }
    }
  }
  for (const auto& [audit_arch, numbers] : Numbers(arches, "seccomp")) {
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
    for (const auto& [audit_arch, numbers] : Numbers(arches, name)) {
      for (uint32_t nr : guards.fcntl_denied_cmds.empty() ? std::vector<uint32_t>{} : numbers) {
        std::snprintf(line, sizeof(line), "if ($arch == %u && $syscall == %u)   # %s\n", audit_arch, nr, name);
        text += line;
        for (uint32_t cmd : guards.fcntl_denied_cmds) {
          std::snprintf(line, sizeof(line), "  if ($a1.lo32 == %u)   # F_SETLEASE\n    action %s;\n", cmd,
                        action.c_str());
          text += line;
        }
      }
    }
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
