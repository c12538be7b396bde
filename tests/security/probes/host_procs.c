/* Probe: see host processes. Asserts that /proc lists only sandbox pids:
 *  - the host's marker process (pid target=, a `sleep` the harness runs) is
 *    not visible, and no /proc/N/cmdline holds the harness's marker=;
 *  - /proc/1 is the sandbox's own init: its start time (field 22 of
 *    /proc/1/stat) differs from the host init's (host_init_start=);
 *  - fewer than 32 processes are visible.
 */
#include "probe_common.h"

#include <dirent.h>

static unsigned long long start_time(const char* stat_path) {
  char buf[1024];
  if (probe_read_file(stat_path, buf, sizeof buf) < 0) return 0;
  const char* p = strrchr(buf, ')');  /* comm may contain spaces */
  if (!p) return 0;
  int field = 2;
  for (; *p && field < 22; ++p)
    if (*p == ' ') ++field;
  return strtoull(p, NULL, 10);
}

int main(int argc, char** argv) {
  probe_init("host_procs", argc, argv);
  const char* marker = probe_arg("marker");
  long long target = probe_arg_ll("target", 0);
  unsigned long long host_init = (unsigned long long)probe_arg_ll("host_init_start", 0);
  if (!marker || target <= 0 || host_init == 0) PROBE_ERROR("marker=, target=, host_init_start= required");
  DIR* d = opendir("/proc");
  if (!d) PROBE_BLOCKED("/proc is not mounted (%s)", strerrorname_np(errno));
  int count = 0;
  struct dirent* e;
  char pids[512] = "";
  while ((e = readdir(d))) {
    char* end;
    long pid = strtol(e->d_name, &end, 10);
    if (*end || pid <= 0) continue;
    ++count;
    size_t used = strlen(pids);
    if (used < sizeof pids - 16) snprintf(pids + used, sizeof pids - used, "%s%ld", used ? "," : "", pid);
    char path[64], cmd[4096];
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    ssize_t n = probe_read_file(path, cmd, sizeof cmd);
    for (ssize_t i = 0; i < n; ++i)
      if (cmd[i] == '\0') cmd[i] = ' ';
    if (n > 0 && strstr(cmd, marker) && !strstr(cmd, "marker="))
      PROBE_ESCAPED("host process %ld with the marker is visible: %s", pid, cmd);
  }
  closedir(d);
  char path[64];
  snprintf(path, sizeof path, "/proc/%lld", target);
  struct stat st;
  if (stat(path, &st) == 0) {
    char comm[64] = "";
    snprintf(path, sizeof path, "/proc/%lld/comm", target);
    probe_read_file(path, comm, sizeof comm);
    if (strncmp(comm, "sleep", 5) == 0) PROBE_ESCAPED("host pid %lld (sleep) is visible", target);
  }
  unsigned long long init = start_time("/proc/1/stat");
  if (init == 0) PROBE_ERROR("cannot read /proc/1/stat");
  if (init == host_init) PROBE_ESCAPED("/proc/1 is the host's init (start time %llu)", init);
  if (count >= 32) PROBE_ESCAPED("%d processes visible: %s", count, pids);
  PROBE_BLOCKED("%d sandbox pids visible (%s); /proc/1 start %llu != host %llu", count, pids, init, host_init);
}
