/* Probe: reach the kernel through a foreign syscall ABI, which a filter that
 * only checks x86_64 numbers would let through (Chromium's bpf_dsl and
 * libseccomp both check the audit arch and the x32 bit for this reason).
 *   op=x32    getpid and unshare(CLONE_NEWUSER) with the x32 bit 0x40000000
 *   op=int80  getpid (20) and unshare (310) through `int $0x80` (i386 ABI)
 * Any call that returns success means the foreign ABI is reachable.
 */
#include "probe_common.h"

#include <sched.h>

#define X32_BIT 0x40000000L

static long raw_syscall(long nr, long a1) {
  long ret;
  __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a1) : "rcx", "r11", "memory");
  if (ret < 0 && ret > -4096) {
    errno = (int)-ret;
    return -1;
  }
  return ret;
}

static long int80(long nr, long a1) {
  long ret;
  __asm__ volatile("int $0x80"
                   : "=a"(ret)
                   : "a"(nr), "b"(a1)
                   : "rcx", "r8", "r9", "r10", "r11", "memory");
  if (ret < 0 && ret > -4096) {
    errno = (int)-ret;
    return -1;
  }
  return ret;
}

static long attempt_getpid(void* arg) {
  return strcmp((const char*)arg, "x32") == 0 ? raw_syscall(X32_BIT | 39, 0) : int80(20, 0);
}

static long attempt_unshare(void* arg) {
  return strcmp((const char*)arg, "x32") == 0 ? raw_syscall(X32_BIT | 272, CLONE_NEWUSER)
                                              : int80(310, CLONE_NEWUSER);
}

int main(int argc, char** argv) {
  probe_init("abi", argc, argv);
  const char* op = probe_op();
  if (strcmp(op, "x32") != 0 && strcmp(op, "int80") != 0) PROBE_ERROR("unknown op=%s", op);
  struct probe_attempt_result a = probe_attempt(attempt_getpid, (void*)op);
  struct probe_attempt_result b = probe_attempt(attempt_unshare, (void*)op);
  if (probe_succeeded(&b)) PROBE_ESCAPED("%s unshare(CLONE_NEWUSER) succeeded", op);
  if (probe_succeeded(&a)) PROBE_ESCAPED("%s getpid reached the kernel (returned %ld)", op, a.ret);
  char w1[160], w2[160];
  PROBE_BLOCKED("getpid: %s; unshare: %s", probe_describe_failure(&a, w1, sizeof w1),
                probe_describe_failure(&b, w2, sizeof w2));
}
