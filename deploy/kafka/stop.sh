#!/usr/bin/env bash
# Stop the broker started by start.sh (pid file in the data dir's parent).
#   stop.sh [--data-dir DIR]    SIGTERM, wait up to KAFKA_STOP_TIMEOUT_S (60), then SIGKILL.
set -euo pipefail
LOG_TAG=kafka
source "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/lib.sh"
DATA_DIR="$STATE_ROOT/kafka/data"
while (( $# )); do
  case "$1" in
    --data-dir) DATA_DIR="$2"; shift 2 ;;
    --data-dir=*) DATA_DIR="${1#*=}"; shift ;;
    --port|--port=*) [[ "$1" == *=* ]] && shift || shift 2 ;;  # accepted for symmetry, unused
    -h|--help) sed -n '2,3p' "$0"; exit 0 ;;
    *) die "unknown argument: $1" ;;
  esac
done
RUN_DIR="$(dirname "$(realpath -m "$DATA_DIR")")"
stop_pidfile "$RUN_DIR/kafka.pid" kafka.Kafka "kafka broker" "${KAFKA_STOP_TIMEOUT_S:-60}"
