#!/usr/bin/env bash
# Runs sdk-client.test.mjs (the official MCP TypeScript SDK as the client of
# sly-agent-q-mcp) and ends with one summary line.  Installs the SDK into
# tests/mcp/node_modules first when it is not there (npm ci: the versions
# of package-lock.json).  Exit 77 ("skipped" for ctest) without node or npm.
#
#   bash tests/mcp/run-sdk-client.sh [BINARY [TEST-FILE]]
#     (defaults: build/sly-agent-q-mcp, sdk-client.test.mjs)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
binary=$(realpath "${1:-$here/../../build/sly-agent-q-mcp}")
test_file=${2:-sdk-client.test.mjs}

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "mcp sdk client: skipped (node or npm not found)"
  exit 77
fi
if [ ! -d "$here/node_modules/@modelcontextprotocol/sdk" ]; then
  npm ci --prefix "$here" --no-audit --no-fund || { echo "mcp sdk client: npm ci failed"; exit 1; }
fi

tap=$(mktemp)
trap 'rm -f "$tap"' EXIT
SLY_AGENT_Q_MCP="$binary" node --test --test-reporter=tap "$here/$test_file" | tee "$tap"
status=${PIPESTATUS[0]}
passed=$(sed -n 's/^# pass //p' "$tap")
failed=$(sed -n 's/^# fail //p' "$tap")
echo "mcp sdk client ($test_file): ${passed:-0} passed, ${failed:-?} failed"
exit "$status"
