#!/usr/bin/env bash
# Make this adapter's own virtualenv (.venv beside this script): LangChain's MCP adapters
# pin the MCP SDK below 2, which continuity (MCP SDK 2) cannot share an environment with.
set -euo pipefail
cd "$(dirname "$0")"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q -r requirements.txt
