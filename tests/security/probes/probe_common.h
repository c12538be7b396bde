/* Shared helpers for the escape probes in tests/security/probes/.
 *
 * Every probe is a small static C program that attempts ONE escape from
 * inside a Cocoon sandbox and prints exactly one machine-readable verdict
 * line, which the GoogleTest harness (security_probe_test.cc) parses:
 *
 *   PROBE <name> BLOCKED <how>      the escape failed; exit 0
 *   PROBE <name> PENDING <detail>   only the host can tell (the harness
 *                                   checks its side: a UDP datagram, a host
 *                                   process, the committed work dir); exit 0
 *   PROBE <name> ESCAPED <detail>   the escape worked; exit 3
 *   PROBE <name> ERROR <detail>     the probe could not make its attempt;
 *                                   exit 4 (the harness fails the test)
 *   PROBE <name> SKIP <reason>      a kernel feature the attempt needs is
 *                                   missing; exit 77 (harness GTEST_SKIPs)
 *
 * Arguments are key=value words. The harness always passes the host's
 * namespace ids (host_mnt=, host_pid=, host_net=, host_user=, inode numbers
 * of /proc/self/ns/<ns> on the host). A probe whose attempt would change the
 * host if it succeeded (mount, kill, ...) calls probe_require_sandbox() first
 * and refuses to attempt anything while it shares that namespace with the
 * host: a probe run by mistake outside a sandbox is then harmless.
 *
 * Dangerous attempts run in a forked child (probe_attempt) so that a seccomp
 * kill (SIGSYS) only ends the child and the parent still reports the verdict.
 */
#ifndef COCOON_TESTS_SECURITY_PROBES_PROBE_COMMON_H_
#define COCOON_TESTS_SECURITY_PROBES_PROBE_COMMON_H_

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

enum {
  kProbeExitBlocked = 0,
  kProbeExitEscaped = 3,
  kProbeExitError = 4,
  kProbeExitSkip = 77,
};

static char g_probe_name[128];
static int g_probe_argc;
static char** g_probe_argv;
static FILE* g_probe_stream;

/* Name printed in the verdict: "<base>" or "<base>:<op>" when op= is given. */
static inline void probe_init(const char* base, int argc, char** argv) {
  g_probe_argc = argc;
  g_probe_argv = argv;
  g_probe_stream = stdout;
  const char* op = NULL;
  for (int i = 1; i < argc; ++i)
    if (strncmp(argv[i], "op=", 3) == 0) op = argv[i] + 3;
  if (op)
    snprintf(g_probe_name, sizeof g_probe_name, "%s:%s", base, op);
  else
    snprintf(g_probe_name, sizeof g_probe_name, "%s", base);
}

/* Verdicts go to stdout unless a probe floods stdout itself. */
static inline void probe_verdict_to_stderr(void) { g_probe_stream = stderr; }

static inline const char* probe_arg(const char* key) {
  size_t n = strlen(key);
  for (int i = 1; i < g_probe_argc; ++i)
    if (strncmp(g_probe_argv[i], key, n) == 0 && g_probe_argv[i][n] == '=')
      return g_probe_argv[i] + n + 1;
  return NULL;
}

static inline long long probe_arg_ll(const char* key, long long fallback) {
  const char* v = probe_arg(key);
  return v ? strtoll(v, NULL, 0) : fallback;
}

static inline const char* probe_op(void) {
  const char* op = probe_arg("op");
  return op ? op : "";
}

__attribute__((format(printf, 3, 4), noreturn)) static inline void probe_verdict(
    const char* verdict, int code, const char* fmt, ...) {
  char detail[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  for (char* p = detail; *p; ++p)  // one line, always
    if (*p == '\n' || *p == '\r') *p = ' ';
  fflush(stdout);
  fprintf(g_probe_stream, "\nPROBE %s %s %s\n", g_probe_name, verdict, detail);
  fflush(g_probe_stream);
  _exit(code);
}

#define PROBE_BLOCKED(...) probe_verdict("BLOCKED", kProbeExitBlocked, __VA_ARGS__)
#define PROBE_PENDING(...) probe_verdict("PENDING", kProbeExitBlocked, __VA_ARGS__)
#define PROBE_ESCAPED(...) probe_verdict("ESCAPED", kProbeExitEscaped, __VA_ARGS__)
#define PROBE_ERROR(...) probe_verdict("ERROR", kProbeExitError, __VA_ARGS__)
#define PROBE_SKIP(...) probe_verdict("SKIP", kProbeExitSkip, __VA_ARGS__)

/* ------------------------------------------------------------------ guard */
enum { kNsMnt = 1, kNsPid = 2, kNsNet = 4, kNsUser = 8 };

static inline unsigned long long probe_ns_inode(const char* ns) {
  char path[64];
  snprintf(path, sizeof path, "/proc/self/ns/%s", ns);
  struct stat st;
  if (stat(path, &st) != 0) return 0;
  return (unsigned long long)st.st_ino;
}

/* Refuses to go on unless this process is in a namespace of its own for each
 * kind in `which`: the harness passes the host's ids, and if they match, the
 * sandbox did not isolate us and the attempt would hit the host. */
static inline void probe_require_sandbox(int which) {
  static const struct { int bit; const char* ns; const char* key; } kinds[] = {
      {kNsMnt, "mnt", "host_mnt"},
      {kNsPid, "pid", "host_pid"},
      {kNsNet, "net", "host_net"},
      {kNsUser, "user", "host_user"},
  };
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; ++i) {
    if (!(which & kinds[i].bit)) continue;
    const char* host = probe_arg(kinds[i].key);
    if (!host) PROBE_ERROR("refusing to run: %s= (host namespace id) not given", kinds[i].key);
    unsigned long long mine = probe_ns_inode(kinds[i].ns);
    if (mine == 0) {
      /* No /proc, or no nsfs: we cannot prove isolation, so do not attempt. */
      PROBE_ERROR("refusing to run: cannot stat /proc/self/ns/%s (errno %d)", kinds[i].ns, errno);
    }
    if (mine == strtoull(host, NULL, 0))
      PROBE_ESCAPED("runs in the host's %s namespace (inode %llu); attempt not made", kinds[i].ns,
                    mine);
  }
}

/* --------------------------------------------------------------- attempts */
struct probe_attempt_result {
  int ran;        /* the child reported back */
  long ret;       /* the function's return value */
  int err;        /* errno after it */
  int signaled;   /* the child died from a signal (SIGSYS: seccomp kill) */
  int sig;
  int exit_code;  /* when the child exited without reporting */
};

typedef long (*probe_attempt_fn)(void* arg);

/* Runs fn(arg) in a forked child and reports its result, or the signal that
 * killed it. The child exits right after, so namespace or credential changes
 * an attempt makes do not leak into the probe. */
static inline struct probe_attempt_result probe_attempt(probe_attempt_fn fn, void* arg) {
  struct probe_attempt_result r;
  memset(&r, 0, sizeof r);
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) PROBE_ERROR("pipe2: %s", strerror(errno));
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) PROBE_ERROR("fork: %s", strerror(errno));
  if (pid == 0) {
    close(p[0]);
    errno = 0;
    long buf[2];
    buf[0] = fn(arg);
    buf[1] = errno;
    if (write(p[1], buf, sizeof buf) != (ssize_t)sizeof buf) _exit(98);
    _exit(0);
  }
  close(p[1]);
  long buf[2];
  ssize_t got = 0;
  while (got < (ssize_t)sizeof buf) {
    ssize_t n = read(p[0], (char*)buf + got, sizeof buf - (size_t)got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += n;
  }
  close(p[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (got == (ssize_t)sizeof buf) {
    r.ran = 1;
    r.ret = buf[0];
    r.err = (int)buf[1];
  }
  if (WIFSIGNALED(status)) {
    r.signaled = 1;
    r.sig = WTERMSIG(status);
  } else if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  }
  return r;
}

/* "SIGSYS (seccomp kill)", "errno EPERM", ... for a failed attempt. */
static inline const char* probe_describe_failure(const struct probe_attempt_result* r, char* buf,
                                                 size_t len) {
  if (r->signaled)
    snprintf(buf, len, "killed by signal %d (%s)%s", r->sig, strsignal(r->sig),
             r->sig == SIGSYS ? " -- seccomp kill" : "");
  else if (!r->ran)
    snprintf(buf, len, "child exited %d without reporting", r->exit_code);
  else
    snprintf(buf, len, "ret %ld errno %d (%s)", r->ret, r->err, strerrorname_np(r->err) ? strerrorname_np(r->err) : "?");
  return buf;
}

/* Reads a whole small file into buf (NUL-terminated); returns its length or -1. */
static inline ssize_t probe_read_file(const char* path, char* buf, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t got = 0;
  while (got + 1 < len) {
    ssize_t n = read(fd, buf + got, len - 1 - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  close(fd);
  buf[got] = '\0';
  return (ssize_t)got;
}

/* A syscall attempt "succeeded" when it returned >= 0 in a live child. */
static inline int probe_succeeded(const struct probe_attempt_result* r) {
  return r->ran && r->ret >= 0;
}

#endif /* COCOON_TESTS_SECURITY_PROBES_PROBE_COMMON_H_ */
