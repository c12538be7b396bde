/* Probe: gain privileges through a setuid-root binary. The harness copies this
 * very program into the work dir as a setuid-root file (--copy helper); the
 * probe execs it with mode=child and compares the child's effective uid and
 * capability sets with its own. no_new_privs, the nosuid mounts, and dropped
 * capabilities must each keep the exec from gaining anything. It also reports
 * how the host's setuid programs (su, passwd, mount) are neutralised.
 */
#include "probe_common.h"

#include <sys/prctl.h>
#include <sys/statvfs.h>

static void read_caps(char* out, size_t len) {
  char buf[4096];
  out[0] = '\0';
  if (probe_read_file("/proc/self/status", buf, sizeof buf) < 0) return;
  const char* p = strstr(buf, "CapEff:");
  if (p) snprintf(out, len, "%.*s", 23, p + 7 + strspn(p + 7, " \t"));
  char* nl = strchr(out, '\n');
  if (nl) *nl = '\0';
}

int main(int argc, char** argv) {
  probe_init("setuid", argc, argv);
  const char* mode = probe_arg("mode");
  if (mode && strcmp(mode, "child") == 0) {
    char caps[64];
    read_caps(caps, sizeof caps);
    printf("CHILD euid=%d ruid=%d capeff=%s\n", (int)geteuid(), (int)getuid(), caps);
    return 0;
  }
  const char* helper = probe_arg("helper");
  if (!helper) helper = "/work/suid_helper";
  struct stat st;
  if (stat(helper, &st) != 0) PROBE_ERROR("helper %s missing: %s", helper, strerror(errno));
  char mycaps[64];
  read_caps(mycaps, sizeof mycaps);
  int nnp = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
  if (strtoull(mycaps, NULL, 16) != 0) PROBE_ESCAPED("the sandboxed process holds capabilities %s", mycaps);
  int p[2];
  if (pipe(p) != 0) PROBE_ERROR("pipe: %s", strerror(errno));
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 1);
    execl(helper, helper, "mode=child", (char*)NULL);
    printf("EXECFAIL %s\n", strerrorname_np(errno));
    _exit(5);
  }
  close(p[1]);
  char out[256] = "";
  ssize_t n = read(p[0], out, sizeof out - 1);
  out[n > 0 ? n : 0] = '\0';
  waitpid(pid, NULL, 0);
  char* nl = strchr(out, '\n');
  if (nl) *nl = '\0';
  int child_euid = -1;
  char child_caps[64] = "";
  const char* e = strstr(out, "euid=");
  const char* c = strstr(out, "capeff=");
  if (e) child_euid = atoi(e + 5);
  if (c) snprintf(child_caps, sizeof child_caps, "%s", c + 7);
  char hosts[256] = "";
  const char* suid_bins[] = {"/usr/bin/su", "/usr/bin/passwd", "/usr/bin/mount"};
  for (size_t i = 0; i < 3; ++i) {
    struct stat hs;
    struct statvfs vs;
    if (stat(suid_bins[i], &hs) != 0 || !(hs.st_mode & S_ISUID)) continue;
    int nosuid = statvfs(suid_bins[i], &vs) == 0 && (vs.f_flag & ST_NOSUID);
    size_t used = strlen(hosts);
    snprintf(hosts + used, sizeof hosts - used, " %s:%s", suid_bins[i], nosuid ? "nosuid" : "suid-mount");
    if (!nosuid && nnp != 1) PROBE_ESCAPED("%s is setuid on a suid mount and no_new_privs is off", suid_bins[i]);
  }
  if (strncmp(out, "CHILD", 5) != 0)
    PROBE_BLOCKED("helper (mode %o) did not run: %s; nnp=%d;%s", (unsigned)st.st_mode, out, nnp, hosts);
  if (child_euid != (int)geteuid() || strtoull(child_caps, NULL, 16) != 0)
    PROBE_ESCAPED("exec of setuid helper (mode %o) changed euid %d -> %d, caps %s", (unsigned)st.st_mode,
                  (int)geteuid(), child_euid, child_caps);
  PROBE_BLOCKED("helper mode %o ran with euid %d (unchanged) caps %s; nnp=%d;%s", (unsigned)st.st_mode,
                child_euid, child_caps, nnp, hosts);
}
