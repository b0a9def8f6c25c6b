#!/usr/bin/env bash
# The Python client's environment, .deploy/py-venv (PyPI): the client in editable mode with its test
# extras, and what test/feeder/python.test.ts (pytest) and test/feeder/fuzz.test.ts (schemathesis)
# run. Safe to run again: a venv made from the same requirements is kept (a stamp names them).
set -euo pipefail
LOG_TAG=py-venv
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

VENV="$STATE_ROOT/py-venv"
REQUIREMENTS=("$REPO_ROOT/clients/python[test]" pyarrow datasets pytest schemathesis)
STAMP="$VENV/.bioalchemy-requirements"
want="$(printf '%s\n' "${REQUIREMENTS[@]#"$REPO_ROOT/"}"; sha256sum "$REPO_ROOT/clients/python/pyproject.toml" | cut -d' ' -f1)"

if [[ -x "$VENV/bin/python" && -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
  log "$VENV is up to date"
  exit 0
fi
command -v python3 >/dev/null || die "python3 not found"
python3 -m venv "$VENV" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
log "installing ${REQUIREMENTS[*]#"$REPO_ROOT/"} into $VENV"
"$VENV/bin/pip" install -q -e "${REQUIREMENTS[@]}"
printf '%s\n' "$want" >"$STAMP"
log "$VENV ready"
