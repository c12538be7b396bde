/* Probe: create new namespaces (the first step of most container escapes and
 * of many kernel exploits, which need CAP_SYS_ADMIN in a fresh user ns).
 *   op=unshare_user|unshare_mnt|unshare_net|unshare_pid|unshare_ipc|
 *      unshare_uts|unshare_cgroup|unshare_time   unshare(2)
 *   op=clone_newuser|clone_newns|clone_newnet    raw clone(2) with the flag
 *   op=clone3_newuser                            clone3(2), whose flags sit
 *      behind a pointer seccomp cannot read (so it must be denied outright)
 * Each runs in a forked child, so a success changes nothing but that child.
 */
#include "probe_common.h"

#include <linux/sched.h>
#include <sched.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static const struct {
  const char* name;
  unsigned long flag;
} kFlags[] = {
    {"user", CLONE_NEWUSER}, {"mnt", CLONE_NEWNS},       {"net", CLONE_NEWNET},
    {"pid", CLONE_NEWPID},   {"ipc", CLONE_NEWIPC},      {"uts", CLONE_NEWUTS},
    {"cgroup", CLONE_NEWCGROUP}, {"time", CLONE_NEWTIME}, {"newuser", CLONE_NEWUSER},
    {"newns", CLONE_NEWNS},  {"newnet", CLONE_NEWNET},
};

static unsigned long flag_for(const char* suffix) {
  for (size_t i = 0; i < sizeof kFlags / sizeof kFlags[0]; ++i)
    if (strcmp(kFlags[i].name, suffix) == 0) return kFlags[i].flag;
  return 0;
}

static long attempt(void* arg) {
  const char* op = (const char*)arg;
  if (strncmp(op, "unshare_", 8) == 0) {
    unsigned long f = flag_for(op + 8);
    if (!f) { errno = EINVAL; return -2; }
    return unshare((int)f);
  }
  if (strncmp(op, "clone3_", 7) == 0) {
    struct clone_args args;
    memset(&args, 0, sizeof args);
    args.flags = flag_for(op + 7);
    args.exit_signal = SIGCHLD;
    long pid = syscall(SYS_clone3, &args, sizeof args);
    if (pid == 0) _exit(0);
    if (pid > 0) waitpid((pid_t)pid, NULL, 0);
    return pid;
  }
  if (strncmp(op, "clone_", 6) == 0) {
    unsigned long f = flag_for(op + 6);
    if (!f) { errno = EINVAL; return -2; }
    long pid = syscall(SYS_clone, f | SIGCHLD, 0, 0, 0, 0);
    if (pid == 0) _exit(0);
    if (pid > 0) waitpid((pid_t)pid, NULL, 0);
    return pid;
  }
  errno = EINVAL;
  return -2;
}

int main(int argc, char** argv) {
  probe_init("namespaces", argc, argv);
  struct probe_attempt_result r = probe_attempt(attempt, (void*)probe_op());
  if (r.ran && r.ret == -2) PROBE_ERROR("unknown op=%s", probe_op());
  if (probe_succeeded(&r)) PROBE_ESCAPED("%s succeeded (ret %ld)", probe_op(), r.ret);
  char why[256];
  PROBE_BLOCKED("%s", probe_describe_failure(&r, why, sizeof why));
}
