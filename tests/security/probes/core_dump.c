/* Probe: write a core dump (a crash of a process holding secrets, or a
 * core_pattern pipe handler running on the host). RLIMIT_CORE must be 0 and
 * not raisable; a child that raises SIGSEGV must not dump core (no
 * WCOREDUMP, no core file in its cwd, which is the work dir).
 */
#include "probe_common.h"

#include <dirent.h>
#include <sys/resource.h>

static int core_files(const char* dir) {
  DIR* d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  struct dirent* e;
  while ((e = readdir(d)))
    if (strncmp(e->d_name, "core", 4) == 0) ++n;
  closedir(d);
  return n;
}

int main(int argc, char** argv) {
  probe_init("core_dump", argc, argv);
  struct rlimit rl;
  if (getrlimit(RLIMIT_CORE, &rl) != 0) PROBE_ERROR("getrlimit: %s", strerror(errno));
  if (rl.rlim_cur != 0) PROBE_ESCAPED("RLIMIT_CORE soft limit is %llu", (unsigned long long)rl.rlim_cur);
  struct rlimit raise_to = {rl.rlim_max, rl.rlim_max};
  if (rl.rlim_max != 0 && setrlimit(RLIMIT_CORE, &raise_to) == 0)
    PROBE_ESCAPED("RLIMIT_CORE raised to its hard limit %llu", (unsigned long long)rl.rlim_max);
  struct rlimit unlimited = {RLIM_INFINITY, RLIM_INFINITY};
  int raised = setrlimit(RLIMIT_CORE, &unlimited) == 0;
  char cwd[512] = ".";
  if (!getcwd(cwd, sizeof cwd)) snprintf(cwd, sizeof cwd, ".");
  const char* dir = access("/work", W_OK) == 0 ? "/work" : cwd;
  int before = core_files(dir);
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    if (chdir(dir) != 0) _exit(2);
    signal(SIGSEGV, SIG_DFL);
    raise(SIGSEGV);
    _exit(3);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  int after = core_files(dir);
  if (raised) PROBE_ESCAPED("RLIMIT_CORE raised to unlimited");
  if (WIFSIGNALED(status) && WCOREDUMP(status)) PROBE_ESCAPED("the child dumped core (WCOREDUMP)");
  if (after > before) PROBE_ESCAPED("a core file appeared in %s", dir);
  PROBE_BLOCKED("RLIMIT_CORE 0/%llu, not raisable; SIGSEGV child: %s, no core in %s",
                (unsigned long long)rl.rlim_max,
                WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "exited", dir);
}
