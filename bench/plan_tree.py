"""The mount tree a compiled plan (linux.plan.json) describes, as the enforcer
builds it on this host, for the harnesses that rebuild it with other tools
(bench/floor_args.py for bench/isolation_floor, bench/bwrap_args.py for bwrap).

tree(plan) yields, in the plan's order:
  ("symlink", text, target)            merged-/usr binds become the host's
                                       symlink (enforcer/child_spec_builder.cc),
                                       and the plan's own symlinks
  ("ro-bind", source, target, optional)
  ("tmpfs", target, size_bytes)        tmpfs and the work dir
  ("proc", target)
  ("device", source, target)
  ("mask", target, optional)
  ("ro-self", target)                  a path (/proc/sys...) bound read-only
                                       over itself
"""
import json
import os
import sys


def load_plan(compiled_dir):
    with open(os.path.join(compiled_dir, "linux.plan.json")) as f:
        return json.load(f)


def tree(plan, tool):
    for m in plan.get("mounts", []):
        kind, target = m["kind"], m["target"]
        source = m.get("source", "")
        optional = bool(m.get("optional"))
        if kind == "bind-ro":
            link = os.readlink(source) if os.path.islink(source) else None
            if link is not None and not link.startswith("/"):
                yield ("symlink", link, target)  # /bin -> usr/bin
            elif os.path.exists(source) or not optional:
                yield ("ro-bind", source, target, optional)
        elif kind in ("tmpfs", "work"):
            yield ("tmpfs", target, int(m.get("size_bytes", 67108864)))
        elif kind == "proc":
            yield ("proc", target)
        elif kind == "device":
            yield ("device", source, target)
        elif kind == "symlink":
            yield ("symlink", source, target)
        elif kind == "mask":
            yield ("mask", target, optional)
        elif kind == "read-only":
            yield ("ro-self", target)
        else:
            sys.exit(f"{tool}: mount kind {kind!r} is not known here; update bench/plan_tree.py")
