#!/usr/bin/env bash
# Makes an OCI bundle from a compiled config.json: an empty rootfs directory
# whose content comes from the read-only host binds the config already lists.
# OCI has no optional binds (the compiler warns), so the policy's `optional`
# mounts whose source is missing on this host are dropped here, as a deployer
# would for their machine; otherwise crun fails on the first one.
set -euo pipefail
config=$1
bundle=$2
mkdir -p "$bundle/rootfs"
python3 - "$config" "$bundle/config.json" <<'PY'
import json, os, sys
config = json.load(open(sys.argv[1]))
config["mounts"] = [m for m in config.get("mounts", [])
                    if "bind" not in m.get("options", []) and "rbind" not in m.get("options", [])
                    or os.path.exists(m.get("source", ""))]
config["root"] = {"path": "rootfs", "readonly": True}
config.setdefault("process", {})["args"] = ["/bin/true"]
config["process"]["terminal"] = False
json.dump(config, open(sys.argv[2], "w"), indent=2)
PY
