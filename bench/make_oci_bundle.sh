#!/usr/bin/env bash
# Makes an OCI bundle from a compiled config.json: an empty rootfs directory
# whose content comes from the read-only host binds the config already lists.
set -euo pipefail
config=$1
bundle=$2
mkdir -p "$bundle/rootfs"
python3 - "$config" "$bundle/config.json" <<'PY'
import json, sys
config = json.load(open(sys.argv[1]))
config["root"] = {"path": "rootfs", "readonly": True}
config.setdefault("process", {})["args"] = ["/bin/true"]
config["process"]["terminal"] = False
json.dump(config, open(sys.argv[2], "w"), indent=2)
PY
