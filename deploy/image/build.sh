#!/usr/bin/env bash
# (--format=docker: the OCI format has no SHELL, which the Dockerfile's pipefail needs.)
# Builds the project's image from deploy/Dockerfile, unchanged, with podman (deploy/image/podman.sh):
#   deploy/image/build.sh [TARGET] [TAG]      TARGET worker (default) or all-in-one
# The base (node:20-bookworm-slim) comes from base.sh first. Layers are cached in podman's storage
# in the machine's cache (podman.sh), so a second build, from any clone, with the same inputs takes seconds.
# This machine reaches the registries through its own CA: it is lent to the build (a read-only
# volume and NODE_EXTRA_CA_CERTS for npm), never copied into a layer.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
repo="$(cd "$here/../.." && pwd)"
source "$here/podman.sh"
target="${1:-worker}"
tag="${2:-localhost/bioalchemy:$target}"
"$here/base.sh"
ca=/etc/ssl/certs/ca-certificates.crt
lend=()
[[ -f "$ca" ]] && lend=(--volume "$ca:/run/host-ca.crt:ro" --env NODE_EXTRA_CA_CERTS=/run/host-ca.crt)
t0=$(date +%s)
nice -n 10 podman build --pull=never --network=host --layers --format=docker \
  "${lend[@]}" \
  --build-arg "REVISION=$(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)" \
  --build-arg "VERSION=$(node -p "require('$repo/package.json').version")" \
  --target "$target" -t "$tag" -f "$repo/deploy/Dockerfile" "$repo"
echo "[image] $tag built in $(( $(date +%s) - t0 )) s, $(podman image inspect --format '{{.Size}}' "$tag") bytes"
