#!/usr/bin/env bash
# ctest wrapper: installs the pinned SDK (package-lock.json) when missing, then
# runs the end-to-end and raw-protocol tests against the given cocoon binary.
#   tests/mcp-client/run.sh BUILD/cli/cocoon
set -euo pipefail
cd "$(dirname "$0")"
if [[ ! -d node_modules/@modelcontextprotocol/sdk ]]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
COCOON=$(realpath "$1") exec node --test --test-concurrency=1 e2e.test.mjs raw.test.mjs
