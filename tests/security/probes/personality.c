/* Probe: personality(2). The safe personas must work and every other one
 * must be refused (or not applied), under any policy:
 *  - safe: the 0xffffffff query (glibc and programs such as setarch read the
 *    current persona with it), PER_LINUX, PER_LINUX32, UNAME26 and
 *    PER_LINUX32|UNAME26, also with upper bits set in the register (the
 *    kernel reads an unsigned int). One refused: ERROR (the sandbox broke
 *    what ordinary programs need).
 *  - unsafe: READ_IMPLIES_EXEC (every readable mapping executable),
 *    ADDR_NO_RANDOMIZE (no ASLR), ADDR_COMPAT_LAYOUT, those next to a safe
 *    persona or under upper bits, and all-but-one-bit values next to the
 *    query. One applied: ESCAPED.
 * Each attempt runs in a forked child, so a persona it sets never outlives it.
 * The raw syscall is used: glibc's wrapper truncates the argument to 32 bits
 * and hides a seccomp errno.
 */
#include "probe_common.h"

#include <sys/personality.h>

static long set_and_read_back(void* arg) {
  const unsigned long persona = *(const unsigned long*)arg;
  long r = syscall(SYS_personality, persona);
  if (r < 0) return r;
  if ((unsigned int)persona == 0xffffffffu) return 0; /* the query */
  long now = syscall(SYS_personality, 0xffffffffUL);
  if (now < 0) return now;
  return (unsigned int)now == (unsigned int)persona ? 0 : -3; /* -3: accepted but not applied */
}

int main(int argc, char** argv) {
  probe_init("personality", argc, argv);
  static const unsigned long safe[] = {
      0xffffffffUL,         0xffffffffffffffffUL,       0x1ffffffffUL,
      PER_LINUX,            PER_LINUX32,                UNAME26,
      PER_LINUX32 | UNAME26, 0x100000000UL | PER_LINUX32,
  };
  static const unsigned long unsafe[] = {
      READ_IMPLIES_EXEC,  ADDR_NO_RANDOMIZE,         ADDR_COMPAT_LAYOUT,
      PER_LINUX32 | READ_IMPLIES_EXEC, UNAME26 | ADDR_NO_RANDOMIZE, 0x100000000UL | READ_IMPLIES_EXEC,
      0xfffffffeUL,       0xfffffff7UL /* all but PER_LINUX32's bit */, 0x7fffffffUL,
  };
  char why[256];
  for (size_t i = 0; i < sizeof safe / sizeof safe[0]; ++i) {
    struct probe_attempt_result r = probe_attempt(set_and_read_back, (void*)&safe[i]);
    if (!probe_succeeded(&r))
      PROBE_ERROR("personality(0x%lx), a safe persona, was refused: %s", safe[i],
                  probe_describe_failure(&r, why, sizeof why));
  }
  char refused[1024] = "";
  for (size_t i = 0; i < sizeof unsafe / sizeof unsafe[0]; ++i) {
    struct probe_attempt_result r = probe_attempt(set_and_read_back, (void*)&unsafe[i]);
    if (probe_succeeded(&r)) PROBE_ESCAPED("personality(0x%lx) was applied", unsafe[i]);
    size_t used = strlen(refused);
    snprintf(refused + used, sizeof refused - used, "%s0x%lx: %s", used ? "; " : "", unsafe[i],
             probe_describe_failure(&r, why, sizeof why));
  }
  PROBE_BLOCKED("safe personas and the query work; refused %s", refused);
}
