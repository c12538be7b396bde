/* Probe: kernel interfaces that are not namespaced or are a large attack
 * surface, all of which strict must deny (moby's default profile blocks them
 * too; io_uring can even create sockets without socket(2)).
 *   op=keyctl | add_key | request_key | bpf | perf_event_open |
 *      userfaultfd | io_uring_setup | kexec_load | init_module | iopl |
 *      syslog | personality
 * A returned fd / key id / 0 counts as an escape.
 */
#include "probe_common.h"

#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/keyctl.h>
#include <linux/perf_event.h>
#include <sys/personality.h>

static long attempt(void* arg) {
  const char* op = (const char*)arg;
  if (strcmp(op, "keyctl") == 0)
    return syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 1);
  if (strcmp(op, "add_key") == 0)
    return syscall(SYS_add_key, "user", "cocoon-probe", "x", 1, KEY_SPEC_PROCESS_KEYRING);
  if (strcmp(op, "request_key") == 0) {
    long r = syscall(SYS_request_key, "user", "cocoon-probe-absent", NULL, 0);
    return (r < 0 && errno == ENOKEY) ? 0 : r;  /* ENOKEY: the keyring was searched */
  }
  if (strcmp(op, "bpf") == 0) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.map_type = BPF_MAP_TYPE_ARRAY;
    attr.key_size = 4;
    attr.value_size = 4;
    attr.max_entries = 1;
    return syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr);
  }
  if (strcmp(op, "perf_event_open") == 0) {
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    return syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  }
  if (strcmp(op, "userfaultfd") == 0) {
    long r = syscall(SYS_userfaultfd, O_CLOEXEC | 1 /* UFFD_USER_MODE_ONLY */);
    if (r >= 0) return r;
    return syscall(SYS_userfaultfd, O_CLOEXEC);
  }
  if (strcmp(op, "io_uring_setup") == 0) {
    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    return syscall(SYS_io_uring_setup, 1, &p);
  }
  if (strcmp(op, "kexec_load") == 0) {
    long r = syscall(SYS_kexec_load, 0, 0, NULL, 0);
    return (r < 0 && errno == EINVAL) ? 0 : r;  /* EINVAL: passed the permission check */
  }
  if (strcmp(op, "init_module") == 0) {
    long r = syscall(SYS_init_module, NULL, 0, "");
    return (r < 0 && (errno == EFAULT || errno == ENOEXEC || errno == EINVAL)) ? 0 : r;
  }
  if (strcmp(op, "iopl") == 0) return syscall(SYS_iopl, 3);
  if (strcmp(op, "syslog") == 0) {
    char buf[64];
    return syscall(SYS_syslog, 3 /* SYSLOG_ACTION_READ_ALL */, buf, sizeof buf);
  }
  if (strcmp(op, "personality") == 0) {
    /* READ_IMPLIES_EXEC turns every readable mapping executable. */
    long r = personality(READ_IMPLIES_EXEC);
    if (r < 0) return r;
    long now = personality(0xffffffff);
    return (now >= 0 && (now & READ_IMPLIES_EXEC)) ? 0 : -3;
  }
  errno = EINVAL;
  return -2;
}

int main(int argc, char** argv) {
  probe_init("kernel_iface", argc, argv);
  /* These would touch the whole machine if they succeeded on the host:
   * attempt them only from a user namespace of our own, where the needed
   * init-namespace capabilities cannot exist. */
  const char* guarded[] = {"kexec_load", "init_module", "iopl", "syslog"};
  for (size_t i = 0; i < sizeof guarded / sizeof guarded[0]; ++i)
    if (strcmp(probe_op(), guarded[i]) == 0) probe_require_sandbox(kNsUser);
  struct probe_attempt_result r = probe_attempt(attempt, (void*)probe_op());
  if (r.ran && r.ret == -2) PROBE_ERROR("unknown op=%s", probe_op());
  if (probe_succeeded(&r)) PROBE_ESCAPED("%s succeeded (ret %ld)", probe_op(), r.ret);
  char why[256];
  PROBE_BLOCKED("%s", probe_describe_failure(&r, why, sizeof why));
}
