// Seccomp: parent-side validation, child-side loading and listener handoff.
#include "enforcer/seccomp_loader.h"

#include <linux/seccomp.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "enforcer/child_steps.h"

namespace cocoon::enforcer {

Result<std::vector<sock_filter>> ValidateSeccompProgram(std::string_view bytes) {
  if (bytes.empty()) return InvalidArgumentError("seccomp program is empty");
  if (bytes.size() % sizeof(sock_filter) != 0) {
    return InvalidArgumentError("seccomp program size " + std::to_string(bytes.size()) +
                                " is not a multiple of 8 (struct sock_filter)");
  }
  size_t count = bytes.size() / sizeof(sock_filter);
  if (count > BPF_MAXINSNS) return InvalidArgumentError("seccomp program has more than 4096 instructions");
  std::vector<sock_filter> program(count);
  memcpy(program.data(), bytes.data(), bytes.size());
  for (size_t i = 0; i < count; ++i) {
    const sock_filter& insn = program[i];
    if (BPF_CLASS(insn.code) != BPF_JMP) continue;
    size_t limit = count - i - 1;
    bool bad = BPF_OP(insn.code) == BPF_JA ? insn.k >= limit : (insn.jt >= limit || insn.jf >= limit);
    if (bad) return InvalidArgumentError("seccomp program jumps out of range at instruction " + std::to_string(i));
  }
  if (BPF_CLASS(program.back().code) != BPF_RET) {
    return InvalidArgumentError("seccomp program does not end in a return (it could fall through)");
  }
  return program;
}

bool ProgramUsesUserNotif(const std::vector<sock_filter>& program) {
  for (const auto& insn : program) {
    if (BPF_CLASS(insn.code) == BPF_RET && BPF_RVAL(insn.code) == BPF_K &&
        (insn.k & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_USER_NOTIF) {
      return true;
    }
  }
  return false;
}

namespace child {
namespace {
// <linux/seccomp.h> from Linux 5.19; spelled out for older headers.
constexpr unsigned int kWaitKillableRecv = 1U << 5;  // SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
}  // namespace

// A spin-wait hint to the CPU (and to a hypervisor watching for spinning).
inline void CpuRelax() noexcept {
#if defined(__x86_64__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield");
#endif
}

// After the filter is installed every syscall is filtered, including the ones
// a handshake would need (write/read could be denied, or themselves routed to
// the listener nobody holds yet). So the listener fd is published through a
// MAP_SHARED page and the child spins, syscall-free, until the parent has
// copied it with pidfd_getfd(2). The fd is O_CLOEXEC (kernel/seccomp.c), so
// execve closes the child's copy: the sandboxed program never holds its own
// listener (it could otherwise answer, and allow, its own notifications).
bool LoadSeccomp(const ChildSpec& spec, int error_fd, ChildError* error) noexcept {
  if (spec.seccomp == nullptr) return Fail(error, ChildStep::kSeccomp, EINVAL);
  unsigned int flags = spec.seccomp_listener ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
  if (spec.seccomp_listener) {
    // Tell the parent to start watching the shared page (last unfiltered write).
    ChildError progress{static_cast<int>(ChildStep::kListenerHandoff), 0, 0};
    long written = sys::Call(SYS_write, error_fd, &progress, sizeof(progress));
    if (written != sizeof(progress)) return Fail(error, ChildStep::kListenerHandoff, written < 0 ? sys::ErrorOf(written) : EIO);
  }
  // With a listener, WAIT_KILLABLE_RECV (Linux 5.19): once the supervisor
  // has received a notification, the task waits for the answer ignoring
  // non-fatal signals. Without it a signal interrupts the wait and the
  // syscall restarts: a brokered connect the supervisor already completed
  // would then fail with EISCONN, and a logged call is notified twice. Fatal
  // signals (a kill rule's SIGKILL, the timeout) still end the wait. Older
  // kernels reject the flag with EINVAL and get the plain listener.
  if (spec.seccomp_listener) flags |= kWaitKillableRecv;
  long rc = sys::Call(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, spec.seccomp);
  if (rc == -EINVAL && (flags & kWaitKillableRecv) != 0) {
    rc = sys::Call(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags & ~kWaitKillableRecv, spec.seccomp);
  }
  if (!Succeeded(rc, error, ChildStep::kSeccomp)) return false;
  if (!spec.seccomp_listener) return true;
  spec.handoff->listener_fd.store(static_cast<int>(rc), std::memory_order_release);
  while (spec.handoff->taken.load(std::memory_order_acquire) == 0) {
    if (spec.handoff->abandon.load(std::memory_order_acquire) != 0) return Fail(error, ChildStep::kListenerHandoff, EPIPE);
    CpuRelax();
  }
  return true;
}

}  // namespace child
}  // namespace cocoon::enforcer
