#!/bin/sh
# The sandbox child may run in the launcher's memory and share its thread's
# TLS until execve (enforcer/memory_sharing_clone.h), so the files that hold
# only child code may call no libc function that can write errno, take a
# lock or allocate: every kernel call is a raw one (enforcer/raw_syscall.h).
# This checks their objects' undefined symbols: our own code (cocoon::...)
# and the pure memory/string functions, nothing else.
# Usage: child_code_symbols.sh "OBJ;OBJ;..." ["OBJ;..."]
set -eu
allowed='^(_ZN6cocoon.*|strlen|memcpy|memmove|memset|__stack_chk_fail)$'
child_only='child_main.cc.o mounts.cc.o caps.cc.o nested_userns.cc.o net.cc.o work_mount_child.cc.o rlimits.cc.o fd_passing_child.cc.o'
checked=0
status=0
for list in "$@"; do
  old_ifs=$IFS
  IFS=';'
  set -f
  for obj in $list; do
    IFS=$old_ifs
    name=$(basename "$obj")
    case " $child_only " in *" $name "*) ;; *) continue ;; esac
    checked=$((checked + 1))
    outside=$(nm -u "$obj" | awk '{print $NF}' | grep -v -E "$allowed" || true)
    if [ -n "$outside" ]; then
      echo "FAIL: $name (sandbox child code) references: $(echo $outside)"
      echo "      call the kernel through enforcer/raw_syscall.h instead"
      status=1
    else
      echo "ok: $name"
    fi
  done
  IFS=$old_ifs
  set +f
done
if [ "$checked" -ne 8 ]; then
  echo "FAIL: found $checked of the 8 child-only objects ($child_only); update this list"
  exit 1
fi
exit $status
