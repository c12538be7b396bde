/* Probe: are the sandbox's namespaces owned by the user namespace the
 * command runs in? If they are, a capability the command regained in its
 * own user namespace (a kernel bug, a flaw in the capability drop) would be
 * enough to umount the masks, remount a read-only bind writable or
 * reconfigure the network. Cocoon runs the command in a nested user
 * namespace (enforcer/nested_userns.cc) that owns none of them, and which
 * maps only the sandbox's own uid and gid (as root, host root is mapped in
 * the outer one while the mount tree is built).
 *
 * Evidence: ioctl(NS_GET_USERNS) on /proc/self/ns/<ns> gives the owning
 * user namespace only when it is the caller's own or a descendant of it;
 * an owner above the caller's gives EPERM. NS_GET_NSTYPE on the same fd
 * first shows that these ioctls reach the kernel at all (a filter refusing
 * them would otherwise look like the EPERM we want).
 */
#include "probe_common.h"

#include <linux/nsfs.h>
#include <sched.h>
#include <sys/ioctl.h>

/* Number of ids a /proc/self/{uid,gid}_map maps; -1 when unreadable. */
static long mapped_ids(const char* path, char* text, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, text, size - 1);
  close(fd);
  if (n < 0) return -1;
  text[n] = '\0';
  long total = 0;
  for (char* line = text; *line;) {
    unsigned long inside, outside, count;
    if (sscanf(line, "%lu %lu %lu", &inside, &outside, &count) == 3) total += (long)count;
    char* next = strchr(line, '\n');
    if (!next) break;
    line = next + 1;
  }
  return total;
}

int main(int argc, char** argv) {
  probe_init("ns_owner", argc, argv);
  struct stat own;
  if (stat("/proc/self/ns/user", &own) != 0) PROBE_ERROR("stat /proc/self/ns/user: %s", strerror(errno));

  static const struct { const char* name; int type; } kNs[] = {
      {"mnt", CLONE_NEWNS}, {"net", CLONE_NEWNET}, {"uts", CLONE_NEWUTS},
      {"ipc", CLONE_NEWIPC}, {"pid", CLONE_NEWPID}, {"cgroup", CLONE_NEWCGROUP}};
  char report[1024] = "";
  for (size_t i = 0; i < sizeof kNs / sizeof kNs[0]; ++i) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/ns/%s", kNs[i].name);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) PROBE_ERROR("open %s: %s", path, strerror(errno));
    int type = ioctl(fd, NS_GET_NSTYPE);
    if (type != kNs[i].type) PROBE_ERROR("NS_GET_NSTYPE on %s gave %d (%s): the check cannot be made", path, type,
                                         type < 0 ? strerror(errno) : "wrong type");
    int owner = ioctl(fd, NS_GET_USERNS);
    int err = errno;
    close(fd);
    if (owner >= 0) {
      struct stat st;
      int same = fstat(owner, &st) == 0 && st.st_dev == own.st_dev && st.st_ino == own.st_ino;
      close(owner);
      PROBE_ESCAPED("the %s namespace is owned by %s user namespace", kNs[i].name,
                    same ? "the command's own" : "a descendant of the command's");
    }
    if (err != EPERM) PROBE_ERROR("NS_GET_USERNS on %s: %s (expected EPERM)", path, strerror(err));
    size_t used = strlen(report);
    snprintf(report + used, sizeof report - used, "%s%s", used ? "," : "", kNs[i].name);
  }

  char text[512];
  long uids = mapped_ids("/proc/self/uid_map", text, sizeof text);
  if (uids != 1) PROBE_ESCAPED("the command's user namespace maps %ld uids: %s", uids, text);
  long gids = mapped_ids("/proc/self/gid_map", text, sizeof text);
  if (gids != 1) PROBE_ESCAPED("the command's user namespace maps %ld gids: %s", gids, text);
  PROBE_BLOCKED("%s owned above the command's user namespace (NS_GET_USERNS: EPERM); one uid and one gid mapped",
                report);
}
