#!/usr/bin/env python3
"""Print isolation_floor's arguments for a compiled plan (linux.plan.json).

The same mounts in the same order as the enforcer builds them
(bench/plan_tree.py), the compiled seccomp program, and strict's v1 cgroup
limits, so that bench/isolation_floor builds the tree `cocoon enforce` builds.
Usage: floor_args.py COMPILED_DIR  (prints one argument per line)
"""
import os
import sys

from plan_tree import load_plan, tree


def main():
    compiled = sys.argv[1]
    plan = load_plan(compiled)
    args = []
    for op in tree(plan, "floor_args.py"):
        kind = op[0]
        if kind == "symlink":
            args += ["--symlink", op[1], op[2]]
        elif kind == "ro-bind":
            args += ["--ro-bind-try" if op[3] else "--ro-bind", op[1], op[2]]
        elif kind == "tmpfs":
            args += ["--tmpfs", op[1], str(op[2])]
        elif kind == "proc":
            args += ["--proc", op[1]]
        elif kind == "device":
            args += ["--dev-bind", op[1], op[2]]
        elif kind == "mask":
            args += ["--mask", op[1]]
        elif kind == "ro-self":
            args += ["--ro-self", op[1]]
    limits = {l["name"]: l["value"] for l in plan.get("limits", [])}
    if "memory" in limits and "processes" in limits:
        # cpu N% over the kernel's 100 ms CFS period, as enforcer/limits does.
        quota = int(limits.get("cpu", 100)) * 1000
        args += ["--cgroups-v1", str(limits["memory"]), str(limits["processes"]), str(quota)]
    flag = {"read-exec": "--landlock-ro", "read-write": "--landlock-rw", "device": "--landlock-dev"}
    for rule in plan.get("landlock", []):
        args += [flag[rule["access"]], rule["path"]]
    args += ["--seccomp", os.path.join(compiled, "linux.seccomp.bpf")]
    args += ["--hostname", plan.get("hostname") or "sandbox", "--chdir", plan.get("cwd") or "/"]
    print("\n".join(args))


if __name__ == "__main__":
    main()
