#!/usr/bin/env bash
# A real llama-cpp-python OpenAI-compatible server, .deploy/llama-cpp-python, for the test that runs
# the pipeline through `llm.baseUrl` against it (test/llm/llama-cpp-python.test.ts).
#   deploy/llama-cpp-python.sh          prints the venv's python last
# From PyPI's sdist (no CPU wheel is published there): pip builds llama.cpp with cmake, about 4
# minutes on 2 cores. Cached as the trainer venv is: a marker holds the hash of REQUIREMENTS and the
# Python version; a venv whose marker matches is kept, any other rebuilt from scratch (a half-done
# build has no marker).
set -euo pipefail
LOG_TAG=llama-cpp-python
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

VENV="$STATE_ROOT/llama-cpp-python"
MARKER="$VENV/.requirements.sha256"
REQUIREMENTS=('llama-cpp-python[server]==0.3.36')

command -v python3 >/dev/null || die "python3 not found"
command -v cmake >/dev/null || die "cmake not found (Debian: apt-get install cmake build-essential)"
want="$( { printf '%s\n' "${REQUIREMENTS[@]}"; python3 --version; } | sha256sum | cut -d' ' -f1)"
PY="$VENV/bin/python"
if [[ -f "$MARKER" && "$(cat "$MARKER")" == "$want" && -x "$PY" ]]; then
  log "cached: $VENV"
else
  t0=$(now_ms)
  rm -rf "$VENV"
  mkdir -p "$(dirname "$VENV")"
  python3 -m venv "$VENV" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
  log "pip install ${REQUIREMENTS[*]} (builds llama.cpp: minutes)"
  # A portable CPU build (no -march=native: the venv may be copied to another machine), on the
  # cores there are.
  CMAKE_ARGS="-DGGML_NATIVE=OFF" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    "$PY" -m pip install -q --disable-pip-version-check --no-binary llama-cpp-python "${REQUIREMENTS[@]}"
  echo "$want" >"$MARKER"
  log "installed in $(( ($(now_ms) - t0) / 1000 ))s, $(du -sh "$VENV" | cut -f1)"
fi
echo "$PY"
