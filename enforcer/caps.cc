// Child side: giving up every privilege before exec (issue 4, step 5).
//
// Order matters:
//  1. BecomeSandboxUser, in the sandbox's first user namespace, which owns
//     every other namespace: supplementary groups dropped (only where
//     setgroups is allowed, i.e. we were root and wrote the gid map
//     ourselves), then gid, then uid. The nested user namespace
//     (nested_userns.cc) can only be made, and only map the sandbox's ids,
//     once those are its effective ids.
//  2. EnterNestedUserNamespace (nested_userns.cc), which hands us every
//     capability of the new namespace and resets securebits: so everything
//     below comes after it.
//  3. DropPrivileges: securebits first, while we still hold CAP_SETPCAP:
//     NOROOT so uid 0 inside never regains capabilities on execve,
//     NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE, all with their *_LOCKED bits so
//     the sandbox cannot undo them (capabilities(7) "The securebits flags").
//  4. The bounding set, emptied cap by cap (PR_CAPBSET_DROP needs
//     CAP_SETPCAP, so it must come before capset). Caps the kernel does not
//     know give EINVAL: that is the end of the list.
//  5. The ambient set cleared.
//  6. capset with every set empty: effective, permitted, inheritable.
//  7. PR_SET_NO_NEW_PRIVS: execve can never add privileges (setuid bits,
//     file capabilities); also what Landlock and unprivileged seccomp need.
#include <linux/capability.h>
#include <linux/securebits.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <grp.h>
#include <unistd.h>

#include <cerrno>

#include "enforcer/child_steps.h"

namespace cocoon::enforcer::child {

bool BecomeSandboxUser(const ChildSpec& spec, ChildError* error) noexcept {
  if (spec.drop_supplementary_groups &&
      !Succeeded(sys::Call(SYS_setgroups, 0, nullptr), error, ChildStep::kSetgroups)) {
    return false;
  }
  // Raw syscalls also because glibc's set*id wrappers broadcast to all
  // threads with signals (nptl setxid), which is neither needed nor safe
  // after clone.
  if (!Succeeded(sys::Call(SYS_setresgid, spec.gid, spec.gid, spec.gid), error, ChildStep::kSetgid) ||
      !Succeeded(sys::Call(SYS_setresuid, spec.uid, spec.uid, spec.uid), error, ChildStep::kSetuid)) {
    return false;
  }
  // As root the id change (host 0 -> 65534) made us non-dumpable
  // (commit_creds sets fs.suid_dumpable, 0 on Debian), and the files of a
  // non-dumpable /proc/self belong to root: the nested namespace, where
  // root is not mapped, could not write its own maps. Dumpable again is
  // what execve gives the command anyway (NNP, unchanged credentials), and
  // a process of another user namespace still cannot ptrace us: commoncap
  // wants CAP_SYS_PTRACE over our namespace, which only cocoon holds. (Such
  // a child has its own memory: memory_sharing_clone.h. One that shares
  // cocoon's keeps cocoon's ids, so for it this changes nothing.)
  return Succeeded(sys::Call(SYS_prctl, PR_SET_DUMPABLE, 1, 0, 0, 0), error, ChildStep::kDumpable);
}

bool DropPrivileges(const ChildSpec& spec, ChildError* error) noexcept {
  constexpr unsigned long kSecurebits =
      SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP | SECBIT_NO_SETUID_FIXUP_LOCKED |
      SECBIT_KEEP_CAPS_LOCKED | SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
  if (!Succeeded(sys::Call(SYS_prctl, PR_SET_SECUREBITS, kSecurebits, 0, 0, 0), error, ChildStep::kSecurebits)) {
    return false;
  }
  for (int cap = 0; cap <= 63; ++cap) {
    long rc = sys::Call(SYS_prctl, PR_CAPBSET_DROP, cap, 0, 0, 0);
    if (rc == -EINVAL) break;  // past the kernel's last capability
    if (!Succeeded(rc, error, ChildStep::kCapBoundingSet, cap)) return false;
  }
  if (!Succeeded(sys::Call(SYS_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), error, ChildStep::kCapAmbient)) {
    return false;
  }
  struct __user_cap_header_struct header {};
  header.version = _LINUX_CAPABILITY_VERSION_3;
  header.pid = 0;
  struct __user_cap_data_struct data[2] {};
  return Succeeded(sys::Call(SYS_capset, &header, data), error, ChildStep::kCapset) &&
         Succeeded(sys::Call(SYS_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), error, ChildStep::kNoNewPrivs);
}

}  // namespace cocoon::enforcer::child
