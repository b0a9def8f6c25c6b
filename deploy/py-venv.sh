#!/usr/bin/env bash
# The Python client's environment, .deploy/py-venv (PyPI): the client's dependencies with its test
# extras (read from clients/python/pyproject.toml), and what test/feeder/python.test.ts (pytest) and
# test/feeder/fuzz.test.ts (schemathesis) run. The packages are installed once per machine
# (lib.sh's cached_venv); the clone's venv reads them and this clone's clients/python.
set -euo pipefail
LOG_TAG=py-venv
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

command -v python3 >/dev/null || die "python3 not found"
# The client's own requirements, so a change to them makes another venv.
mapfile -t CLIENT < <(python3 - "$REPO_ROOT/clients/python/pyproject.toml" <<'PY'
import sys, tomllib
project = tomllib.load(open(sys.argv[1], "rb"))["project"]
for r in project.get("dependencies", []) + project.get("optional-dependencies", {}).get("test", []):
    print(r)
PY
)
REQUIREMENTS=("${CLIENT[@]}" pyarrow datasets pytest schemathesis)

VENV_PATHS=("$REPO_ROOT/clients/python")
cached_venv "$STATE_ROOT/py-venv" pip_install "${REQUIREMENTS[@]}"
echo "$PY"
