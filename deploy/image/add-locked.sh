#!/usr/bin/env bash
# In the image's build stages: adds packages to <dir>/node_modules at the versions package-lock.json
# locks, from the registry as tarballs (no install scripts, no other resolution):
#   add-locked.sh DIR PACKAGE...
# For the optional dependencies the image needs while it omits the rest (CUDA and Vulkan builds of
# node-llama-cpp): this platform's build of @napi-rs/canvas (pdf.js's DOMMatrix), chdb's library.
set -euo pipefail
dir="$1"; shift
for pkg in "$@"; do
  version="$(node -p "require('/app/package-lock.json').packages['node_modules/$pkg'].version")"
  dest="$dir/node_modules/$pkg"
  mkdir -p "$dest"
  tgz="$(cd /tmp && npm pack --silent "$pkg@$version")"
  tar -xzf "/tmp/$tgz" -C "$dest" --strip-components=1
  rm -f "/tmp/$tgz"
  echo "added $pkg@$version"
done
