#!/usr/bin/env bash
# Creates the trainer venv, .deploy/trainer-venv, for the tests that run real trainers on the feeder
# (test/services/trainers.test.ts: TRL's GRPOTrainer and verl's dataset and reward hooks).
#   deploy/trainer-venv.sh          prints the venv's python last
# Everything comes from PyPI, the one registry reachable here, so torch is the default wheel with its
# CUDA libraries (about 6 GB installed); the CPU-only wheel lives on download.pytorch.org.
# Cached: the venv holds a marker with the hash of REQUIREMENTS and the Python version; a venv whose
# marker matches is kept as it is, any other is rebuilt from scratch (a half-finished install has no
# marker, so it is rebuilt too).
set -euo pipefail
LOG_TAG=trainer-venv
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

VENV="$STATE_ROOT/trainer-venv"
MARKER="$VENV/.requirements.sha256"
# torch 2.11 and transformers < 5.11 are what verl 0.9.1 supports (its vllm extra pins torch 2.11.0,
# its base pins transformers < 5.11); TRL 1.16 accepts both. The rest as resolved with them (2026-12).
# One pip call, so one resolver sees all pins.
REQUIREMENTS=(
  torch==2.11.0
  transformers==5.10.4
  trl==1.16.0
  verl==0.9.1
  tokenizers==0.22.2
  datasets==5.2.0
  accelerate==1.16.0
  pyarrow==26.0.1
  pandas==3.1.1
  pytest==9.2.0
)

command -v python3 >/dev/null || die "python3 not found"
want="$( { printf '%s\n' "${REQUIREMENTS[@]}"; python3 --version; } | sha256sum | cut -d' ' -f1)"
PY="$VENV/bin/python"
if [[ -f "$MARKER" && "$(cat "$MARKER")" == "$want" && -x "$PY" ]]; then
  log "cached: $VENV"
else
  t0=$(now_ms)
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  python3 -m venv "$VENV" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
  log "pip install ${REQUIREMENTS[*]}"
  "$PY" -m pip install -q --disable-pip-version-check "${REQUIREMENTS[@]}"
  # Editable: the venv runs the working tree's client, so it is installed once, with the venv.
  "$PY" -m pip install -q --disable-pip-version-check --no-deps -e "$REPO_ROOT/clients/python"
  echo "$want" >"$MARKER"
  log "installed in $(( ($(now_ms) - t0) / 1000 ))s, $(du -sh "$VENV" | cut -f1)"
fi
echo "$PY"
