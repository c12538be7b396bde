/* Probe: change the mount tree from inside the sandbox.
 *   op=tmpfs       mount a fresh tmpfs over /tmp
 *   op=remount_rw  remount / and /usr read-write
 *   op=bind_over   bind /tmp over /usr/bin
 *   op=umount      detach /proc (would unmask what lies beneath)
 *   op=fsopen      new mount API: fsopen("tmpfs")
 *   op=open_tree   new mount API: clone a subtree (OPEN_TREE_CLONE)
 *   op=setattr     mount_setattr(/, clear MOUNT_ATTR_RDONLY, AT_RECURSIVE)
 * With every capability dropped (and seccomp denying the mount family) each
 * must fail. Guarded: nothing is attempted in the host's mount namespace.
 */
#include "probe_common.h"

#include <linux/mount.h>
#include <sys/mount.h>

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif

static long attempt(void* arg) {
  const char* op = (const char*)arg;
  const char* scratch = access("/tmp", F_OK) == 0 ? "/tmp" : "/work";
  if (strcmp(op, "tmpfs") == 0) return mount("tmpfs", scratch, "tmpfs", 0, "size=1m");
  if (strcmp(op, "remount_rw") == 0) {
    long r = mount(NULL, "/", NULL, MS_REMOUNT | MS_BIND, NULL);
    if (r == 0) return r;
    return mount(NULL, "/usr", NULL, MS_REMOUNT | MS_BIND, NULL);
  }
  if (strcmp(op, "bind_over") == 0) return mount(scratch, "/usr/bin", NULL, MS_BIND, NULL);
  if (strcmp(op, "umount") == 0) return umount2("/proc", MNT_DETACH);
  if (strcmp(op, "fsopen") == 0) return syscall(SYS_fsopen, "tmpfs", 0);
  if (strcmp(op, "open_tree") == 0)
    return syscall(SYS_open_tree, AT_FDCWD, "/usr", OPEN_TREE_CLONE | O_CLOEXEC);
  if (strcmp(op, "setattr") == 0) {
    struct mount_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.attr_clr = MOUNT_ATTR_RDONLY;
    return syscall(SYS_mount_setattr, AT_FDCWD, "/", AT_RECURSIVE, &attr, sizeof attr);
  }
  errno = EINVAL;
  return -2;
}

int main(int argc, char** argv) {
  probe_init("mount", argc, argv);
  probe_require_sandbox(kNsMnt);
  struct probe_attempt_result r = probe_attempt(attempt, (void*)probe_op());
  if (r.ran && r.ret == -2) PROBE_ERROR("unknown op=%s", probe_op());
  if (probe_succeeded(&r)) PROBE_ESCAPED("%s succeeded (ret %ld)", probe_op(), r.ret);
  char why[256];
  PROBE_BLOCKED("%s", probe_describe_failure(&r, why, sizeof why));
}
