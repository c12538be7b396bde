#include "compiler/backends/seccomp/ioctl_prefix.h"

#include <linux/audit.h>
#include <linux/seccomp.h>

#include <cstddef>
#include <cstdio>
#include <map>

#include "compiler/syscalls/syscall_groups.h"

namespace cocoon::backends {
namespace {

// seccomp_data offsets (<linux/seccomp.h>). Every architecture Cocoon emits
// for is little-endian, so the low 32 bits of args[1] come first.
constexpr uint32_t kNrOffset = offsetof(seccomp_data, nr);
constexpr uint32_t kArchOffset = offsetof(seccomp_data, arch);
constexpr uint32_t kArg1LowOffset = offsetof(seccomp_data, args) + 8 * 1;
static_assert(kArg1LowOffset == 24, "seccomp_data.args[1] low half (little-endian)");

// Symbolic jump targets, resolved once the layout is known.
enum Label : int { kNext = -1, kDeny = -2, kOut = -3, kNextArch = -4, kArgCheck = -5 };

struct Insn {
  uint16_t code;
  uint32_t k;
  int jt = kNext;  // kNext: fall through; otherwise a Label
  int jf = kNext;
};

// Audit arch -> the ioctl numbers to catch there (x86_64 and x32 share one).
std::map<uint32_t, std::vector<uint32_t>> IoctlNumbers(const std::vector<ir::Arch>& arches) {
  std::map<uint32_t, std::vector<uint32_t>> out;
  for (ir::Arch arch : arches) {
    const int nr = syscalls::ResolveSyscall("ioctl", arch);
    if (nr < 0) continue;  // not a plain syscall there: libseccomp's rules decide
    out[AuditArch(arch)].push_back(static_cast<uint32_t>(nr));
  }
  return out;
}

// Resolves the labels of one arch block plus the shared deny/out tail.
Result<BpfProgram> Resolve(const std::vector<std::vector<Insn>>& blocks) {
  std::vector<size_t> block_start;
  size_t total = 0;
  for (const auto& b : blocks) {
    block_start.push_back(total);
    total += b.size();
  }
  const size_t deny = total;
  const size_t out = total + 1;
  BpfProgram program;
  for (size_t bi = 0; bi < blocks.size(); ++bi) {
    size_t arg_check = 0;
    for (size_t i = 0; i < blocks[bi].size(); ++i) {
      if (blocks[bi][i].code == (BPF_LD | BPF_W | BPF_ABS) && blocks[bi][i].k == kArg1LowOffset) arg_check = i;
    }
    for (size_t i = 0; i < blocks[bi].size(); ++i) {
      const Insn& insn = blocks[bi][i];
      const size_t pc = block_start[bi] + i;
      auto target = [&](int label) -> size_t {
        switch (label) {
          case kDeny: return deny;
          case kOut: return out;
          case kNextArch: return bi + 1 < blocks.size() ? block_start[bi + 1] : out;
          case kArgCheck: return block_start[bi] + arg_check;
          default: return pc + 1;
        }
      };
      const size_t jt = target(insn.jt) - pc - 1;
      const size_t jf = target(insn.jf) - pc - 1;
      if (jt > 255 || jf > 255) return InternalError("ioctl prefix: jump too long");
      sock_filter f{insn.code, static_cast<uint8_t>(jt), static_cast<uint8_t>(jf), insn.k};
      program.push_back(f);
    }
  }
  return program;
}

}  // namespace

uint32_t AuditArch(ir::Arch arch) {
  switch (arch) {
    case ir::Arch::kX86_64: return AUDIT_ARCH_X86_64;
    case ir::Arch::kX32: return AUDIT_ARCH_X86_64;
    case ir::Arch::kX86: return AUDIT_ARCH_I386;
    case ir::Arch::kAarch64: return AUDIT_ARCH_AARCH64;
  }
  return 0;
}

Result<BpfProgram> BuildIoctlPrefix(const std::vector<ir::Arch>& arches, const std::vector<uint32_t>& denied_cmds,
                                    uint32_t deny_ret) {
  if (denied_cmds.empty()) return BpfProgram{};
  constexpr uint16_t kLoad = BPF_LD | BPF_W | BPF_ABS;
  constexpr uint16_t kJeq = BPF_JMP | BPF_JEQ | BPF_K;
  std::vector<std::vector<Insn>> blocks;
  for (const auto& [audit_arch, numbers] : IoctlNumbers(arches)) {
    std::vector<Insn> b;
    b.push_back({kLoad, kArchOffset});
    b.push_back({kJeq, audit_arch, kNext, kNextArch});
    b.push_back({kLoad, kNrOffset});
    for (size_t i = 0; i < numbers.size(); ++i) {
      const bool last = i + 1 == numbers.size();
      b.push_back({kJeq, numbers[i], last ? kNext : kArgCheck, last ? kOut : kNext});
    }
    b.push_back({kLoad, kArg1LowOffset});
    for (size_t i = 0; i < denied_cmds.size(); ++i) {
      b.push_back({kJeq, denied_cmds[i], kDeny, i + 1 == denied_cmds.size() ? kOut : kNext});
    }
    blocks.push_back(std::move(b));
  }
  if (blocks.empty()) return BpfProgram{};
  COCOON_ASSIGN_OR_RETURN(BpfProgram program, Resolve(blocks));
  program.push_back(BPF_STMT(BPF_RET | BPF_K, deny_ret));
  return program;
}

std::string DescribeIoctlPrefix(const std::vector<ir::Arch>& arches, const std::vector<uint32_t>& denied_cmds,
                                uint32_t deny_ret, size_t instructions) {
  if (instructions == 0) return "";
  std::string text =
      "#\n# cocoon ioctl prefix: these " + std::to_string(instructions) +
      " BPF instructions run BEFORE the libseccomp program above\n# (linux.seccomp.bpf = prefix + libseccomp "
      "program; the kernel truncates ioctl's cmd to 32 bits)\n";
  for (const auto& [audit_arch, numbers] : IoctlNumbers(arches)) {
    for (uint32_t nr : numbers) {
      char line[160];
      std::snprintf(line, sizeof(line), "if ($arch == %u && $syscall == %u)\n", audit_arch, nr);
      text += line;
      for (uint32_t cmd : denied_cmds) {
        std::snprintf(line, sizeof(line), "  if (($a1 & 0xffffffff) == 0x%x)\n    action %s;\n", cmd,
                      DescribeSeccompRet(deny_ret).c_str());
        text += line;
      }
    }
  }
  text += "# anything else: continue with the libseccomp program\n";
  return text;
}

}  // namespace cocoon::backends
