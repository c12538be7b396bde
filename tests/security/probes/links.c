/* Probe: leave escaping entries in the work dir for the host to trip over
 * after the run. Creates, under /work (dir=):
 *   ok.txt                       an ordinary file (must be committed)
 *   inside_link -> ok.txt        a symlink that stays inside (allowed)
 *   abs_passwd -> /etc/passwd    an absolute symlink out
 *   sub/dotdot -> ../../../../../../etc/shadow   a ../ chain climbing out
 *   sub/up -> ..                 stays inside (allowed)
 *   sub/esc_dir -> ../..         climbs one level above the work dir
 *   hard_passwd                  a hardlink to /etc/passwd (EXDEV expected)
 *   fifo, sock                   a FIFO and a unix socket
 *   suid_file, sgid_file         files with the setuid / setgid bit
 *   dev_null                     a char device node (mknod; EPERM expected)
 * The probe reports PENDING with what it managed to create; the harness
 * checks that none of the escaping entries reached the host work dir and that
 * the Outcome lists them.
 */
#include "probe_common.h"

#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

static char g_report[2048];

static void note(const char* what, int rc) {
  size_t used = strlen(g_report);
  snprintf(g_report + used, sizeof g_report - used, "%s%s=%s", used ? " " : "", what,
           rc == 0 ? "ok" : strerrorname_np(errno));
}

int main(int argc, char** argv) {
  probe_init("links", argc, argv);
  const char* dir = probe_arg("dir");
  if (!dir) dir = "/work";
  if (chdir(dir) != 0) PROBE_ERROR("chdir %s: %s", dir, strerror(errno));
  int fd = open("ok.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, "ok\n", 3) != 3) PROBE_ERROR("cannot write ok.txt: %s", strerror(errno));
  close(fd);
  mkdir("sub", 0755);
  note("inside_link", symlink("ok.txt", "inside_link"));
  note("abs_passwd", symlink("/etc/passwd", "abs_passwd"));
  note("sub/dotdot", symlink("../../../../../../etc/shadow", "sub/dotdot"));
  note("sub/up", symlink("..", "sub/up"));
  note("sub/esc_dir", symlink("../..", "sub/esc_dir"));
  note("hard_passwd", link("/etc/passwd", "hard_passwd"));
  note("fifo", mkfifo("fifo", 0644));
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  snprintf(addr.sun_path, sizeof addr.sun_path, "sock");
  note("sock", s < 0 ? -1 : bind(s, (struct sockaddr*)&addr, sizeof addr));
  fd = open("suid_file", O_WRONLY | O_CREAT | O_TRUNC, 0755);
  if (fd >= 0) close(fd);
  note("suid_file", fchmodat(AT_FDCWD, "suid_file", 04755, 0));
  fd = open("sgid_file", O_WRONLY | O_CREAT | O_TRUNC, 0755);
  if (fd >= 0) close(fd);
  note("sgid_file", fchmodat(AT_FDCWD, "sgid_file", 02755, 0));
  note("dev_null", mknod("dev_null", S_IFCHR | 0666, makedev(1, 3)));
  PROBE_PENDING("%s", g_report);
}
