#!/usr/bin/env bash
# The dependency floors proven: install the lowest versions pyproject.toml allows for the
# libraries whose APIs or internals Switchboard relies on (uv's lowest-direct resolution of
# just those), on top of the locked environment, and run the tests that meet those libraries:
# unit, agent (langgraph, langchain, langchain-openai and the openai SDK it brings), storage
# (redis-py) and channels (the three SDKs).
# Usage: .ci/floors.sh [venv] [workers]  (default .venv, 4; the venv ends up on the floors)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-.venv}
WORKERS=${2:-4}
unset PYTHONDONTWRITEBYTECODE
FLOORED="aiogram pydantic discord.py redis slack-bolt slack-sdk langgraph langchain langchain-core langchain-openai"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$VENV/bin/python" - "$FLOORED" >"$WORK/floors.in" <<'PY'
import re
import sys
import tomllib

names = set(sys.argv[1].split())
with open("pyproject.toml", "rb") as f:
    deps = tomllib.load(f)["project"]["dependencies"]
for dep in deps:
    name = re.split(r"[<>=!~;\[ ]", dep, maxsplit=1)[0].strip()
    if name in names:
        print(dep.split(";")[0].strip())
PY
"$VENV/bin/uv" pip compile -q --resolution lowest-direct --python "$VENV/bin/python" \
  "$WORK/floors.in" -o "$WORK/floors.txt"
echo "=== dependency floors ==="
grep -iE "^($(echo "$FLOORED" | tr ' ' '|' | sed 's/\./[.-]/g'))==" "$WORK/floors.txt"
"$VENV/bin/uv" pip install -q --python "$VENV/bin/python" -r "$WORK/floors.txt"
"$VENV/bin/pytest" -q -n "$WORKERS" -m "not slow" \
  tests/unit tests/integration/agent tests/integration/storage tests/integration/channels
