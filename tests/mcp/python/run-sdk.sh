#!/usr/bin/env bash
# Runs sdk_client_test.py (the official MCP Python SDK as the client of
# sly-agent-q-mcp) and ends with its summary line.  Fetches the SDK into
# SDK-DIR first when it is not there (fetch-sdk.sh: Debian's python3-mcp).
#
#   bash tests/mcp/python/run-sdk.sh BINARY SDK-DIR [TEST-CLASS ...]
#     (TEST-CLASS: HeadlessStdio HeadlessHttp EmacsStdio EmacsHttp; all
#      when none is named; the Emacs ones need SLY_AGENT_Q_MODULE)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
binary=$(realpath "$1")
sdk=$2
shift 2
bash "$here/fetch-sdk.sh" "$sdk" || { echo "mcp python sdk client: fetching the SDK failed"; exit 1; }
SLY_AGENT_Q_MCP="$binary" "$sdk/python" "$here/sdk_client_test.py" "$@"
