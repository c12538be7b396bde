/* Probe: change NUMA memory placement (mbind, set_mempolicy,
 * set_mempolicy_home_node, migrate_pages, move_pages). Ordinary programs
 * never need these; their kernel code (mm/mempolicy.c, page migration) is a
 * recurring source of bugs, and moby's default profile grants the first
 * three only with CAP_SYS_NICE and the migration calls not at all. strict
 * denies them (EPERM). get_mempolicy, a read that libnuma's
 * numa_available() makes, stays allowed.
 * Each call is harmless when run unconfined (reset to the default policy,
 * query one page's node, migrate node 0 to node 0), so the self-test can
 * show the probe detects a call that reached the kernel. Any answer other
 * than EPERM reached the kernel, and is an escape.
 */
#include "probe_common.h"

#include <sys/mman.h>

#ifndef SYS_set_mempolicy_home_node
#define SYS_set_mempolicy_home_node 450  /* x86_64, since Linux 5.17 */
#endif

enum { kMpolDefault = 0 };

static void* g_page;

static long attempt(void* arg) {
  const char* call = arg;
  unsigned long node0 = 1;
  if (strcmp(call, "set_mempolicy") == 0) return syscall(SYS_set_mempolicy, kMpolDefault, NULL, 0);
  if (strcmp(call, "mbind") == 0) return syscall(SYS_mbind, g_page, 4096, kMpolDefault, NULL, 0, 0);
  if (strcmp(call, "set_mempolicy_home_node") == 0)
    return syscall(SYS_set_mempolicy_home_node, g_page, 4096, 0, 0);
  if (strcmp(call, "migrate_pages") == 0)
    return syscall(SYS_migrate_pages, 0, 8 * sizeof node0, &node0, &node0);
  void* pages[1] = {g_page};
  int status[1] = {0};
  return syscall(SYS_move_pages, 0, 1, pages, NULL, status, 0);
}

int main(int argc, char** argv) {
  probe_init("mempolicy", argc, argv);
  g_page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (g_page == MAP_FAILED) PROBE_ERROR("mmap: %s", strerror(errno));
  ((volatile char*)g_page)[0] = 1;  // fault it in, so move_pages has a node to report
  const char* calls[] = {"set_mempolicy", "mbind", "set_mempolicy_home_node", "migrate_pages", "move_pages"};
  char why[128];
  for (size_t i = 0; i < sizeof calls / sizeof calls[0]; ++i) {
    struct probe_attempt_result r = probe_attempt(attempt, (void*)calls[i]);
    if (!r.ran) PROBE_ERROR("%s: %s", calls[i], probe_describe_failure(&r, why, sizeof why));
    if (r.ret >= 0 || r.err != EPERM)
      PROBE_ESCAPED("%s reached the kernel: %s", calls[i], r.ret >= 0 ? "succeeded" : strerror(r.err));
  }
  PROBE_BLOCKED("set_mempolicy, mbind, set_mempolicy_home_node, migrate_pages, move_pages: EPERM");
}
