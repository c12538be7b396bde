/* rss_meter CMD [ARG...]: runs CMD, waits for it, and appends
 *   RSS_METER maxrss_kib=<N>
 * to stderr, then exits with CMD's status (128+N if killed by signal N).
 *
 * Why a separate process: wait4(2)'s ru_maxrss for a child includes the
 * memory it had BEFORE execve (the kernel folds the old mm's high-water mark
 * into the process's maximum at exec), and a child forked from the test
 * binary starts out as a copy of it, tens of MiB after a flood test kept
 * cocoon's output. Forked from this small program instead, the figure is
 * cocoon's own peak. (It also covers what cocoon reaped; the sandboxed
 * command is measured separately by the Outcome.) Runs on the host, never
 * inside a sandbox. */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: rss_meter CMD [ARG...]\n");
    return 2;
  }
  pid_t pid = fork();
  if (pid < 0) {
    perror("rss_meter: fork");
    return 125;
  }
  if (pid == 0) {
    execv(argv[1], argv + 1);
    perror("rss_meter: execv");
    _exit(127);
  }
  int status = 0;
  struct rusage usage;
  if (wait4(pid, &status, 0, &usage) != pid) {
    perror("rss_meter: wait4");
    return 125;
  }
  fprintf(stderr, "RSS_METER maxrss_kib=%ld\n", usage.ru_maxrss);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}
