#!/usr/bin/env bash
# podman-compose from PyPI in a venv of its own, cached by version under the machine's cache (lib.sh's CACHE_ROOT)/tools/.
# Prints its path on the last line.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$repo/deploy/lib.sh"
V="${PODMAN_COMPOSE_VERSION:-1.6.0}"
venv="$CACHE_ROOT/tools/podman-compose-$V"
if [[ ! -x "$venv/bin/podman-compose" ]]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "podman-compose==$V"
fi
echo "$venv/bin/podman-compose"
