#!/usr/bin/env bash
# Stop the private ClickHouse server started by start.sh (pid file in the data dir).
#   stop.sh [--data-dir DIR]    SIGTERM, wait up to CLICKHOUSE_STOP_TIMEOUT_S (60), then SIGKILL.
set -euo pipefail
LOG_TAG=clickhouse
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"
DATA_DIR="$STATE_ROOT/clickhouse/data"
while (( $# )); do
  case "$1" in
    --data-dir) DATA_DIR="$2"; shift 2 ;;
    --data-dir=*) DATA_DIR="${1#*=}"; shift ;;
    --http-port|--tcp-port) shift 2 ;;           # accepted for symmetry, unused
    --http-port=*|--tcp-port=*) shift ;;
    -h|--help) sed -n '2,3p' "$0"; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
stop_pidfile "$(realpath -m "$DATA_DIR")/clickhouse.pid" clickhouse-server "clickhouse-server" "${CLICKHOUSE_STOP_TIMEOUT_S:-60}"
