#!/usr/bin/env bash
# A Go tool built from the Go module proxy, cached by name and version under the machine's cache (lib.sh's CACHE_ROOT)/tools/:
#   deploy/tools/go-tool.sh helm|kubeconform|helm-unittest     prints the binary's path (last line)
#   deploy/tools/go-tool.sh compose-spec                      prints the path of compose-go's
#                                                             Compose Specification JSON schema
# Builds run under nice, one at a time (a lock), with the module cache shared (GOMODCACHE).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$repo/deploy/lib.sh"
name="${1:?usage: go-tool.sh helm|kubeconform|helm-unittest|compose-spec}"
case "$name" in
  helm) mod=helm.sh/helm/v3 ver="${HELM_VERSION:-v3.22.0}" pkg=cmd/helm bin=helm ;;
  kubeconform) mod=github.com/yannh/kubeconform ver="${KUBECONFORM_VERSION:-v0.8.0}" pkg=cmd/kubeconform bin=kubeconform ;;
  helm-unittest) mod=github.com/helm-unittest/helm-unittest ver="${HELM_UNITTEST_VERSION:-v1.1.2}" pkg=cmd/helm-unittest bin=helm-unittest ;;
  compose-spec) mod=github.com/compose-spec/compose-go/v2 ver="${COMPOSE_GO_VERSION:-v2.17.0}" ;;
  *) echo "go-tool.sh: unknown tool $name" >&2; exit 2 ;;
esac
dir="$CACHE_ROOT/tools/$name-$ver"
mkdir -p "$CACHE_ROOT/tools"
exec 9>"$CACHE_ROOT/tools/.lock"
flock 9
if [[ "$name" == compose-spec ]]; then
  if [[ ! -f "$dir/compose-spec.json" ]]; then
    # The module's zip from the proxy (not its build: a newer compose-go may want a newer Go).
    # (It reports the toolchain it wants as an error, and exits 1, with the zip downloaded.)
    zip="$( (go mod download -json "$mod@$ver" || true) | node -e 'let s="";process.stdin.on("data",(c)=>s+=c).on("end",()=>console.log(JSON.parse(s).Zip??""))')"
    [[ -f "$zip" ]] || { echo "go-tool.sh: $mod@$ver not downloaded" >&2; exit 1; }
    mkdir -p "$dir"
    python3 -c 'import sys, zipfile; open(sys.argv[3], "wb").write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))' \
      "$zip" "$mod@$ver/schema/compose-spec.json" "$dir/compose-spec.json"
  fi
  echo "$dir/compose-spec.json"
  exit 0
fi
if [[ ! -x "$dir/$bin" ]]; then
  t0=$(date +%s)
  echo "[go-tool] building $mod/$pkg@$ver" >&2
  mkdir -p "$dir"
  # Built in the module's own directory (the module cache), so its go.mod's replace lines hold
  # (helm-unittest has one, which `go install mod@version` refuses).
  src="$(go mod download -json "$mod@$ver" | node -e 'let s="";process.stdin.on("data",(c)=>s+=c).on("end",()=>console.log(JSON.parse(s).Dir??""))')"
  (cd "$src" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false nice -n 10 go build -trimpath -ldflags=-s -o "$dir/$bin" "./$pkg")
  [[ -x "$dir/$bin" ]] || { echo "go-tool.sh: $dir/$bin not built" >&2; exit 1; }
  echo "[go-tool] $name $ver built in $(( $(date +%s) - t0 )) s" >&2
fi
echo "$dir/$bin"
