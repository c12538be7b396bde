/* Probe: read the caller's secrets from the environment. The harness plants
 * COCOON_CANARY=<secret> in cocoon's own environment; strict builds the
 * sandbox's environment only from the policy, so neither our environ nor any
 * /proc/<pid>/environ inside may contain it.
 */
#include "probe_common.h"

#include <dirent.h>

extern char** environ;

int main(int argc, char** argv) {
  probe_init("env_canary", argc, argv);
  for (char** e = environ; *e; ++e)
    if (strncmp(*e, "COCOON_CANARY", 13) == 0) PROBE_ESCAPED("environ holds %s", *e);
  DIR* d = opendir("/proc");
  int scanned = 0;
  if (d) {
    struct dirent* de;
    while ((de = readdir(d))) {
      if (de->d_name[0] < '0' || de->d_name[0] > '9') continue;
      char path[300], buf[65536];
      snprintf(path, sizeof path, "/proc/%s/environ", de->d_name);
      ssize_t n = probe_read_file(path, buf, sizeof buf);
      if (n < 0) continue;
      ++scanned;
      for (ssize_t i = 0; i + 13 <= n; ++i)
        if (memcmp(buf + i, "COCOON_CANARY", 13) == 0)
          PROBE_ESCAPED("/proc/%s/environ holds the canary", de->d_name);
    }
    closedir(d);
  }
  int count = 0;
  for (char** e = environ; *e; ++e) ++count;
  PROBE_BLOCKED("no canary in %d environ entries nor in %d /proc/*/environ files", count, scanned);
}
