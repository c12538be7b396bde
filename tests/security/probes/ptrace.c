/* Probe: inspect or control another process.
 *   op=traceme            PTRACE_TRACEME
 *   op=attach | seize     PTRACE_ATTACH / PTRACE_SEIZE a sibling process
 *   op=process_vm_readv   read a sibling's memory
 *   op=process_vm_writev  write a sibling's memory
 *   op=pidfd_getfd        steal a sibling's fd through pidfd_getfd(2)
 * The sibling runs as the same uid, so only the sandbox (seccomp, no caps)
 * stands in the way: the kernel's own ptrace checks would allow it.
 */
#include "probe_common.h"

#include <sys/ptrace.h>
#include <sys/uio.h>

static volatile char g_secret[32] = "cocoon-sibling-secret";
static pid_t g_sibling;

static long attempt(void* arg) {
  const char* op = (const char*)arg;
  if (strcmp(op, "traceme") == 0) return ptrace(PTRACE_TRACEME, 0, 0, 0);
  if (strcmp(op, "attach") == 0) return ptrace(PTRACE_ATTACH, g_sibling, 0, 0);
  if (strcmp(op, "seize") == 0) return ptrace(PTRACE_SEIZE, g_sibling, 0, 0);
  if (strcmp(op, "process_vm_readv") == 0 || strcmp(op, "process_vm_writev") == 0) {
    char buf[32];
    memset(buf, 0, sizeof buf);
    struct iovec local = {buf, sizeof buf};
    struct iovec remote = {(void*)g_secret, sizeof buf};
    if (op[11] == 'r') {
      long n = process_vm_readv(g_sibling, &local, 1, &remote, 1, 0);
      return (n > 0 && strcmp(buf, "cocoon-sibling-secret") == 0) ? n : (n > 0 ? -3 : n);
    }
    memcpy(buf, "cocoon-overwritten", 19);
    return process_vm_writev(g_sibling, &local, 1, &remote, 1, 0);
  }
  if (strcmp(op, "pidfd_getfd") == 0) {
    long pidfd = syscall(SYS_pidfd_open, g_sibling, 0);
    if (pidfd < 0) return pidfd;
    return syscall(SYS_pidfd_getfd, (int)pidfd, 1, 0);
  }
  errno = EINVAL;
  return -2;
}

int main(int argc, char** argv) {
  probe_init("ptrace", argc, argv);
  g_sibling = fork();
  if (g_sibling < 0) PROBE_ERROR("fork sibling: %s", strerror(errno));
  if (g_sibling == 0) {
    for (;;) pause();
  }
  struct probe_attempt_result r = probe_attempt(attempt, (void*)probe_op());
  kill(g_sibling, SIGKILL);
  waitpid(g_sibling, NULL, 0);
  if (r.ran && r.ret == -2) PROBE_ERROR("unknown op=%s", probe_op());
  if (probe_succeeded(&r)) PROBE_ESCAPED("%s on sibling pid %d succeeded (ret %ld)", probe_op(), g_sibling, r.ret);
  char why[256];
  PROBE_BLOCKED("%s", probe_describe_failure(&r, why, sizeof why));
}
