#!/usr/bin/env python3
"""Print bwrap's arguments for the tree a compiled plan (linux.plan.json) describes.

Issue 4 compares `cocoon enforce strict` with bwrap "with equivalent isolation
(--unshare-all --die-with-parent --new-session, the same read-only binds,
tmpfs /tmp, --proc, --dev)". This builds that command from the plan itself
(bench/plan_tree.py): its read-only binds, its tmpfs mounts with their sizes,
--proc, --dev (bwrap's own null/zero/full/random/urandom/tty, /dev/fd and
/dev/std* in place of the plan's device binds and links), the plan's
/dev/shm, its masked /proc paths (files: /dev/null bound over them;
directories: an empty read-only tmpfs, as crun and the enforcer do), the
hostname and the working directory. bwrap has no Landlock, cgroup or rlimit
options, and its seccomp filter needs an inherited fd, so those layers (which
the enforcer applies too) are left out: the comparison stays in bwrap's favour.
Usage: bwrap_args.py COMPILED_DIR  (prints one argument per line)
"""
import os
import sys

from plan_tree import load_plan, tree


def main():
    plan = load_plan(sys.argv[1])
    args = ["--unshare-all", "--die-with-parent", "--new-session"]
    dev_done = False
    for op in tree(plan, "bwrap_args.py"):
        kind = op[0]
        if kind == "device" or (kind == "symlink" and op[2].startswith("/dev/")):
            if not dev_done:
                args += ["--dev", "/dev"]
                dev_done = True
        elif kind == "symlink":
            args += ["--symlink", op[1], op[2]]
        elif kind == "ro-bind":
            args += ["--ro-bind-try" if op[3] else "--ro-bind", op[1], op[2]]
        elif kind == "tmpfs":
            args += ["--size", str(op[2]), "--tmpfs", op[1]]
        elif kind == "proc":
            args += ["--proc", op[1]]
        elif kind == "ro-self":
            # bwrap's own --proc binds /proc/irq and /proc/bus read-only over
            # themselves (seen in mountinfo, bwrap 0.8.0 here); /proc/sys
            # and /proc/fs stay writable under it, and a bind here would take
            # its source from the host's /proc. So bwrap makes two of the
            # plan's four read-only /proc binds: in bwrap's favour.
            pass
        elif kind == "mask":
            target = op[1]
            if os.path.isdir(target):
                args += ["--tmpfs", target, "--remount-ro", target]
            elif os.path.exists(target) or not op[2]:
                args += ["--ro-bind", "/dev/null", target]
    args += ["--hostname", plan.get("hostname") or "sandbox", "--chdir", plan.get("cwd") or "/"]
    print("\n".join(args))


if __name__ == "__main__":
    main()
