#!/usr/bin/env bash
# Make this adapter's own virtualenv (.venv beside this script), as the other framework
# adapters do: the anthropic SDK's dependency tree stays out of continuity's environment,
# and continuity's out of the agent's.
set -euo pipefail
cd "$(dirname "$0")"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q -r requirements.txt
