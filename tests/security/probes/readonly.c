/* Probe: modify a read-only path (write, append, rename, unlink, chmod,
 * truncate, create, chown, utimes).
 *
 * Every attempt is non-destructive even if it SUCCEEDS, because a broken
 * sandbox would let it reach the host's /usr:
 *  - write/append/truncate only open(2) the file for writing, write nothing;
 *  - rename/unlink name a file that does not exist: the kernel checks the
 *    mount's read-only flag (mnt_want_write) before the last-component lookup,
 *    so EROFS means blocked and ENOENT means the write barrier was passed;
 *  - chmod/chown set the file's current mode/owner again;
 *  - create uses O_EXCL on a fresh name and removes it at once.
 * Targets: path= (default /usr/bin/true and /etc/passwd, whichever exist).
 */
#include "probe_common.h"

#include <sys/time.h>

static const char* g_target;
static char g_ghost[4200];

static long attempt(void* arg) {
  const char* op = (const char*)arg;
  struct stat st;
  if (stat(g_target, &st) != 0) return -1;
  if (strcmp(op, "write") == 0) return open(g_target, O_WRONLY | O_CLOEXEC);
  if (strcmp(op, "append") == 0) return open(g_target, O_WRONLY | O_APPEND | O_CLOEXEC);
  if (strcmp(op, "truncate") == 0) return truncate(g_target, st.st_size);
  if (strcmp(op, "chmod") == 0) return chmod(g_target, st.st_mode & 07777);
  if (strcmp(op, "chown") == 0) return chown(g_target, st.st_uid, st.st_gid);
  if (strcmp(op, "utimes") == 0) return utimes(g_target, NULL);
  if (strcmp(op, "unlink") == 0) {
    long r = unlink(g_ghost);
    return (r < 0 && errno == ENOENT) ? 0 : r;  /* ENOENT: got past EROFS */
  }
  if (strcmp(op, "rename") == 0) {
    char to[4300];
    snprintf(to, sizeof to, "%s.2", g_ghost);
    long r = rename(g_ghost, to);
    return (r < 0 && errno == ENOENT) ? 0 : r;
  }
  if (strcmp(op, "create") == 0) {
    int fd = open(g_ghost, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
      close(fd);
      unlink(g_ghost);
    }
    return fd;
  }
  errno = EINVAL;
  return -2;
}

int main(int argc, char** argv) {
  probe_init("readonly", argc, argv);
  const char* op = probe_op();
  const char* targets[] = {probe_arg("path"), "/usr/bin/true", "/etc/passwd"};
  int tried = 0;
  char report[2048] = "";
  for (size_t i = 0; i < sizeof targets / sizeof targets[0]; ++i) {
    if (!targets[i]) continue;
    if (i > 0 && probe_arg("path")) break;  /* an explicit path= replaces the defaults */
    struct stat st;
    if (stat(targets[i], &st) != 0) continue;
    g_target = targets[i];
    char dir[4000];
    snprintf(dir, sizeof dir, "%s", targets[i]);
    char* slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    snprintf(g_ghost, sizeof g_ghost, "%s/.cocoon-probe-%d-absent", dir[0] ? dir : "", getpid());
    struct probe_attempt_result r = probe_attempt(attempt, (void*)op);
    if (r.ran && r.ret == -2) PROBE_ERROR("unknown op=%s", op);
    ++tried;
    if (probe_succeeded(&r)) PROBE_ESCAPED("%s on %s succeeded", op, targets[i]);
    char why[256];
    size_t used = strlen(report);
    snprintf(report + used, sizeof report - used, "%s%s: %s", used ? "; " : "", targets[i],
             probe_describe_failure(&r, why, sizeof why));
  }
  if (!tried) PROBE_ERROR("no read-only target exists in the sandbox");
  PROBE_BLOCKED("%s", report);
}
