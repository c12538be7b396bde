// Syscall name lookups against libseccomp's own tables, so that the names a
// policy may use are exactly the names the back end can compile.
#include <seccomp.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "compiler/syscalls/syscall_groups.h"

namespace cocoon::syscalls {

uint32_t ScmpArchToken(ir::Arch arch) {
  switch (arch) {
    case ir::Arch::kX86_64: return SCMP_ARCH_X86_64;
    case ir::Arch::kX32: return SCMP_ARCH_X32;
    case ir::Arch::kX86: return SCMP_ARCH_X86;
    case ir::Arch::kAarch64: return SCMP_ARCH_AARCH64;
  }
  return SCMP_ARCH_X86_64;
}

std::string_view ArchName(ir::Arch arch) {
  switch (arch) {
    case ir::Arch::kX86_64: return "x86_64";
    case ir::Arch::kX32: return "x32";
    case ir::Arch::kX86: return "x86";
    case ir::Arch::kAarch64: return "aarch64";
  }
  return "unknown";
}

int ResolveSyscall(std::string_view name, ir::Arch arch) {
  const std::string copy(name);  // libseccomp wants a NUL-terminated string
  return seccomp_syscall_resolve_name_arch(ScmpArchToken(arch), copy.c_str());
}

namespace {

// The arch's direct syscalls by name, read once from libseccomp's table
// (numbers are dense from 0; 1024 covers every table with margin). The
// reverse lookup scans the whole table per number, so doing it per query
// cost ~40 ms per check of a policy (the verifier's size pass asks for every
// multiplexed name on i386).
const std::unordered_map<std::string, int>& DirectSyscalls(ir::Arch arch) {
  static std::mutex mutex;
  static std::map<ir::Arch, std::unordered_map<std::string, int>> tables;
  std::lock_guard lock(mutex);
  auto [it, inserted] = tables.try_emplace(arch);
  if (inserted) {
    for (int candidate = 0; candidate < 1024; ++candidate) {
      char* found = seccomp_syscall_resolve_num_arch(ScmpArchToken(arch), candidate);
      if (found == nullptr) continue;
      it->second.emplace(found, candidate);
      free(found);  // NOLINT: libseccomp allocates with malloc
    }
  }
  return it->second;  // never erased: the reference stays valid
}

}  // namespace

int KernelSyscallNumber(std::string_view name, ir::Arch arch) {
  const int nr = ResolveSyscall(name, arch);
  if (nr >= 0 || nr == __NR_SCMP_ERROR) return nr;
  // A pseudo number (a multiplexed call such as socket on i386): the direct
  // syscall of that name in the arch's table, if it has one.
  const auto& direct = DirectSyscalls(arch);
  auto found = direct.find(std::string(name));
  return found != direct.end() ? found->second : nr;
}

bool IsKnownSyscall(std::string_view name, const std::vector<ir::Arch>& arches) {
  if (name.empty() || name.front() == '@') return false;
  for (ir::Arch arch : arches) {
    // __NR_SCMP_ERROR (-1) means unknown; other negative values are
    // libseccomp's pseudo numbers for multiplexed calls (socket on x86 goes
    // through socketcall), which it can still filter.
    if (ResolveSyscall(name, arch) != __NR_SCMP_ERROR) return true;
  }
  return false;
}

const std::vector<std::string>& KnownSyscallNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    // x86_64 numbers are dense from 0; 1024 covers the table with margin.
    for (int nr = 0; nr < 1024; ++nr) {
      char* name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86_64, nr);
      if (name == nullptr) continue;
      out.emplace_back(name);
      free(name);  // NOLINT: libseccomp allocates with malloc
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }();
  return names;
}

}  // namespace cocoon::syscalls
