#!/usr/bin/env python3
"""Print isolation_floor's arguments for a compiled plan (linux.plan.json).

The same mounts in the same order as the enforcer builds them (merged-/usr
binds become the host's symlinks, as in enforcer/child_spec_builder.cc), the
compiled seccomp program, and strict's v1 cgroup limits, so that
bench/isolation_floor builds the tree `cocoon enforce` builds.
Usage: floor_args.py COMPILED_DIR  (prints one argument per line)
"""
import json
import os
import sys


def main():
    compiled = sys.argv[1]
    plan = json.load(open(os.path.join(compiled, "linux.plan.json")))
    args = []
    for m in plan.get("mounts", []):
        kind, target = m["kind"], m["target"]
        source = m.get("source", "")
        if kind == "bind-ro":
            link = os.readlink(source) if os.path.islink(source) else None
            if link is not None and not link.startswith("/"):
                args += ["--symlink", link, target]  # /bin -> usr/bin
            elif os.path.exists(source) or not m.get("optional"):
                args += ["--ro-bind-try" if m.get("optional") else "--ro-bind", source, target]
        elif kind in ("tmpfs", "work"):
            args += ["--tmpfs", target, str(m.get("size_bytes", 67108864))]
        elif kind == "proc":
            args += ["--proc", target]
        elif kind == "device":
            args += ["--dev-bind", source, target]
        elif kind == "symlink":
            args += ["--symlink", source, target]
        elif kind == "mask":
            args += ["--mask", target]
        else:
            sys.exit(f"floor_args.py: mount kind {kind!r} is not known here; update bench/floor_args.py")
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
