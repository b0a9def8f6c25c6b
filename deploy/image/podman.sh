#!/usr/bin/env bash
# podman with this project's settings (containers.conf here) and its own storage in the machine's
# cache (below): `deploy/image/podman.sh ARGS...` runs `podman ARGS...`.
# Sourced (`source deploy/image/podman.sh`), it only exports the environment.
# Installs Debian's podman, runc and mmdebstrap when podman is missing.
set -euo pipefail
_here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
source "$_here/../lib.sh"
# The layers are the machine's cache, not the clone's: a fresh clone (CI's) rebuilds only the
# layers whose inputs changed.
_state="$CACHE_ROOT/podman"
if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! command -v mmdebstrap >/dev/null; then
  echo "[podman] installing podman, runc, mmdebstrap (Debian)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq podman runc mmdebstrap >/dev/null 2>&1 ||
    { apt-get update -qq && apt-get install -y -qq podman runc mmdebstrap >/dev/null; }
fi
mkdir -p "$_state/storage" "$_state/run"
cat >"$_state/storage.conf" <<CONF
[storage]
driver = "overlay"
graphroot = "$_state/storage"
runroot = "$_state/run"
CONF
export CONTAINERS_CONF="$_here/containers.conf"
export CONTAINERS_STORAGE_CONF="$_state/storage.conf"
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then exec podman "$@"; fi
