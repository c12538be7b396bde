// The kernel interfaces every sandbox hides or makes read-only, whatever the
// policy says: runc/crun's defaults (runtime-spec config-linux.md
// "maskedPaths" and "readonlyPaths", libcontainer/specconv/example.go). One
// list for both back ends, so that `cocoon enforce` and the OCI config a
// user takes to runc agree.
#ifndef COCOON_COMPILER_BACKENDS_DEFAULT_KERNEL_PATHS_H_
#define COCOON_COMPILER_BACKENDS_DEFAULT_KERNEL_PATHS_H_

#include <string_view>

namespace cocoon::backends {

// Kernel state a sandbox has no business reading (keys of other users,
// physical memory, timers that leak other processes' activity). The /sys
// entries matter when a policy binds the host's /sys.
inline constexpr std::string_view kDefaultMaskedPaths[] = {
    "/proc/acpi",       "/proc/asound",     "/proc/kcore",         "/proc/keys",
    "/proc/latency_stats", "/proc/sched_debug", "/proc/scsi",      "/proc/timer_list",
    "/proc/timer_stats", "/sys/firmware",   "/sys/devices/virtual/powercap",
};

// Kernel knobs a sandbox may read but never write: the sandbox's root owns
// its own namespaces' sysctls (net.*, kernel.shm*, fs.mqueue.*), so file
// permissions alone would let it write them; without Landlock nothing else
// would stop it.
inline constexpr std::string_view kDefaultReadOnlyPaths[] = {
    "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
};

}  // namespace cocoon::backends

#endif  // COCOON_COMPILER_BACKENDS_DEFAULT_KERNEL_PATHS_H_
