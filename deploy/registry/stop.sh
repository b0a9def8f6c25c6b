#!/usr/bin/env bash
# Stop the registry started by start.sh (pid file in the data dir's parent).
#   stop.sh [--data-dir DIR]    SIGTERM, wait up to REGISTRY_STOP_TIMEOUT_S (30), then SIGKILL.
set -euo pipefail
LOG_TAG=registry
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"
DATA_DIR="$STATE_ROOT/registry/data"
while (( $# )); do
  case "$1" in
    --data-dir) DATA_DIR="$2"; shift 2 ;;
    --data-dir=*) DATA_DIR="${1#*=}"; shift ;;
    --port) shift 2 ;;            # accepted for symmetry, unused
    --port=*|--in-memory) shift ;;
    -h|--help) sed -n '2,3p' "$0"; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
stop_pidfile "$(dirname "$(realpath -m "$DATA_DIR")")/registry.pid" -runner.jar "schema registry" "${REGISTRY_STOP_TIMEOUT_S:-30}"
